package customdomain_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/dnsresolver"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/customdomain"
)

func txt(name, text string) libdns.Record {
	return libdns.TXT{Name: name, TTL: time.Hour, Text: text}
}

// deleteTXT deletes the TXT records at label in zone.
func deleteTXT(f *fixture, zone, label string) error {
	recs, err := f.zone.GetRecords(context.Background(), zone)
	if err != nil {
		return err
	}
	var del []libdns.Record
	for _, r := range recs {
		if rr := r.RR(); rr.Type == "TXT" && rr.Name == label {
			del = append(del, r)
		}
	}
	_, err = f.zone.DeleteRecords(context.Background(), zone, del)
	return err
}

// ownershipRecord returns the TXT record among d's instructions, and
// whether it is required.
func ownershipRecord(d customdomain.Domain) (customdomain.Record, bool) {
	for _, r := range d.Records {
		if r.Type == "TXT" {
			return r, !r.Optional
		}
	}
	return customdomain.Record{}, false
}

// takeover sets up the dangling CNAME: prj_pro had name live, removed it,
// and the customer left the routing records in place.
func takeover(t *testing.T, f *fixture, zone string, name string, routing ...libdns.Record) {
	t.Helper()
	f.set(t, zone, routing...)
	f.add(t, "prj_pro", name)
	if d := f.verify(t, "prj_pro", name); d.Status != customdomain.StatusActive {
		t.Fatalf("first holder: status %s, findings %s", d.Status, codes(d.Diagnosis.Findings))
	}
	f.clock.Advance(time.Hour)
	if err := f.engine.Remove(context.Background(), "prj_pro", name); err != nil {
		t.Fatal(err)
	}
}

// TestTakeoverNeedsOwnershipProof is the dangling-CNAME takeover: another
// project adding a name whose CNAME still points at the shared target must
// not get it served until it proves control of the name's DNS with a TXT
// record, whether it clicks Verify or waits for the background check.
func TestTakeoverNeedsOwnershipProof(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, zone, challenge string
		routing               []libdns.Record
		background            bool
	}{
		{"subdomain via Verify", "example.com.", "_petstore-challenge.shop", []libdns.Record{cname("shop", target)}, false},
		{"subdomain via background check", "example.com.", "_petstore-challenge.shop", []libdns.Record{cname("shop", target)}, true},
		{"apex via Verify", "example.org.", "_petstore-challenge", []libdns.Record{addr("@", "127.0.0.1")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			host := strings.TrimPrefix(tc.challenge+"."+strings.TrimSuffix(tc.zone, "."), "_petstore-challenge.")
			takeover(t, f, tc.zone, host, tc.routing...)

			d := f.add(t, "prj_business", host)
			rec, ok := ownershipRecord(d)
			if !ok {
				t.Fatalf("records of the new holder = %+v, want a TXT ownership record", d.Records)
			}
			if rec.Name != tc.challenge || rec.TTL != 3600 || !strings.HasPrefix(rec.Value, "petstore-verify=") || len(rec.Value) < len("petstore-verify=")+22 {
				t.Fatalf("TXT record = %+v, want name %s, a petstore-verify= token of 22+ chars, TTL 3600", rec, tc.challenge)
			}
			if len(d.Records) != 2 || !strings.Contains(d.Note, "another project") {
				t.Fatalf("records %+v, note %q: want the routing record beside the TXT and a note saying why", d.Records, d.Note)
			}

			// Only the CNAME (left by the old holder): not proven, not served.
			f.clock.Advance(time.Minute)
			if tc.background {
				if _, err := f.engine.RunDue(ctx, f.clock.Now()); err != nil {
					t.Fatal(err)
				}
				d, _ = f.engine.Get(ctx, "prj_business", host)
			} else {
				d = f.verify(t, "prj_business", host)
			}
			if d.Status != customdomain.StatusPending || codes(d.Diagnosis.Findings) != customdomain.FindingOwnershipUnproven || d.Diagnosis.NextAction != customdomain.ActionFixDNS {
				t.Fatalf("with only the routing record: status %s, findings %s, next %s; want pending, OWNERSHIP_UNPROVEN, fix_dns",
					d.Status, codes(d.Diagnosis.Findings), d.Diagnosis.NextAction)
			}
			if fix := d.Diagnosis.Findings[0].Fix; !strings.Contains(fix, rec.Value) || !strings.Contains(fix, tc.challenge) {
				t.Fatalf("fix %q does not name the record to create", fix)
			}
			if got := f.engine.Route(host); got.Kind != customdomain.RouteNone {
				t.Fatalf("Route(%s) before the proof = %+v, want none", host, got)
			}
			if f.engine.Admits(host) {
				t.Fatalf("Admits(%s) before the proof, want false (no certificate for an unproven name)", host)
			}

			// A TXT record with some other value is no proof either.
			f.set(t, tc.zone, txt(tc.challenge, "petstore-verify=someone-elses-token"))
			d = f.verify(t, "prj_business", host)
			if d.Status != customdomain.StatusPending || codes(d.Diagnosis.Findings) != customdomain.FindingOwnershipUnproven ||
				len(d.Diagnosis.Findings[0].Records) != 1 || d.Diagnosis.Findings[0].Records[0].Value != "petstore-verify=someone-elses-token" {
				t.Fatalf("with a wrong TXT: status %s, findings %+v", d.Status, d.Diagnosis.Findings)
			}

			// The right token: active and served to the new holder.
			f.set(t, tc.zone, txt(tc.challenge, rec.Value))
			f.clock.Advance(time.Minute)
			if tc.background {
				if _, err := f.engine.RunDue(ctx, f.clock.Now()); err != nil {
					t.Fatal(err)
				}
				d, _ = f.engine.Get(ctx, "prj_business", host)
			} else {
				d = f.verify(t, "prj_business", host)
			}
			if d.Status != customdomain.StatusActive || len(d.Diagnosis.Findings) != 0 {
				t.Fatalf("with the TXT published: status %s, findings %s; want active", d.Status, codes(d.Diagnosis.Findings))
			}
			if got := f.engine.Route(host); got.Kind != customdomain.RouteServe || got.ProjectID != "prj_business" {
				t.Fatalf("Route(%s) after the proof = %+v, want serve prj_business", host, got)
			}

			// The proof is needed once: deleting the TXT record afterwards,
			// as the note allows, does not turn Re-verify against the domain.
			if err := deleteTXT(f, tc.zone, tc.challenge); err != nil {
				t.Fatal(err)
			}
			d = f.verify(t, "prj_business", host)
			if d.Status != customdomain.StatusActive || len(d.Diagnosis.Findings) != 0 {
				t.Fatalf("Re-verify after deleting the TXT: status %s, findings %s; want active, none", d.Status, codes(d.Diagnosis.Findings))
			}
		})
	}
}

