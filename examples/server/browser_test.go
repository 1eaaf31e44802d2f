package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/internal/testenv"
)

// newBrowser starts headless Chromium for one test and returns its tab's
// context, bounded by timeout. PETSTORE_CHROMIUM names the binary;
// otherwise the usual names are looked up. It skips the test when no
// Chromium is installed, unless PETSTORE_TEST_REQUIRE_SERVICES=1.
func newBrowser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	path := os.Getenv("PETSTORE_CHROMIUM")
	if path == "" {
		path = testenv.LookPath("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
	}
	if path == "" {
		testenv.Require(t, "no Chromium found", "install Debian's chromium package (apt-get install -y chromium) or set PETSTORE_CHROMIUM to run the browser test")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		// The sandbox needs privileges that containers and root lack; the
		// browser only ever opens this test's own loopback server.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 900),
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	return tab
}

// TestDashboardInBrowser drives the Domains page in headless Chromium the
// way a customer uses it, at a phone's width, against the example server
// itself (started through run, so its wiring is what is tested) and a
// test DNS server it verifies against.
func TestDashboardInBrowser(t *testing.T) {
	const target = "edge.petstore.test"
	ctx := newBrowser(t, 45*time.Second)
	zone, dns := memzone.NewTestServer(t, "example.com.")
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", "memory", "-keys", "psk_Pro5jW8cZ1qN6bY3xF7vGu2k:pro",
		"-dns-resolvers", dns.Addr(), "-cname-target", target}, nil)

	// setCNAME creates the record a customer creates at their DNS host.
	setCNAME := func(label, value string) {
		t.Helper()
		if _, err := zone.AppendRecords(context.Background(), "example.com.", []libdns.Record{
			libdns.CNAME{Name: label, TTL: time.Minute, Target: value + "."},
		}); err != nil {
			t.Fatal(err)
		}
	}

	// Any uncaught exception in the page fails the test.
	var (
		mu         sync.Mutex
		exceptions []string
	)
	events := chromedp.Events(ctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			mu.Lock()
			exceptions = append(exceptions, fmt.Sprintf("%s %v", ev.ExceptionDetails.Text, ev.ExceptionDetails.Exception))
			mu.Unlock()
		}
	}()

	// The screenshots go to the test's temp dir, removed when it ends, or
	// to PETSTORE_SCREENSHOT_DIR to keep them.
	shots, keep := os.Getenv("PETSTORE_SCREENSHOT_DIR"), " (set PETSTORE_SCREENSHOT_DIR to keep it)"
	if shots == "" {
		shots = t.TempDir()
	} else {
		keep = ""
	}
	save := func(name string) (string, error) {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 means PNG
		if err != nil {
			return "", err
		}
		p := filepath.Join(shots, name)
		return p, os.WriteFile(p, png, 0o644)
	}
	screenshot := func(name string) {
		t.Helper()
		p, err := save(name)
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		t.Logf("screenshot: %s", p)
	}
	// step runs one part of the flow with its own deadline, so that a
	// page that never reaches the awaited state still leaves the browser
	// alive for a screenshot of what it shows instead.
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			if p, serr := save("failed.png"); serr != nil {
				t.Logf("no screenshot of the failure: %v", serr)
			} else {
				t.Logf("screenshot of the failure: %s%s", p, keep)
			}
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	card := `.domain[data-name="shop.example.com"]`

	step("open the page at 360 px",
		chromedp.EmulateViewport(360, 740),
		chromedp.Navigate(base+"/dashboard/"),
		chromedp.WaitVisible(chromedp.CSS("#key")),
	)
	step("paste the key",
		chromedp.SendKeys(chromedp.CSS("#key"), "psk_Pro5jW8cZ1qN6bY3xF7vGu2k"),
		chromedp.Click(chromedp.CSS(`#key-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#domain-name")),
	)
	step("add a domain",
		chromedp.SendKeys(chromedp.CSS("#domain-name"), "shop.example.com"),
		chromedp.Click(chromedp.CSS("#add-button")),
		chromedp.WaitVisible(chromedp.CSS(card+" .records tbody tr")),
	)

	// Read the instruction the way a customer would, from the page.
	rtype := text(card + " .records tbody tr td:nth-child(1)")
	label := text(card + " .records tbody tr td:nth-child(2) code")
	value := text(card + " .records tbody tr td:nth-child(3) code")
	if rtype != "CNAME" || label != "shop" || value != target {
		t.Fatalf("instruction on the page: %s %s %s, want CNAME shop %s", rtype, label, value, target)
	}
	if got := text(card + " .badge"); got != "Waiting for DNS" {
		t.Fatalf("badge = %q", got)
	}
	if got := text(card + " .verify"); got != "Verify" {
		t.Fatalf("button before any check = %q, want Verify", got)
	}

	step("verify before DNS is set",
		chromedp.Click(chromedp.CSS(card+" .verify")),
		chromedp.WaitVisible(chromedp.CSS(card+` .findings li[data-code="NO_RECORDS"]`)),
	)
	if got := text(card + " .verify"); got != "Re-verify" {
		t.Fatalf("button after a check = %q, want Re-verify", got)
	}
	overflow, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
	if err != nil || overflow {
		t.Fatalf("the page scrolls sideways at 360 px (%v)", err)
	}
	screenshot("pending-360.png")

	setCNAME(label, value)
	step("re-verify",
		chromedp.Click(chromedp.CSS(card+" .verify")),
		chromedp.WaitVisible(chromedp.CSS(card+" .badge.active")),
	)
	if got := text(card + " .next"); !strings.Contains(got, "Live") {
		t.Fatalf("active domain says %q", got)
	}
	if code, _, body := call(t, "GET", base+"/", "", "shop.example.com", ""); code != 200 || !strings.Contains(body, "for project <code>prj_") {
		t.Fatalf("live domain over the edge: %d %s", code, body)
	}
	if code, _, body := call(t, "GET", base+"/v1/pets", "psk_Pro5jW8cZ1qN6bY3xF7vGu2k", "shop.example.com", ""); code != 200 {
		t.Fatalf("pets API on the live domain: %d %s", code, body)
	}

	// A second domain, redirected to the first from the config form.
	www := `.domain[data-name="www.example.com"]`
	step("add www",
		chromedp.SendKeys(chromedp.CSS("#domain-name"), "www.example.com"),
		chromedp.Click(chromedp.CSS("#add-button")),
		chromedp.WaitVisible(chromedp.CSS(www+" .records tbody tr")),
	)
	setCNAME("www", target)
	step("verify www",
		chromedp.Click(chromedp.CSS(www+" .verify")),
		chromedp.WaitVisible(chromedp.CSS(www+" .badge.active")),
	)
	step("set primary and redirect",
		chromedp.SetValue(chromedp.CSS("#primary"), "shop.example.com"),
		chromedp.Click(chromedp.CSS("#add-redirect")),
		chromedp.SetValue(chromedp.CSS("#rd-from-0"), "www.example.com"),
		chromedp.SetValue(chromedp.CSS("#rd-to-0"), "shop.example.com"),
		chromedp.Click(chromedp.CSS("#save-config")),
		chromedp.Poll[chromedp.Void](`document.querySelector("#config-status").textContent === "Saved."`),
	)
	if got := text(www + " .next"); !strings.Contains(got, "redirects visitors to shop.example.com (301)") {
		t.Fatalf("redirecting domain says %q", got)
	}
	if code, hdr, _ := call(t, "GET", base+"/?utm=x", "", "www.example.com", ""); code != 301 || hdr.Get("Location") != "http://shop.example.com/?utm=x" {
		t.Fatalf("redirect set on the page: %d, Location %q", code, hdr.Get("Location"))
	}
	step("wide view", chromedp.EmulateViewport(1000, 900))
	screenshot("active.png")

	step("remove with confirmation",
		chromedp.Click(chromedp.CSS(card+" .remove")),
		chromedp.WaitVisible(chromedp.CSS("#remove-dialog")),
		chromedp.Click(chromedp.CSS("#remove-confirm")),
		chromedp.WaitNotPresent(chromedp.CSS(card)),
	)
	if code, _, body := call(t, "GET", base+"/", "", "shop.example.com", ""); code != 404 {
		t.Fatalf("removed domain over the edge: %d %s", code, body)
	}
	if code, hdr, _ := call(t, "GET", base+"/", "", "www.example.com", ""); hdr.Get("Location") != "" {
		t.Fatalf("redirect to the removed domain still answered: %d, Location %q", code, hdr.Get("Location"))
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#redirects li").length`)); err != nil || n != 0 {
		t.Fatalf("the page still shows %d redirects (%v)", n, err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(exceptions) > 0 {
		t.Fatalf("the page threw: %v", exceptions)
	}
}

// TestUsagePanelInBrowser: after real API requests that run a key out of
// its minute, the Usage panel shows the windows against the plan, the
// refused requests in the chart and its table, and the key still signs in
// although its own budget is spent. PETSTORE_SCREENSHOT_DIR keeps the
// screenshot (the README's docs/dashboard-usage.png is one).
func TestUsagePanelInBrowser(t *testing.T) {
	const key = "psk_Ent3rpr1seQ7vX2mK9wL4Xc"
	ctx := newBrowser(t, 45*time.Second)
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", "memory", "-keys", key + ":enterprise:10/1000"}, nil)
	for i := range 13 {
		want := 200
		if i >= 10 {
			want = 429
		}
		if code, _, body := call(t, "GET", base+"/v1/pets", key, "", ""); code != want {
			t.Fatalf("request %d: %d %s, want %d", i+1, code, body, want)
		}
	}
	shots := os.Getenv("PETSTORE_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(360, 740),
		chromedp.Navigate(base+"/dashboard/"),
		chromedp.WaitVisible(chromedp.CSS("#key")),
		chromedp.SendKeys(chromedp.CSS("#key"), key),
		chromedp.Click(chromedp.CSS(`#key-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#usage")),
		chromedp.Poll[chromedp.Void](`document.querySelector("#chart-summary").textContent !== ""`),
	); err != nil {
		t.Fatalf("open the Usage panel: %v", err)
	}
	read := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	if got := read("#meter-minute-text"); !strings.HasPrefix(got, "10 of 10 used, 0 left") {
		t.Errorf("minute meter says %q", got)
	}
	if got := read("#meter-day-text"); !strings.HasPrefix(got, "10 of 1,000 used, 990 left") {
		t.Errorf("day meter says %q", got)
	}
	if got := read("#chart-summary"); !strings.Contains(got, "10 admitted, 3 refused") {
		t.Errorf("chart summary says %q", got)
	}
	if got := read("#usage-plan"); !strings.Contains(strings.ToLower(got), "enterprise plan") {
		t.Errorf("plan says %q", got)
	}
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#usage-chart rect.bar-refused").length`))
	if err != nil || bars != 1 {
		t.Errorf("%d refused bars in the chart (%v), want 1", bars, err)
	}
	overflow, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
	if err != nil || overflow {
		t.Errorf("the page scrolls sideways at 360 px (%v)", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(1000, 900)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(shots, "dashboard-usage.png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// TestApexAlternativesInBrowser: an apex domain's page shows, beside the
// ALIAS, the A records to -edge-ips for DNS providers without ALIAS.
func TestApexAlternativesInBrowser(t *testing.T) {
	ctx := newBrowser(t, 45*time.Second)
	const key = "psk_Pro5jW8cZ1qN6bY3xF7vGu2k"
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", "memory", "-keys", key + ":pro",
		"-cname-target", "edge.petstore.test", "-edge-ips", "192.0.2.10"}, nil)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	card := `.domain[data-name="example.com"]`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/dashboard/"),
		chromedp.WaitVisible(chromedp.CSS("#key")),
		chromedp.SendKeys(chromedp.CSS("#key"), key),
		chromedp.Click(chromedp.CSS(`#key-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#domain-name")),
		chromedp.SendKeys(chromedp.CSS("#domain-name"), "example.com"),
		chromedp.Click(chromedp.CSS("#add-button")),
		chromedp.WaitVisible(chromedp.CSS(card+" .records tbody tr.alternative")),
	); err != nil {
		t.Fatal(err)
	}
	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(card+" .records tbody tr.alternative")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(row, "192.0.2.10") || !strings.Contains(row, "A") {
		t.Fatalf("the apex's A record row: %q, want one to 192.0.2.10", row)
	}
}
