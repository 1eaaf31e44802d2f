package customdomain_test

import (
	"context"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
)

// TestWildcardRoutesNamesBelowIt: *.shop.example.com verifies by the
// CNAME at the wildcard and serves every name one label below it that has
// no domain of its own; a name below another project's wildcard needs the
// ownership proof, since the wildcard's CNAME answers for it too.
func TestWildcardRoutesNamesBelowIt(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	f.set(t, "example.com.", cname("*.shop", target))
	d := f.add(t, "prj_pro", "*.shop.example.com")
	if d.Kind != customdomain.KindWildcard || d.Records[0].Type != "CNAME" || d.Records[0].Name != "*.shop" {
		t.Fatalf("wildcard instructions: %+v", d)
	}
	if d := f.verify(t, "prj_pro", "*.shop.example.com"); d.Status != customdomain.StatusActive {
		t.Fatalf("Verify(*.shop.example.com) = %s %+v", d.Status, d.Diagnosis.Findings)
	}
	for host, want := range map[string]customdomain.RouteKind{
		"a.shop.example.com":   customdomain.RouteServe,
		"B.Shop.Example.com.":  customdomain.RouteServe,
		"x.a.shop.example.com": customdomain.RouteNone,
		"shop.example.com":     customdomain.RouteNone,
	} {
		if r := f.engine.Route(host); r.Kind != want || want == customdomain.RouteServe && r.ProjectID != "prj_pro" {
			t.Errorf("Route(%s) = %+v, want kind %v", host, r, want)
		}
		if got := f.engine.Admits(host); got != (want == customdomain.RouteServe) {
			t.Errorf("Admits(%s) = %v", host, got)
		}
	}

	// The wildcard record answers for a.shop too.
	other := f.add(t, "prj_business", "a.shop.example.com")
	if rec, required := ownershipRecord(other); !required || rec.Name != "_petstore-challenge.a.shop" {
		t.Fatalf("a name under another project's wildcard: records %+v, want the ownership proof required", other.Records)
	}
	d, err := f.engine.Verify(ctx, "prj_business", "a.shop.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != customdomain.StatusPending || len(d.Diagnosis.Findings) != 1 || d.Diagnosis.Findings[0].Code != customdomain.FindingOwnershipUnproven {
		t.Fatalf("verified through another project's wildcard CNAME: %s %+v", d.Status, d.Diagnosis.Findings)
	}
}

// TestNameUnderARemovedWildcardNeedsProof: a removed wildcard's CNAME is
// often left in the zone, where it still answers for every name below
// it, so another project adding such a name must prove it controls the
// zone; the project that held the wildcard need not.
func TestNameUnderARemovedWildcardNeedsProof(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	activeWildcard(t, f)
	if err := f.engine.Remove(ctx, "prj_pro", "*.shop.example.com"); err != nil {
		t.Fatal(err)
	}
	// The dangling wildcard record answers for a.shop and b.shop.
	other := f.add(t, "prj_business", "a.shop.example.com")
	if _, required := ownershipRecord(other); !required {
		t.Fatalf("a name under another project's removed wildcard: records %+v, want the ownership proof required", other.Records)
	}
	if d := f.verify(t, "prj_business", "a.shop.example.com"); d.Status == customdomain.StatusActive {
		t.Fatalf("verified through another project's dangling wildcard CNAME: %s %+v", d.Status, d.Diagnosis.Findings)
	}

	own := f.add(t, "prj_pro", "b.shop.example.com")
	if _, required := ownershipRecord(own); required {
		t.Fatalf("a name under the project's own removed wildcard: records %+v, want no proof required", own.Records)
	}
	if d := f.verify(t, "prj_pro", "b.shop.example.com"); d.Status != customdomain.StatusActive {
		t.Fatalf("Verify(b.shop.example.com) = %s %+v", d.Status, d.Diagnosis.Findings)
	}
}

// TestNamesDeepUnderAWildcardNeedProof: a wildcard's DNS record answers
// for names at any depth below it (RFC 4592), though the platform serves
// it one label down only, so another project adding a name two labels
// below, or a wildcard below it, must prove it controls the zone.
func TestNamesDeepUnderAWildcardNeedProof(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	activeWildcard(t, f)
	// The wildcard record answers for the names below.
	for _, name := range []string{"x.a.shop.example.com", "*.b.shop.example.com"} {
		other := f.add(t, "prj_business", name)
		if _, required := ownershipRecord(other); !required {
			t.Fatalf("%s under another project's wildcard: records %+v, want the ownership proof required", name, other.Records)
		}
		d, err := f.engine.Verify(ctx, "prj_business", name)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status == customdomain.StatusActive {
			t.Fatalf("%s verified through another project's wildcard CNAME: %+v", name, d.Diagnosis.Findings)
		}
	}
	// The wildcard's own project needs no proof below it.
	own := f.add(t, "prj_pro", "y.a.shop.example.com")
	if _, required := ownershipRecord(own); required {
		t.Fatalf("a name under the project's own wildcard: records %+v, want no proof required", own.Records)
	}
}