// TestOwnershipProofOnlyAfterAnotherProject checks who needs the TXT
// record: only a project adding a name another project held last (or one
// whose own proof is still outstanding).
func TestOwnershipProofOnlyAfterAnotherProject(t *testing.T) {
	ctx := context.Background()
	const host = "shop.example.com"
	remove := func(t *testing.T, f *fixture, project string) {
		t.Helper()
		f.clock.Advance(time.Minute)
		if err := f.engine.Remove(ctx, project, host); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name      string
		history   func(t *testing.T, f *fixture) string // returns the token to expect again, if any
		adder     string
		wantProof bool
	}{
		{"a name never held", func(*testing.T, *fixture) string { return "" }, "prj_business", false},
		{"the same project re-adds its removed name", func(t *testing.T, f *fixture) string {
			takeover(t, f, "example.com.", host, cname("shop", target))
			return ""
		}, "prj_pro", false},
		{"another project held it last", func(t *testing.T, f *fixture) string {
			takeover(t, f, "example.com.", host, cname("shop", target))
			return ""
		}, "prj_business", true},
		{"held by us long ago, by another project since", func(t *testing.T, f *fixture) string {
			takeover(t, f, "example.com.", host, cname("shop", target))
			d := f.add(t, "prj_business", host)
			rec, _ := ownershipRecord(d)
			f.set(t, "example.com.", txt("_petstore-challenge.shop", rec.Value))
			if d := f.verify(t, "prj_business", host); d.Status != customdomain.StatusActive {
				t.Fatalf("second holder: %s", d.Status)
			}
			remove(t, f, "prj_business")
			return ""
		}, "prj_pro", true},
		{"removing and re-adding does not skip an outstanding proof", func(t *testing.T, f *fixture) string {
			takeover(t, f, "example.com.", host, cname("shop", target))
			d := f.add(t, "prj_business", host)
			rec, _ := ownershipRecord(d)
			remove(t, f, "prj_business")
			return rec.Value
		}, "prj_business", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.set(t, "example.com.", cname("shop", target))
			again := tc.history(t, f)
			d := f.add(t, tc.adder, host)
			rec, proof := ownershipRecord(d)
			if proof != tc.wantProof {
				t.Fatalf("records = %+v; TXT required = %v, want %v", d.Records, proof, tc.wantProof)
			}
			if again != "" && rec.Value != again {
				t.Fatalf("token = %q, want the outstanding one %q kept, so a published record stays valid", rec.Value, again)
			}
			d = f.verify(t, tc.adder, host)
			if want := map[bool]customdomain.Status{false: customdomain.StatusActive, true: customdomain.StatusPending}[tc.wantProof]; d.Status != want {
				t.Fatalf("Verify with the CNAME only: status %s (findings %s), want %s", d.Status, codes(d.Diagnosis.Findings), want)
			}
		})
	}
}

