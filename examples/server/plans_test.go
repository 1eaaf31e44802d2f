package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/adapters/memzone"
)

// A project moved below Pro with the keys subcommand stops serving its
// custom domain on the running server, which shows it suspended and
// refuses to verify it; moved back to Pro it serves again, with no new
// verification.
func TestDowngradeSuspendsCustomDomain(t *testing.T) {
	t.Parallel()
	zone, dns := memzone.NewTestServer(t, "example.com.")
	if _, err := zone.AppendRecords(context.Background(), "example.com.", []libdns.Record{
		libdns.CNAME{Name: "shop", TTL: time.Hour, Target: "edge.petstore.test."},
	}); err != nil {
		t.Fatal(err)
	}
	db := "sqlite:" + filepath.Join(t.TempDir(), "plans.db")
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", db, "-keys", planKey + ":pro",
		"-dns-resolvers", dns.Addr(), "-cname-target", "edge.petstore.test"}, nil)
	if status, _, body := call(t, "POST", base+"/dashboard/api/domains", planKey, "", `{"name":"shop.example.com"}`); status != 201 {
		t.Fatalf("add: %d %s", status, body)
	}
	if status, _, body := call(t, "POST", base+"/dashboard/api/domains/shop.example.com/verify", planKey, "", ""); status != 200 || !strings.Contains(body, `"status":"active"`) {
		t.Fatalf("verify: %d %s", status, body)
	}
	if status, _, _ := call(t, "GET", base+"/", "", "shop.example.com", ""); status != 200 {
		t.Fatalf("live domain: %d", status)
	}

	out, err := runCmd(t, "-db", db, "keys", "list")
	id := regexp.MustCompile(`key_\S+`).FindString(out)
	if err != nil || id == "" {
		t.Fatalf("keys list: %v\n%s", err, out)
	}
	setPlan := func(plan string) {
		t.Helper()
		if out, err := runCmd(t, "-db", db, "keys", "set-plan", id, plan); err != nil {
			t.Fatalf("set-plan %s: %v\n%s", plan, err, out)
		}
	}

	setPlan("free")
	until(t, 10*time.Second, "the suspended domain answers 404", func() bool {
		status, _, _ := call(t, "GET", base+"/", "", "shop.example.com", "")
		return status == 404
	})
	status, _, body := call(t, "GET", base+"/dashboard/api/domains/shop.example.com", planKey, "", "")
	if status != 200 || !strings.Contains(body, `"status":"suspended"`) || !strings.Contains(body, `"resumesAs":"active"`) {
		t.Fatalf("suspended domain on the dashboard: %d %s", status, body)
	}
	if status, _, body := call(t, "POST", base+"/dashboard/api/domains/shop.example.com/verify", planKey, "", ""); status != 403 || !strings.Contains(body, "plan_required") {
		t.Fatalf("verify while suspended: %d %s", status, body)
	}
	if status, _, body := call(t, "PUT", base+"/dashboard/api/domains/config", planKey, "", `{"primary":"shop.example.com"}`); status != 403 || !strings.Contains(body, "plan_required") {
		t.Fatalf("config while suspended: %d %s", status, body)
	}

	setPlan("pro")
	until(t, 10*time.Second, "the resumed domain serves", func() bool {
		status, _, _ := call(t, "GET", base+"/", "", "shop.example.com", "")
		return status == 200
	})
	if status, _, body := call(t, "GET", base+"/dashboard/api/domains/shop.example.com", planKey, "", ""); status != 200 || !strings.Contains(body, `"status":"active"`) {
		t.Fatalf("resumed domain on the dashboard: %d %s", status, body)
	}
}

// planKey is the Pro key whose plan the test changes.
const planKey = "psk_plan_Rk3vQ8xLw2Nz7Yc5Tm9P"
