// The Domains page: a thin client of the dashboard JSON API next to it.
// Every request is relative to this page, so the dashboard works under any
// mount prefix. The key lives in a variable only: reloading asks again.
"use strict";
(function () {
  const api = new URL("api/", document.baseURI);
  const pollMs = Number(document.documentElement.dataset.pollMs || 4000);
  let key = "";
  let state = { domains: [], config: { primary: "", redirects: [] } };
  let pollTimer = null;
  let removing = null;

  const $ = (sel, root) => (root || document).querySelector(sel);
  const el = (tag, attrs, ...kids) => {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") n.className = v; else if (k === "text") n.textContent = v; else n.setAttribute(k, v);
    }
    for (const k of kids) n.append(k);
    return n;
  };

  const STATUS = {
    pending: "Waiting for DNS", verified: "Verified", issuing: "Issuing certificate",
    active: "Active", misconfigured: "DNS moved away", failed: "Failed", released: "Released",
    removed: "Removed", suspended: "Suspended",
  };
  const NEXT = {
    wait: "DNS changes can take up to 48 hours to propagate, usually minutes. We keep checking; you can also click Re-verify.",
    fix_dns: "The DNS records are not right yet. Fix them as described below, then click Re-verify.",
    reverify: "Click Re-verify to check again.",
    upgrade_plan: "Custom domains need the Pro plan or above. Upgrade the project to serve this domain again; its DNS records need not change.",
  };
  // Statuses that change without the user doing anything: the page polls
  // while any domain is in one of them.
  const MOVING = new Set(["pending", "issuing", "misconfigured"]);

  async function call(method, path, body) {
    const opts = { method, headers: { Authorization: "Bearer " + key, Accept: "application/json" } };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const res = await fetch(new URL(path, api), opts);
    if (res.status === 204) return null;
    let data = null;
    try { data = await res.json(); } catch (_) { /* non-JSON body: handled below */ }
    if (!res.ok) {
      const err = new Error((data && data.message) || ("Request failed with status " + res.status));
      err.code = data && data.code;
      err.status = res.status;
      throw err;
    }
    return data;
  }

  // What to do about errors whose fix lies outside this page.
  const HINT = {
    deploy_required: "Custom domains attach to a project with at least one successful deploy: deploy the project, then add the domain again.",
    plan_required: "Upgrade the project to the Pro plan or above; suspended domains then serve again without a new verification.",
  };

  function showError(err) {
    const box = $("#alert");
    if (!err) { box.hidden = true; box.textContent = ""; return; }
    box.textContent = err.message + (err.code ? " (" + err.code + ")" : "") + (HINT[err.code] ? " " + HINT[err.code] : "");
    box.hidden = false;
  }

  const seg = (name) => "domains/" + encodeURIComponent(name);

  // The Usage panel: the key's windows against its plan, its last hour
  // minute by minute (an SVG bar chart with a table as its text
  // alternative) and its ban. Read on every refresh and every 10 s.
  let usageTimer = null;
  const fmt = (n) => Number(n).toLocaleString("en");

  async function loadUsage() {
    let u;
    try { u = await call("GET", "usage"); } catch (err) {
      if (err.status === 404) { $("#usage-none").hidden = false; $("#usage-meters").hidden = true; return; }
      throw err;
    }
    $("#usage-plan").textContent = "· " + u.plan + " plan";
    for (const w of u.windows || []) {
      const m = $("#meter-" + w.name);
      if (!m) continue;
      m.max = Math.max(w.quota, 1); m.value = w.used;
      m.high = w.quota * 0.8; m.optimum = 0;
      const at = w.resetsAt && new Date(w.resetsAt);
      const reset = at ? "; starts over at " + (w.name === "day" ? at.toLocaleString() : at.toLocaleTimeString()) : "";
      $("#meter-" + w.name + "-text").textContent = fmt(w.used) + " of " + fmt(w.quota) + " used, " + fmt(w.remaining) + " left" + reset;
    }
    const ban = $("#usage-ban");
    if (u.ban) {
      ban.textContent = "This key is banned until " + new Date(u.ban.until).toLocaleString() + ": " + u.ban.reason + ".";
      ban.hidden = false;
    } else { ban.hidden = true; ban.textContent = ""; }
    renderChart(u.minutes || []);
  }

  function renderChart(minutes) {
    const svg = $("#usage-chart");
    const peak = Math.max(1, ...minutes.map((m) => m.admitted + m.refused));
    const w = 600 / Math.max(minutes.length, 1);
    const bars = [];
    let admitted = 0, refused = 0;
    minutes.forEach((m, i) => {
      admitted += m.admitted; refused += m.refused;
      const ha = (m.admitted / peak) * 116, hr = (m.refused / peak) * 116;
      for (const [cls, h, y] of [["bar-admitted", ha, 120 - ha], ["bar-refused", hr, 120 - ha - hr]]) {
        if (h <= 0) continue;
        const r = document.createElementNS(svg.namespaceURI, "rect"); // the page's <svg>: SVG's namespace
        r.setAttribute("class", cls);
        r.setAttribute("x", String(i * w + 1)); r.setAttribute("width", String(Math.max(w - 2, 1)));
        r.setAttribute("y", String(y)); r.setAttribute("height", String(h));
        bars.push(r);
      }
    });
    svg.replaceChildren(...bars);
    $("#chart-summary").textContent = "Last hour: " + fmt(admitted) + " admitted, " + fmt(refused) + " refused; busiest minute " + fmt(peak) + ".";
    const rows = minutes.filter((m) => m.admitted || m.refused).reverse().map((m) =>
      el("tr", {}, el("td", { text: new Date(m.start).toISOString().slice(11, 16) }),
        el("td", { text: fmt(m.admitted) }), el("td", { text: fmt(m.refused) })));
    $("#usage-table tbody").replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colspan: "3", text: "No requests in the last hour." }))]));
  }

  function scheduleUsage() {
    clearTimeout(usageTimer);
    usageTimer = setTimeout(() => { loadUsage().catch(() => {}).finally(scheduleUsage); }, 10000);
  }

  async function refresh() {
    await loadUsage();
    scheduleUsage();
    const data = await call("GET", "domains");
    state.domains = data.domains || [];
    state.config = data.config || { primary: "", redirects: [] };
    render();
    renderConfig();
    schedulePoll();
  }

  function schedulePoll() {
    clearTimeout(pollTimer);
    if (state.domains.some((d) => MOVING.has(d.status))) {
      pollTimer = setTimeout(() => refresh().catch(showError), pollMs);
    }
  }

  function copyButton(text, what) {
    const b = el("button", { type: "button", class: "copy", "aria-label": "Copy " + what, text: "Copy" });
    b.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(text);
      } catch (_) {
        // Older browsers or an insecure origin: copy through a selection.
        const t = el("textarea", {}); t.value = text; document.body.append(t); t.select();
        document.execCommand("copy"); t.remove();
      }
      b.textContent = "Copied";
      setTimeout(() => { b.textContent = "Copy"; }, 1500);
    });
    return b;
  }

  // shownName gives the Unicode form of an attached name, for people.
  function shownName(name) {
    const d = state.domains.find((x) => x.name === name);
    return (d && d.unicodeName) || name;
  }

  function renderDomain(d) {
    const li = $("#domain-tpl").content.firstElementChild.cloneNode(true);
    const shown = d.unicodeName || d.name;
    li.dataset.name = d.name;
    $(".domain-name", li).textContent = shown;
    if (d.unicodeName && d.unicodeName !== d.name) {
      const a = $(".ascii", li); a.textContent = "ASCII: " + d.name; a.hidden = false;
    }
    const badge = $(".badge", li);
    badge.textContent = STATUS[d.status] || d.status;
    badge.classList.add(d.status);
    badge.setAttribute("aria-label", "Status: " + (STATUS[d.status] || d.status));

    const diag = d.diagnosis || {};
    let next = "";
    const cfg = state.config || {};
    const rd = (cfg.redirects || []).find((r) => r.from === d.name);
    if (d.status === "suspended") next = "Suspended: not served" + (d.reason ? ". " + d.reason.charAt(0).toUpperCase() + d.reason.slice(1) + "." : ". " + NEXT.upgrade_plan);
    else if (d.status === "active" && rd) next = "Live: redirects visitors to " + shownName(rd.to) + " (" + rd.status + ").";
    else if (d.status === "active" && cfg.primary === d.name) next = "Live: the primary domain of your project.";
    else if (d.status === "active") next = "Live: this domain serves your project.";
    else if (d.status === "misconfigured") next = "Still served, but " + (d.reason || "its DNS record no longer points here") +
      (d.driftedAt ? " (since " + new Date(d.driftedAt).toLocaleString() + ")" : "") + ". Restore the record below; no other action is needed.";
    else if (d.status === "released") next = "No longer served: " + (d.reason || "its DNS record stopped pointing here") + ". Remove it to dismiss this entry.";
    else if (d.status === "failed") next = "Verification failed" + (d.reason ? ": " + d.reason : "") + ". Fix the records and click Re-verify.";
    else if (d.status === "issuing") next = "DNS is verified. The certificate is being issued; this usually takes a couple of minutes.";
    else if (!d.attempts && d.status === "pending") next = "Create the DNS record below at your DNS provider, then click Verify.";
    else next = NEXT[diag.nextAction] || "Create the DNS records below, then click Verify.";
    $(".next", li).textContent = next;

    const records = d.records || diag.expected || [];
    const tbody = $(".records tbody", li);
    for (const r of records) {
      tbody.append(el("tr", {},
        el("td", {}, el("code", { text: r.type })),
        el("td", {}, el("code", { text: r.name }), copyButton(r.name, r.type + " name")),
        el("td", {}, el("code", { text: r.value }), copyButton(r.value, r.type + " value")),
        el("td", { text: (r.ttl ? String(r.ttl) : "") + (r.optional ? " (optional)" : "") })));
    }
    // An apex's A/AAAA records, for DNS providers without ALIAS.
    for (const r of d.alternatives || []) {
      tbody.append(el("tr", { class: "alternative" },
        el("td", {}, el("code", { text: r.type })),
        el("td", {}, el("code", { text: r.name }), copyButton(r.name, r.type + " name")),
        el("td", {}, el("code", { text: r.value }), copyButton(r.value, r.type + " value")),
        el("td", { text: (r.ttl ? String(r.ttl) : "") + " (instead of the ALIAS)" })));
    }
    let recordsNote = d.kind === "apex"
      ? "This is an apex domain: use an ALIAS or ANAME record (not every DNS provider supports them), or the A/AAAA records instead."
      : "Create this record at your DNS provider. The Name is the part before your registered domain.";
    // The ownership TXT record and the _acme-challenge delegation: the
    // engine's note says when each is needed.
    if (records.length > 1) {
      recordsNote = "Create the records at your DNS provider; those marked optional only when the note says so. " + (d.note || "");
    }
    $(".records-note", li).textContent = recordsNote;
    if (d.status === "active" || d.status === "released") $(".records-box", li).hidden = true;

    const findings = diag.findings || [];
    if (findings.length) {
      $(".findings-box", li).hidden = false;
      const ul = $(".findings", li);
      for (const f of findings) {
        ul.append(el("li", { "data-code": f.code }, el("span", { text: f.message }), el("span", { class: "fix", text: f.fix || "" })));
      }
    }
    const obs = diag.observed;
    if (obs && d.status !== "active") {
      const parts = [];
      if (obs.cname) parts.push("CNAME " + obs.cname);
      if (obs.addresses && obs.addresses.length) parts.push("addresses " + obs.addresses.join(", "));
      $(".observed", li).textContent = "DNS shows now: " + (parts.length ? parts.join("; ") : "no records");
    }
    const cert = d.certificate || {};
    if (cert.status && cert.status !== "none") {
      $(".cert", li).textContent = "Certificate: " + cert.status + (cert.reason ? " (" + cert.reason + ")" : "");
    }
    const hist = $(".history ol", li);
    for (const h of d.history || []) {
      const at = h.at ? new Date(h.at) : null;
      hist.append(el("li", { text: (STATUS[h.status] || h.status) + (at ? " · " + at.toLocaleString() : "") + (h.reason ? " · " + h.reason : "") }));
    }
    const verify = $(".verify", li);
    // "Verify" until DNS was checked once; "Re-verify" afterwards, as the spec names them.
    const tried = d.attempts > 0 || d.status !== "pending";
    verify.textContent = tried ? "Re-verify" : "Verify";
    verify.setAttribute("aria-label", verify.textContent + " " + shown);
    verify.addEventListener("click", () => verifyDomain(d, verify));
    // The platform manages this name's DNS: it can write the records itself.
    if (d.dnsManaged && (d.status === "pending" || d.status === "failed")) {
      const cfgDNS = $(".configure-dns", li);
      cfgDNS.hidden = false;
      cfgDNS.setAttribute("aria-label", "Configure DNS for " + shown);
      cfgDNS.addEventListener("click", () => configureDNS(d, cfgDNS));
    }
    const rm = $(".remove", li);
    rm.setAttribute("aria-label", "Remove " + shown);
    rm.addEventListener("click", () => askRemove(d));
    return li;
  }

  function render() {
    const ul = $("#domains");
    // Keep focus on the button a keyboard user pressed across re-renders.
    const focused = document.activeElement;
    const focusKey = focused && focused.closest && focused.closest(".domain")
      ? [focused.closest(".domain").dataset.name, focused.className] : null;
    ul.replaceChildren(...state.domains.map(renderDomain));
    $("#empty").hidden = state.domains.length > 0;
    if (focusKey) {
      const li = [...ul.children].find((n) => n.dataset.name === focusKey[0]);
      const b = li && li.querySelector("button." + focusKey[1].split(" ").join("."));
      if (b) b.focus();
    }
  }

  function options(select, values, selected, blank) {
    select.replaceChildren();
    if (blank) select.append(el("option", { value: "", text: blank }));
    for (const d of values) {
      const o = el("option", { value: d.name, text: d.unicodeName || d.name });
      if (d.name === selected) o.selected = true;
      select.append(o);
    }
  }

  function redirectRow(r) {
    const i = $("#redirects").children.length;
    const from = el("select", { id: "rd-from-" + i, class: "rd-from" });
    const to = el("select", { id: "rd-to-" + i, class: "rd-to" });
    const status = el("select", { id: "rd-status-" + i, class: "rd-status" });
    options(from, state.domains, r.from);
    options(to, state.domains, r.to);
    for (const s of [301, 302, 307, 308]) {
      const o = el("option", { value: String(s), text: String(s) + (s === 301 ? " (permanent)" : s === 302 ? " (temporary)" : "") });
      if (s === (r.status || 301)) o.selected = true;
      status.append(o);
    }
    const del = el("button", { type: "button", class: "secondary", text: "Delete", "aria-label": "Delete redirect " + (i + 1) });
    const li = el("li", {},
      el("div", { class: "field" }, el("label", { for: from.id, text: "From" }), from),
      el("div", { class: "field" }, el("label", { for: to.id, text: "To" }), to),
      el("div", { class: "field" }, el("label", { for: status.id, text: "Status" }), status),
      del);
    del.addEventListener("click", () => { li.remove(); });
    $("#redirects").append(li);
  }

  function renderConfig() {
    const cfg = state.config;
    options($("#primary"), state.domains, cfg.primary, "(none)");
    $("#redirects").replaceChildren();
    for (const r of cfg.redirects || []) redirectRow(r);
  }

  async function verifyDomain(d, button) {
    button.disabled = true; button.textContent = "Checking…";
    try {
      showError(null);
      await call("POST", seg(d.name) + "/verify");
      await refresh();
    } catch (err) { showError(err); button.disabled = false; button.textContent = "Re-verify"; }
  }

  // configureDNS writes the records at the platform's DNS and verifies;
  // records that stood in the way are listed, never overwritten.
  async function configureDNS(d, button) {
    button.disabled = true; button.textContent = "Writing records…";
    try {
      showError(null);
      const res = await call("POST", seg(d.name) + "/dns");
      const found = (res && res.findings) || [];
      if (found.length) {
        showError({ message: "Some records could not be written: " + found.map((f) => f.message + " " + (f.fix || "")).join(" ") });
      }
      await refresh();
    } catch (err) { showError(err); button.disabled = false; button.textContent = "Configure DNS for me"; }
  }

  function askRemove(d) {
    removing = d;
    $("#remove-name").textContent = d.unicodeName || d.name;
    const dlg = $("#remove-dialog");
    dlg.returnValue = "";
    dlg.showModal();
    $("#remove-cancel").focus();
  }

  $("#remove-dialog").addEventListener("close", async () => {
    const dlg = $("#remove-dialog");
    const d = removing; removing = null;
    if (dlg.returnValue !== "remove" || !d) return;
    try {
      showError(null);
      await call("DELETE", seg(d.name));
      await refresh();
      $("#domain-name").focus();
    } catch (err) { showError(err); }
  });

  $("#key-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    key = $("#key").value.trim();
    showError(null);
    $("#key-status").textContent = "Checking key…";
    try {
      // The usage report proves the key and is never refused for the
      // key's own budget, so a key that ran out still signs in and sees why.
      await loadUsage();
    } catch (err) {
      $("#signed-in").hidden = true;
      $("#key-status").textContent = "";
      showError(err);
      return;
    }
    $("#key-status").textContent = "Signed in.";
    $("#signed-in").hidden = false;
    try {
      await refresh();
      $("#domain-name").focus();
    } catch (err) { showError(err); }
  });

  $("#add-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const b = $("#add-button");
    b.disabled = true;
    try {
      showError(null);
      const d = await call("POST", "domains", { name: $("#domain-name").value.trim() });
      $("#domain-name").value = "";
      await refresh();
      const li = [...$("#domains").children].find((n) => n.dataset.name === d.name);
      if (li) li.querySelector(".verify").focus();
    } catch (err) { showError(err); } finally { b.disabled = false; }
  });

  $("#add-redirect").addEventListener("click", () => {
    redirectRow({ status: 301 });
    const sel = $("#redirects").lastElementChild.querySelector("select");
    if (sel) sel.focus();
  });

  $("#config-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const cfg = { primary: $("#primary").value, redirects: [] };
    for (const li of $("#redirects").children) {
      cfg.redirects.push({
        from: li.querySelector(".rd-from").value,
        to: li.querySelector(".rd-to").value,
        status: Number(li.querySelector(".rd-status").value),
      });
    }
    $("#config-status").textContent = "Saving…";
    try {
      showError(null);
      state.config = await call("PUT", "domains/config", cfg);
      render();
      renderConfig();
      $("#config-status").textContent = "Saved.";
    } catch (err) { $("#config-status").textContent = ""; showError(err); }
  });
})();