// TestOwnershipTokensDiffer makes sure each domain gets its own token: a
// token one customer published cannot prove another's claim.
func TestOwnershipTokensDiffer(t *testing.T) {
	f := newFixture(t, nil)
	seen := map[string]bool{}
	for _, host := range []string{"shop.example.com", "www.example.com"} {
		f.set(t, "example.com.", cname(strings.TrimSuffix(host, ".example.com"), target))
		takeover(t, f, "example.com.", host, cname(strings.TrimSuffix(host, ".example.com"), target))
		rec, ok := ownershipRecord(f.add(t, "prj_business", host))
		if !ok || seen[rec.Value] {
			t.Fatalf("token for %s = %q (present %v), want a fresh one", host, rec.Value, ok)
		}
		seen[rec.Value] = true
	}
}

// Example_ownershipProof shows the takeover defence: prj_old removed its
// domain but the customer's CNAME stayed, so prj_new must also publish the
// TXT record its instructions list before the name verifies.
func Example_ownershipProof() {
	ctx := context.Background()
	zone := memzone.New()
	zone.AddZone("example.com.")
	srv, err := zone.Serve("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	engine, err := customdomain.New(customdomain.EngineConfig{
		Store: memstore.New(),
		Projects: customdomain.ProjectsFunc(func(_ context.Context, id string) (customdomain.Project, error) {
			return customdomain.Project{ID: id, Plan: petstore.PlanPro, Deployed: true}, nil
		}),
		Resolver:    dnsresolver.New(srv.Addr()),
		CNAMETarget: "edge.petstore.localhost",
	})
	if err != nil {
		panic(err)
	}
	// The CNAME prj_old's customer created, and left in place.
	if _, err := zone.AppendRecords(ctx, "example.com.", []libdns.Record{
		libdns.CNAME{Name: "shop", TTL: time.Hour, Target: "edge.petstore.localhost."},
	}); err != nil {
		panic(err)
	}
	_, _, _ = engine.Add(ctx, "prj_old", "shop.example.com")
	_, _ = engine.Verify(ctx, "prj_old", "shop.example.com")
	_ = engine.Remove(ctx, "prj_old", "shop.example.com")

	d, _, err := engine.Add(ctx, "prj_new", "shop.example.com")
	if err != nil {
		panic(err)
	}
	proof := d.Records[1]
	fmt.Println("records:", d.Records[0].Type, "and", proof.Type, proof.Name)
	d, _ = engine.Verify(ctx, "prj_new", "shop.example.com")
	fmt.Println("CNAME only:", d.Status, d.Diagnosis.Findings[0].Code)

	if _, err := zone.AppendRecords(ctx, "example.com.", []libdns.Record{
		libdns.TXT{Name: proof.Name, TTL: time.Hour, Text: proof.Value},
	}); err != nil {
		panic(err)
	}
	d, _ = engine.Verify(ctx, "prj_new", "shop.example.com")
	fmt.Println("with the TXT:", d.Status)
	// Output:
	// records: CNAME and TXT _petstore-challenge.shop
	// CNAME only: pending OWNERSHIP_UNPROVEN
	// with the TXT: active
}

// TestUnverifiedHoldCanBeClaimed: a project that adds a name it does not
// control cannot keep it from the name's owner. The owner's add is refused
// with the TXT record that claims it, the same whoever holds the name;
// once that record is published, the next add removes the other project's
// unverified entry, and the record is the owner's ownership proof. A claim
// refused for another reason (the claimant's domain cap) removes nothing,
// and a verified hold cannot be claimed.
func TestUnverifiedHoldCanBeClaimed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	f.add(t, "prj_pro", "shop.example.com") // a squatter: no DNS of its own there

	_, _, err := f.engine.Add(ctx, "prj_business", "shop.example.com")
	wantCode(t, err, petstore.CodeConflict)
	m := regexp.MustCompile(`name (_petstore-challenge\.shop) and value (petstore-verify=\S+) `).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("refusal %q names no claim record", err)
	}
	// The holder lets go and holds the name anew: the record stays the same.
	if err := f.engine.Remove(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	f.add(t, "prj_pro", "shop.example.com")
	if _, _, again := f.engine.Add(ctx, "prj_business", "shop.example.com"); again == nil || again.Error() != err.Error() {
		t.Fatalf("the claim record changed with the hold: %v, then %v", err, again)
	}

	f.set(t, "example.com.", txt(m[1], m[2]))
	capped := f.replica(t, func(c *customdomain.EngineConfig) { c.MaxDomainsPerProject = 1 })
	if _, _, err := capped.Add(ctx, "prj_business", "other.example.com"); err != nil {
		t.Fatal(err)
	}
	_, _, err = capped.Add(ctx, "prj_business", "shop.example.com")
	wantCode(t, err, petstore.CodeInvalidRequest)
	if _, err := f.engine.Get(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatalf("a claim refused at the claimant's cap removed the holder's domain: %v", err)
	}

	d := f.add(t, "prj_business", "shop.example.com")
	if rec, required := ownershipRecord(d); !required || rec.Value != m[2] {
		t.Fatalf("the claimant's records %+v: want the published claim record as its required proof", d.Records)
	}
	if _, err := f.engine.Get(ctx, "prj_pro", "shop.example.com"); petstore.ErrorCode(err) != petstore.CodeNotFound {
		t.Fatalf("the squatter's domain after the claim: %v, want not_found", err)
	}
	f.set(t, "example.com.", txt(m[1], m[2]), cname("shop", target))
	if d := f.verify(t, "prj_business", "shop.example.com"); d.Status != customdomain.StatusActive {
		t.Fatalf("the claimant's domain: %s %+v, want active", d.Status, d.Diagnosis.Findings)
	}

	// Now verified: nobody can claim it, whatever they publish.
	_, _, err = f.engine.Add(ctx, "prj_pro", "shop.example.com")
	wantCode(t, err, petstore.CodeConflict)
	if strings.Contains(err.Error(), "claim") {
		t.Fatalf("a verified domain offered for a claim: %v", err)
	}
}