// TestWildcardNeedsTheDCVZoneWithAnIssuer: a wildcard's certificate can
// be obtained only through a DCV delegation, so a platform issuing
// certificates without a DCV zone refuses wildcards instead of verifying
// one it can never serve over HTTPS.
func TestWildcardNeedsTheDCVZoneWithAnIssuer(t *testing.T) {
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	f := newFixture(t, certs)
	f.set(t, "example.com.", cname("*.shop", target))
	_, _, err := f.engine.Add(context.Background(), "prj_pro", "*.shop.example.com")
	wantCode(t, err, petstore.CodeInvalidRequest)
	if len(certs.requests) != 0 {
		t.Fatalf("certificates requested: %v", certs.requests)
	}
}

// TestCoveredByWildcard: a name below a live wildcard with no domain of
// its own is served with the wildcard's certificate; one with its own
// domain, the wildcard itself and names elsewhere are not.
func TestCoveredByWildcard(t *testing.T) {
	f := newFixture(t, nil)
	f.set(t, "example.com.", cname("*.shop", target), cname("own.shop", target))
	if f.engine.CoveredByWildcard("a.shop.example.com") {
		t.Fatal("covered before the wildcard is added")
	}
	f.add(t, "prj_pro", "*.shop.example.com")
	f.verify(t, "prj_pro", "*.shop.example.com")
	f.add(t, "prj_pro", "own.shop.example.com")
	f.verify(t, "prj_pro", "own.shop.example.com")
	for host, want := range map[string]bool{
		"a.shop.example.com":   true,
		"A.Shop.example.com.":  true,
		"own.shop.example.com": false,
		"*.shop.example.com":   false,
		"x.a.shop.example.com": false,
		"shop.example.com":     false,
	} {
		if got := f.engine.CoveredByWildcard(host); got != want {
			t.Errorf("CoveredByWildcard(%s) = %v, want %v", host, got, want)
		}
	}
}

// TestWildcardRedirectNeverSendsANameToItself: a wildcard that redirects
// to a name below it must not answer that name with a redirect to itself
// while the name has no live domain of its own (pending): browsers would
// loop until they give up.
func TestWildcardRedirectNeverSendsANameToItself(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	activeWildcard(t, f)
	f.add(t, "prj_pro", "a.shop.example.com") // pending: its CNAME is not there yet
	if _, err := f.engine.SetConfig(ctx, "prj_pro", customdomain.Config{Redirects: []customdomain.Redirect{{From: "*.shop.example.com", To: "a.shop.example.com"}}}); err != nil {
		t.Fatal(err)
	}
	if got := f.engine.Route("b.shop.example.com"); got.Kind != customdomain.RouteRedirect || got.RedirectTo != "a.shop.example.com" {
		t.Fatalf("Route(b.shop) = %+v, want a redirect to a.shop", got)
	}
	want := customdomain.RouteAnswer{Kind: customdomain.RouteServe, Name: "a.shop.example.com", ProjectID: "prj_pro"}
	if got := f.engine.Route("A.Shop.example.com"); got != want {
		t.Fatalf("Route(a.shop) = %+v, want %+v: served through the wildcard, not redirected to itself", got, want)
	}
}

// activeWildcard makes prj_pro's *.shop.example.com active.
func activeWildcard(t *testing.T, f *fixture) {
	t.Helper()
	f.set(t, "example.com.", cname("*.shop", target))
	f.add(t, "prj_pro", "*.shop.example.com")
	if d := f.verify(t, "prj_pro", "*.shop.example.com"); d.Status != customdomain.StatusActive {
		t.Fatalf("Verify(*.shop.example.com) = %s %+v", d.Status, d.Diagnosis.Findings)
	}
}

// TestWildcardRedirectsNeverLoop: two wildcards that redirect to names
// below each other must not send those names back and forth while they
// have no live domain of their own (pending): every visitor ends on a
// name that serves.
func TestWildcardRedirectsNeverLoop(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	activeWildcard(t, f)
	f.set(t, "example.com.", cname("*.store", target))
	f.add(t, "prj_pro", "*.store.example.com")
	if d := f.verify(t, "prj_pro", "*.store.example.com"); d.Status != customdomain.StatusActive {
		t.Fatalf("Verify(*.store.example.com) = %s %+v", d.Status, d.Diagnosis.Findings)
	}
	f.add(t, "prj_pro", "a.shop.example.com")  // pending
	f.add(t, "prj_pro", "b.store.example.com") // pending
	if _, err := f.engine.SetConfig(ctx, "prj_pro", customdomain.Config{Redirects: []customdomain.Redirect{
		{From: "*.shop.example.com", To: "b.store.example.com"},
		{From: "*.store.example.com", To: "a.shop.example.com"},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, start := range []string{"a.shop.example.com", "b.store.example.com", "x.shop.example.com", "y.store.example.com"} {
		host, hops := start, []string{start}
		for r := f.engine.Route(host); r.Kind != customdomain.RouteServe; r = f.engine.Route(host) {
			if r.Kind != customdomain.RouteRedirect || len(hops) > 2 {
				t.Fatalf("from %s: %v, then %+v; want a served name within one redirect", start, hops, r)
			}
			host = r.RedirectTo
			hops = append(hops, host)
		}
	}
}
