// The Webhooks panel: a project's endpoints and the answers of their last
// deliveries, through the dashboard API next to this page, with the key
// the page's form holds. It asks only once opened, so signing in spends
// no more of the key's budget than before.
"use strict";
(function () {
  const api = new URL("api/", document.baseURI);
  const $ = (sel, root) => (root || document).querySelector(sel);
  const el = (tag, attrs, ...kids) => {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") n.className = v; else if (k === "text") n.textContent = v; else n.setAttribute(k, v);
    }
    for (const k of kids) n.append(k);
    return n;
  };
  const key = () => $("#key").value.trim();

  async function call(method, path, body) {
    const opts = { method, headers: { Authorization: "Bearer " + key(), Accept: "application/json" } };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const res = await fetch(new URL(path, api), opts);
    if (res.status === 204) return null;
    let data = null;
    try { data = await res.json(); } catch (_) { /* handled below */ }
    if (!res.ok) {
      const err = new Error((data && data.message) || ("Request failed with status " + res.status));
      err.status = res.status;
      throw err;
    }
    return data;
  }

  function showError(err) {
    const box = $("#alert");
    box.textContent = err.message;
    box.hidden = false;
  }

  const when = (s) => (s ? new Date(s).toLocaleString() : "");

  // A secret is shown once, after its creation or a roll: the API never
  // returns it again.
  function showSecret(before, secret, after) {
    const box = $("#hook-secret");
    box.replaceChildren(el("span", { text: before }), el("code", { text: secret }), after ? el("span", { text: after }) : "");
    box.hidden = false;
  }

  function answerText(a) {
    if (a.error) return "no answer: " + a.error;
    return "HTTP " + a.statusCode;
  }

  function deliveriesTable(list) {
    if (!list.length) return el("p", { class: "muted", text: "No deliveries yet." });
    const rows = [];
    for (const d of list) {
      const last = d.answers.length ? d.answers[d.answers.length - 1] : null;
      const state = d.state === "pending" && d.nextAttemptAt ? "pending, next attempt " + when(d.nextAttemptAt) : d.state;
      const answers = el("ol", {});
      for (const a of d.answers) {
        answers.append(el("li", { value: String(a.attempt) },
          el("span", { text: when(a.at) + " · " + answerText(a) + " · " + a.durationMs + " ms" }),
          a.body ? el("code", { class: "answer-body", text: a.body }) : ""));
      }
      rows.push(el("tr", {},
        el("td", {}, el("code", { text: d.type }), el("div", { class: "help", text: d.eventId + " · " + when(d.createdAt) })),
        el("td", { class: "state-" + d.state, text: state }),
        el("td", { text: String(d.attempts) }),
        el("td", {}, last ? answers : el("span", { class: "muted", text: "not attempted yet" }))));
    }
    return el("div", { class: "scroll" }, el("table", {},
      el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Event" }), el("th", { scope: "col", text: "State" }),
        el("th", { scope: "col", text: "Attempts" }), el("th", { scope: "col", text: "Answers (last attempts)" }))),
      el("tbody", {}, ...rows)));
  }

  function renderHook(h) {
    const box = el("div", { class: "deliveries" });
    const details = el("details", {}, el("summary", { text: "Last deliveries" }), box);
    const load = async () => {
      try { box.replaceChildren(deliveriesTable((await call("GET", "webhooks/" + encodeURIComponent(h.id) + "/deliveries")).deliveries)); } catch (err) { showError(err); }
    };
    details.addEventListener("toggle", () => { if (details.open) load(); });
    const refresh = el("button", { type: "button", class: "secondary", text: "Refresh", "aria-label": "Refresh the deliveries of " + h.url });
    refresh.addEventListener("click", () => { details.open = true; load(); });
    const del = el("button", { type: "button", class: "danger-outline", text: "Delete", "aria-label": "Delete endpoint " + h.url });
    del.addEventListener("click", async () => {
      if (!window.confirm("Delete the endpoint " + h.url + "? Pending deliveries to it are dropped.")) return;
      try { await call("DELETE", "webhooks/" + encodeURIComponent(h.id)); await loadHooks(); } catch (err) { showError(err); }
    });
    const roll = el("button", { type: "button", class: "secondary", text: "Roll secret", "aria-label": "Roll the signing secret of " + h.url });
    roll.addEventListener("click", async () => {
      if (!window.confirm("Give " + h.url + " a new signing secret? The current one keeps signing deliveries, next to the new one, for 24 hours.")) return;
      try {
        const r = await call("POST", "webhooks/" + encodeURIComponent(h.id) + "/roll-secret");
        showSecret("New signing secret of " + r.url + ", shown only now: ", r.secret,
          r.previousSecretExpiresAt ? " The old one stays valid until " + when(r.previousSecretExpiresAt) + "." : "");
        await loadHooks();
      } catch (err) { showError(err); }
    });
    const help = h.id + " · added " + when(h.createdAt) +
      (h.previousSecretExpiresAt ? " · previous secret valid until " + when(h.previousSecretExpiresAt) : "");
    return el("li", { "data-id": h.id },
      el("div", { class: "hook-head" }, el("code", { text: h.url }), el("span", { class: "actions" }, refresh, roll, del)),
      el("p", { class: "help", text: help }),
      details);
  }

  async function loadHooks() {
    let data;
    try { data = await call("GET", "webhooks"); } catch (err) {
      if (err.status !== 404) throw err;
      $("#hook-form").hidden = true;
      $("#hooks").replaceChildren();
      $("#hooks-empty").textContent = err.message + ".";
      $("#hooks-empty").hidden = false;
      return;
    }
    $("#hook-form").hidden = false;
    $("#hooks").replaceChildren(...data.webhooks.map(renderHook));
    $("#hooks-empty").textContent = "No endpoints yet.";
    $("#hooks-empty").hidden = data.webhooks.length > 0;
  }

  $("#hooks-details").addEventListener("toggle", () => { if ($("#hooks-details").open) loadHooks().catch(showError); });
  $("#key-form").addEventListener("submit", () => {
    $("#hook-secret").hidden = true;
    if ($("#hooks-details").open) loadHooks().catch(showError);
  });

  $("#hook-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const b = $("#hook-add");
    b.disabled = true;
    try {
      const h = await call("POST", "webhooks", { url: $("#hook-url").value.trim() });
      $("#hook-url").value = "";
      showSecret("Signing secret of " + h.url + ", shown only now: ", h.secret, "");
      await loadHooks();
    } catch (err) { showError(err); } finally { b.disabled = false; }
  });
})();