// A claimant whose holder lets go of the name before the claim is taken
// adds a freed name that needs a proof (another project held it last): the
// claim record it already published is that proof, not a new token.
func TestClaimRecordProvesANameFreedMeanwhile(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	f.add(t, "prj_pro", "shop.example.com")
	_, _, err := f.engine.Add(ctx, "prj_business", "shop.example.com")
	wantCode(t, err, petstore.CodeConflict)
	m := regexp.MustCompile(`name (_petstore-challenge\.shop) and value (petstore-verify=\S+) `).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("refusal %q names no claim record", err)
	}
	f.set(t, "example.com.", txt(m[1], m[2]))
	if err := f.engine.Remove(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}

	d := f.add(t, "prj_business", "shop.example.com")
	if rec, required := ownershipRecord(d); !required || rec.Value != m[2] {
		t.Fatalf("the claimant's records %+v: want the published claim record %s as its required proof", d.Records, m[2])
	}
	f.set(t, "example.com.", txt(m[1], m[2]), cname("shop", target))
	if d := f.verify(t, "prj_business", "shop.example.com"); d.Status != customdomain.StatusActive {
		t.Fatalf("the claimant's domain: %s %+v, want active", d.Status, d.Diagnosis.Findings)
	}
}

// TestLastHolderDoesNotDependOnReplicasClocks: whether a name needs the
// ownership proof depends on which project held it last. prj_pro holds
// and removes it through a replica whose clock is 30 seconds ahead;
// seconds later prj_business holds and removes it through one whose
// clock is right. prj_pro adding it again must prove control: another
// project held it since. Before, the last holder was the entry created
// latest by the replicas' own clocks, prj_pro's, so its CNAME alone,
// left by prj_business's customer, verified the name for prj_pro.
func TestLastHolderDoesNotDependOnReplicasClocks(t *testing.T) {
	ctx := context.Background()
	const host = "shop.example.com"
	f := newFixture(t, nil)
	f.set(t, "example.com.", cname("shop", target))
	ahead := f.replica(t, func(c *customdomain.EngineConfig) {
		c.Now = func() time.Time { return f.clock.Now().Add(30 * time.Second) }
	})
	if _, _, err := ahead.Add(ctx, "prj_pro", host); err != nil {
		t.Fatal(err)
	}
	if d, err := ahead.Verify(ctx, "prj_pro", host); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("first holder: %s (%v)", d.Status, err)
	}
	if err := ahead.Remove(ctx, "prj_pro", host); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(5 * time.Second)
	rec, _ := ownershipRecord(f.add(t, "prj_business", host))
	f.set(t, "example.com.", txt("_petstore-challenge.shop", rec.Value))
	if d := f.verify(t, "prj_business", host); d.Status != customdomain.StatusActive {
		t.Fatalf("second holder: %s %s", d.Status, codes(d.Diagnosis.Findings))
	}
	f.clock.Advance(5 * time.Second)
	if err := f.engine.Remove(ctx, "prj_business", host); err != nil {
		t.Fatal(err)
	}
	d := f.add(t, "prj_pro", host)
	if _, proof := ownershipRecord(d); !proof {
		t.Fatalf("records = %+v; want the TXT record required: prj_business held the name last", d.Records)
	}
	if d := f.verify(t, "prj_pro", host); d.Status != customdomain.StatusPending {
		t.Fatalf("Verify with the CNAME left by the last holder: %s, want pending until the TXT record proves control", d.Status)
	}
}
