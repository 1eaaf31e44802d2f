package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
)

// openDomains opens a store and fails the test when it does not implement
// customdomain.Store.
func openDomains(t *testing.T, open Opener) customdomain.Store {
	t.Helper()
	s, ok := open(t).(customdomain.Store)
	if !ok {
		lacks(t, "customdomain.Store")
	}
	return s
}

// domainTime is a fixed instant with millisecond precision, the least a
// store must keep.
var domainTime = time.Date(2026, 11, 22, 10, 0, 0, 123_000_000, time.UTC)

func newEntry(id, project, name string) customdomain.Entry {
	t := domainTime
	return customdomain.Entry{
		ID: id, ProjectID: project, Name: name, Status: customdomain.StatusPending,
		Findings:     []customdomain.Finding{},
		Observed:     customdomain.Observed{Addresses: []string{}},
		PendingSince: t, NextCheckAt: t.Add(time.Minute),
		History:   []customdomain.Transition{{Status: customdomain.StatusPending, At: t}},
		CreatedAt: t, UpdatedAt: t,
	}
}

// entryJSON is an entry's comparable form: times in UTC, nil and empty
// slices alike.
func entryJSON(t testing.TB, e customdomain.Entry) string {
	t.Helper()
	b, err := json.Marshal(e.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustCreateDomain(t testing.TB, s customdomain.Store, e customdomain.Entry) customdomain.Entry {
	t.Helper()
	got, err := s.CreateDomain(context.Background(), e)
	if err != nil {
		t.Fatalf("CreateDomain(%s): %v", e.Name, err)
	}
	return got
}

// RunDomains checks the customdomain.Store contract; it fails when the
// store does not implement it.
func RunDomains(t *testing.T, open Opener) {
	ctx := context.Background()
	t.Run("CreateThenReadBack", func(t *testing.T) {
		t.Parallel()
		s := openDomains(t, open)
		e := newEntry("dom_1", "prj_a", "xn--bcher-kva.example")
		e.Attempts = 3
		e.Reason = `quote ' " \ ; --`
		e.Findings = []customdomain.Finding{{Code: "CNAME_MISMATCH", Message: "points to x", Fix: "change it",
			Records: []customdomain.Record{{Type: "CNAME", Name: "xn--bcher-kva.example", Value: "x.example.net"}}}}
		e.Observed = customdomain.Observed{CNAME: "x.example.net", Addresses: []string{"203.0.113.9", "2001:db8::1"}}
		e.CheckedAt = domainTime.Add(time.Second)
		e.VerifiedAt = domainTime.Add(2 * time.Second)
		e.OwnershipToken = "petstore-verify=AAAAAAAAAAAAAAAAAAAAAA"
		created := mustCreateDomain(t, s, e)
		if created.Version != 1 {
			t.Fatalf("created Version = %d, want 1", created.Version)
		}
		e.Version = 1
		got, err := s.DomainByName(ctx, e.Name)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := entryJSON(t, got), entryJSON(t, e); a != b {
			t.Fatalf("read back\n%s\nwant\n%s", a, b)
		}
		if a, b := entryJSON(t, created), entryJSON(t, e); a != b {
			t.Fatalf("CreateDomain returned\n%s\nwant\n%s", a, b)
		}
	})
	t.Run("MissingName", func(t *testing.T) {
		t.Parallel()
		s := openDomains(t, open)
		_, err := s.DomainByName(ctx, "nothing.example.com")
		wantCode(t, err, petstore.CodeNotFound)
		_, err = s.UpdateDomain(ctx, newEntry("dom_missing", "prj_a", "nothing.example.com"))
		wantCode(t, err, petstore.CodeNotFound)
	})
	t.Run("NameHeldOnce", func(t *testing.T) {
		t.Parallel()
		s := openDomains(t, open)
		mustCreateDomain(t, s, newEntry("dom_1", "prj_a", "shop.example.com"))
		for _, tc := range []struct{ id, project string }{{"dom_2", "prj_b"}, {"dom_3", "prj_a"}} {
			_, err := s.CreateDomain(ctx, newEntry(tc.id, tc.project, "shop.example.com"))
			wantCode(t, err, petstore.CodeConflict)
		}
		got, err := s.DomainByName(ctx, "shop.example.com")
		if err != nil || got.ProjectID != "prj_a" || got.ID != "dom_1" {
			t.Fatalf("holder = %s/%s (%v), want prj_a/dom_1", got.ProjectID, got.ID, err)
		}
	})
	t.Run("TwoProjectsRace", func(t *testing.T) {
		t.Parallel()
		s := openDomains(t, open)
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, errs[i] = s.CreateDomain(ctx, newEntry(fmt.Sprint("dom_", i), fmt.Sprint("prj_", i), "race.example.com"))
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch petstore.ErrorCode(err) {
			case "":
				if winner >= 0 {
					t.Fatalf("projects %d and %d both got race.example.com", winner, i)
				}
				winner = i
			case petstore.CodeConflict:
			default:
				t.Fatalf("create %d: %v, want success or conflict", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no project got race.example.com")
		}
		got, err := s.DomainByName(ctx, "race.example.com")
		if err != nil || got.ProjectID != fmt.Sprint("prj_", winner) {
			t.Fatalf("holder = %q (%v), want prj_%d", got.ProjectID, err, winner)
		}
	})
	t.Run("UpdateIsOptimistic", func(t *testing.T) {
		t.Parallel()
		s := openDomains(t, open)
		e := mustCreateDomain(t, s, newEntry("dom_1", "prj_a", "shop.example.com"))
		e.Status = customdomain.StatusActive
		e.Attempts = 2
		e.History = append(e.History, customdomain.Transition{Status: customdomain.StatusActive, At: domainTime.Add(time.Hour), Reason: "ok"})
		e.NextCheckAt = time.Time{}
		updated, err := s.UpdateDomain(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if updated.Version != 2 {
			t.Fatalf("Version after update = %d, want 2", updated.Version)
		}
		got, err := s.DomainByName(ctx, "shop.example.com")
		if err != nil {
			t.Fatal(err)
		}
		e.Version = 2
		if a, b := entryJSON(t, got), entryJSON(t, e); a != b {
			t.Fatalf("read back\n%s\nwant\n%s", a, b)
		}
		e.Version = 1 // stale
		_, err = s.UpdateDomain(ctx, e)
		wantCode(t, err, petstore.CodeConflict)
	})
	t.Run("ConcurrentUpdatesOneWins", func(t *testing.T) {
		t.Parallel()
		s := openDomains(t, open)
		e := mustCreateDomain(t, s, newEntry("dom_1", "prj_a", "shop.example.com"))
		const n = 6
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				c := e
				c.Attempts = i + 1
				_, errs[i] = s.UpdateDomain(ctx, c)
			})
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			if err == nil {
				wins++
			} else {
				wantCode(t, err, petstore.CodeConflict)
			}
		}
		if wins != 1 {
			t.Fatalf("%d concurrent updates of one version succeeded, want 1", wins)
		}
	})
	t.Run("RemovalFreesName", func(t *testing.T) {
		t.Parallel()
		s := openDomains(t, open)
		e := mustCreateDomain(t, s, newEntry("dom_1", "prj_a", "shop.example.com"))
		e.Status = customdomain.StatusRemoved
		e.NextCheckAt = time.Time{}
		e.History = append(e.History, customdomain.Transition{Status: customdomain.StatusRemoved, At: domainTime.Add(time.Hour)})
		removed, err := s.UpdateDomain(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.DomainByName(ctx, "shop.example.com")
		wantCode(t, err, petstore.CodeNotFound)
		back := removed
		back.Status = customdomain.StatusPending
		_, err = s.UpdateDomain(ctx, back)
		wantCode(t, err, petstore.CodeConflict) // a removed entry stays removed
		mustCreateDomain(t, s, newEntry("dom_2", "prj_b", "shop.example.com"))
		got, err := s.DomainByName(ctx, "shop.example.com")
		if err != nil || got.ID != "dom_2" {
			t.Fatalf("holder = %q (%v), want dom_2", got.ID, err)
		}
		old, err := s.ListDomains(ctx, customdomain.DomainQuery{ProjectID: "prj_a", Status: customdomain.StatusRemoved})
		if err != nil {
			t.Fatal(err)
		}
		if len(old) != 1 || old[0].ID != "dom_1" || len(old[0].History) != 2 {
			t.Fatalf("removed entries of prj_a = %+v, want dom_1 with its 2 transitions", old)
		}
	})
	t.Run("ReleaseFreesNameButStaysListed", func(t *testing.T) {
		// A domain released after drift lets go of its name, so another
		// project may claim it, but its project still lists it (with
		// why) until it dismisses it by writing removed.
		t.Parallel()
		s := openDomains(t, open)
		e := mustCreateDomain(t, s, newEntry("dom_1", "prj_a", "shop.example.com"))
		e.Status, e.Reason, e.NextCheckAt = customdomain.StatusReleased, "released: the record moved", time.Time{}
		released, err := s.UpdateDomain(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.DomainByName(ctx, "shop.example.com")
		wantCode(t, err, petstore.CodeNotFound)
		mustCreateDomain(t, s, newEntry("dom_2", "prj_b", "shop.example.com"))
		listed, err := s.ListDomains(ctx, customdomain.DomainQuery{ProjectID: "prj_a"})
		if err != nil || len(listed) != 1 || listed[0].Status != customdomain.StatusReleased || listed[0].Reason != e.Reason {
			t.Fatalf("prj_a lists %+v (%v), want its released entry with its reason", listed, err)
		}
		released.Status = customdomain.StatusRemoved
		if _, err := s.UpdateDomain(ctx, released); err != nil {
			t.Fatalf("dismissing the released entry: %v", err)
		}
		if got, err := s.DomainByName(ctx, "shop.example.com"); err != nil || got.ID != "dom_2" {
			t.Fatalf("holder after the dismissal = %q (%v), want dom_2 still", got.ID, err)
		}
	})
	t.Run("OwnershipTokenSurvivesUpdateAndRemoval", func(t *testing.T) {
		// The engine reads the token of a removed entry to decide whether
		// the next holder must prove ownership, and of a live one on
		// every check: it must survive every write, and be absent
		// (not some default) where none was set.
		t.Parallel()
		s := openDomains(t, open)
		for _, tc := range []struct{ name, token string }{
			{"proof.example.com", "petstore-verify=abcdefghijklmnopqrstuv"},
			{"noproof.example.com", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newEntry("dom_"+tc.name, "prj_a", tc.name)
				e.OwnershipToken = tc.token
				e = mustCreateDomain(t, s, e)
				e.Attempts = 1
				e, err := s.UpdateDomain(ctx, e)
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.DomainByName(ctx, tc.name)
				if err != nil || got.OwnershipToken != tc.token {
					t.Fatalf("after update token = %q (%v), want %q", got.OwnershipToken, err, tc.token)
				}
				e.Status = customdomain.StatusRemoved
				e.NextCheckAt = time.Time{}
				if _, err := s.UpdateDomain(ctx, e); err != nil {
					t.Fatal(err)
				}
				old, err := s.ListDomains(ctx, customdomain.DomainQuery{Name: tc.name, Status: customdomain.StatusRemoved})
				if err != nil || len(old) != 1 || old[0].OwnershipToken != tc.token {
					t.Fatalf("removed entries of %s = %+v (%v), want one with token %q", tc.name, old, err, tc.token)
				}
			})
		}
	})
	t.Run("DNSRecordsSurviveUpdateAndRemoval", func(t *testing.T) {
		// The records ConfigureDNS created are what removing or
		// releasing the domain deletes at the DNS provider, exactly (the
		// TTL and every byte of the value count): lost or altered, they
		// would leave records behind or delete the customer's.
		t.Parallel()
		s := openDomains(t, open)
		recs := []customdomain.Record{
			{Type: "CNAME", Name: "shop", Value: "edge.petstore.example", TTL: 300},
			{Type: "TXT", Name: "_petstore-challenge.shop", Value: `petstore-verify=a "b" \ ; c`, TTL: 3600},
			{Type: "A", Name: "@", Value: "192.0.2.10", TTL: 1},
		}
		e := newEntry("dom_dnsrecords", "prj_a", "shop.example.com")
		e.DNSRecords = recs[:1]
		e = mustCreateDomain(t, s, e)
		if got, err := s.DomainByName(ctx, e.Name); err != nil || !slices.Equal(got.DNSRecords, recs[:1]) {
			t.Fatalf("after create DNSRecords = %+v (%v), want %+v", got.DNSRecords, err, recs[:1])
		}
		e.DNSRecords = recs
		e, err := s.UpdateDomain(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.DomainByName(ctx, e.Name); err != nil || !slices.Equal(got.DNSRecords, recs) {
			t.Fatalf("after update DNSRecords = %+v (%v), want %+v", got.DNSRecords, err, recs)
		}
		e.Status = customdomain.StatusReleased
		e.NextCheckAt = time.Time{}
		if _, err := s.UpdateDomain(ctx, e); err != nil {
			t.Fatal(err)
		}
		old, err := s.ListDomains(ctx, customdomain.DomainQuery{Name: e.Name, Status: customdomain.StatusReleased})
		if err != nil || len(old) != 1 || !slices.Equal(old[0].DNSRecords, recs) {
			t.Fatalf("released entries of %s = %+v (%v), want one with DNSRecords %+v", e.Name, old, err, recs)
		}
		none := mustCreateDomain(t, s, newEntry("dom_nodnsrecords", "prj_a", "other.example.com"))
		if got, err := s.DomainByName(ctx, none.Name); err != nil || got.DNSRecords != nil {
			t.Fatalf("an entry without records reads DNSRecords = %#v (%v), want nil", got.DNSRecords, err)
		}
	})
	t.Run("RemovedEntryKeepsItsDNSCleanup", func(t *testing.T) {
		// A removed (or released) entry whose records at the DNS provider
		// are still to be deleted says when to try (NextCheckAt), and any
		// replica's engine finds it with DueDomains, claims each attempt
		// by writing it on (version-checked, so one replica wins) and
		// writes it back to zero once the records are gone: the removed
		// entry is written again, stays removed and never claims the
		// name back.
		t.Parallel()
		s := openDomains(t, open)
		dueIDs := func(now time.Time) string {
			t.Helper()
			due, err := s.DueDomains(ctx, now, 10)
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			for _, e := range due {
				ids = append(ids, e.ID)
			}
			return fmt.Sprint(ids)
		}
		e := newEntry("dom_cleanup", "prj_a", "shop.example.com")
		e.DNSRecords = []customdomain.Record{{Type: "CNAME", Name: "shop", Value: "edge.petstore.example", TTL: 3600}}
		e = mustCreateDomain(t, s, e)
		e.Status, e.NextCheckAt = customdomain.StatusRemoved, domainTime.Add(time.Minute)
		removed, err := s.UpdateDomain(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		next := newEntry("dom_next", "prj_b", "shop.example.com")
		next.NextCheckAt = domainTime.Add(2 * time.Minute)
		mustCreateDomain(t, s, next)
		listed, err := s.ListDomains(ctx, customdomain.DomainQuery{Status: customdomain.StatusRemoved})
		if err != nil || len(listed) != 1 || entryJSON(t, listed[0]) != entryJSON(t, removed) {
			t.Fatalf("removed entries = %+v (%v), want %+v", listed, err, removed)
		}
		if got := dueIDs(domainTime.Add(time.Minute)); got != "[dom_cleanup]" {
			t.Fatalf("due when the deletion is = %s, want [dom_cleanup]", got)
		}
		claim := removed
		claim.NextCheckAt = domainTime.Add(time.Hour)
		claimed, err := s.UpdateDomain(ctx, claim)
		if err != nil || claimed.Version != removed.Version+1 {
			t.Fatalf("writing a removed entry again = version %d, %v; want version %d", claimed.Version, err, removed.Version+1)
		}
		_, err = s.UpdateDomain(ctx, claim) // another replica, from the same read
		wantCode(t, err, petstore.CodeConflict)
		if got := dueIDs(domainTime.Add(time.Minute)); got != "[]" {
			t.Fatalf("due once the attempt is claimed = %s, want none", got)
		}
		if got := dueIDs(domainTime.Add(time.Hour)); got != "[dom_next dom_cleanup]" {
			t.Fatalf("due when the claimed attempt is over = %s, want [dom_next dom_cleanup]", got)
		}
		claimed.NextCheckAt = time.Time{}
		done, err := s.UpdateDomain(ctx, claimed)
		if err != nil {
			t.Fatal(err)
		}
		listed, err = s.ListDomains(ctx, customdomain.DomainQuery{Status: customdomain.StatusRemoved})
		if err != nil || len(listed) != 1 || entryJSON(t, listed[0]) != entryJSON(t, done) || !listed[0].NextCheckAt.IsZero() {
			t.Fatalf("removed entries = %+v (%v), want %+v with no next check", listed, err, done)
		}
		if got, err := s.DomainByName(ctx, "shop.example.com"); err != nil || got.ID != "dom_next" {
			t.Fatalf("holder = %q (%v), want dom_next still", got.ID, err)
		}
		if got := dueIDs(domainTime.Add(24 * time.Hour)); got != "[dom_next]" {
			t.Fatalf("due once the records are deleted = %s, want [dom_next] only", got)
		}
	})
	t.Run("FreedEntryKeepsItsCertRemoval", func(t *testing.T) {
		// A removed or released entry whose certificate's removal is
		// pending says so (CertRemovalPending), written with the removal
		// and again with each retry, until the engine clears it: lost,
		// the certificate and its private key would stay in storage for
		// a name the platform no longer serves.
		t.Parallel()
		s := openDomains(t, open)
		for _, st := range []customdomain.Status{customdomain.StatusRemoved, customdomain.StatusReleased} {
			name := string(st) + ".example.com"
			e := mustCreateDomain(t, s, newEntry("dom_cert_"+string(st), "prj_a", name))
			e.Status, e.CertRemovalPending, e.NextCheckAt = st, true, domainTime.Add(time.Minute)
			freed, err := s.UpdateDomain(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			listed, err := s.ListDomains(ctx, customdomain.DomainQuery{Name: name, Status: st})
			if err != nil || len(listed) != 1 || !listed[0].CertRemovalPending || entryJSON(t, listed[0]) != entryJSON(t, freed) {
				t.Fatalf("%s entries of %s = %+v (%v), want %+v, its certificate's removal pending", st, name, listed, err, freed)
			}
			due, err := s.DueDomains(ctx, domainTime.Add(time.Minute), 10)
			if err != nil || !slices.ContainsFunc(due, func(d customdomain.Entry) bool { return d.ID == freed.ID && d.CertRemovalPending }) {
				t.Fatalf("due domains = %+v (%v), want %s with its certificate's removal pending", due, err, freed.ID)
			}
			freed.CertRemovalPending, freed.NextCheckAt = false, time.Time{}
			done, err := s.UpdateDomain(ctx, freed)
			if err != nil {
				t.Fatal(err)
			}
			listed, err = s.ListDomains(ctx, customdomain.DomainQuery{Name: name, Status: st})
			if err != nil || len(listed) != 1 || listed[0].CertRemovalPending || entryJSON(t, listed[0]) != entryJSON(t, done) {
				t.Fatalf("%s entries of %s once the certificate is removed = %+v (%v), want %+v", st, name, listed, err, done)
			}
		}
	})
	t.Run("ListByNameKeepsHistoryOrder", func(t *testing.T) {
		// Engine.Add asks for a name's removed entries and takes the
		// last as the most recent holder.
		t.Parallel()
		s := openDomains(t, open)
		for i, project := range []string{"prj_a", "prj_b", "prj_c"} {
			e := newEntry(fmt.Sprint("dom_h", i), project, "shop.example.com")
			e.CreatedAt = domainTime.Add(time.Duration(i) * time.Hour)
			e = mustCreateDomain(t, s, e)
			if i == 2 {
				break // the current holder stays
			}
			e.Status = customdomain.StatusRemoved
			e.NextCheckAt = time.Time{}
			if _, err := s.UpdateDomain(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		mustCreateDomain(t, s, newEntry("dom_other", "prj_a", "other.example.com"))
		for _, tc := range []struct {
			q    customdomain.DomainQuery
			want string
		}{
			{customdomain.DomainQuery{Name: "shop.example.com", Status: customdomain.StatusRemoved}, "[prj_a prj_b]"},
			{customdomain.DomainQuery{Name: "shop.example.com"}, "[prj_c]"},
			{customdomain.DomainQuery{Name: "none.example.com", Status: customdomain.StatusRemoved}, "[]"},
		} {
			got, err := s.ListDomains(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			owners := []string{}
			for _, e := range got {
				owners = append(owners, e.ProjectID)
			}
			if fmt.Sprint(owners) != tc.want {
				t.Fatalf("ListDomains(%+v) owners = %v, want %s", tc.q, owners, tc.want)
			}
		}
	})
	t.Run("ListFiltersAndOrders", func(t *testing.T) {
		t.Parallel()
		s := openDomains(t, open)
		empty, err := s.ListDomains(ctx, customdomain.DomainQuery{ProjectID: "prj_none"})
		if err != nil || empty == nil || len(empty) != 0 {
			t.Fatalf("ListDomains on nothing = %#v, %v; want empty non-nil", empty, err)
		}
		for i, n := range []string{"c.example.com", "a.example.com", "b.example.com", "d.example.com"} {
			project := "prj_a"
			if i == 3 {
				project = "prj_b"
			}
			e := mustCreateDomain(t, s, newEntry(fmt.Sprint("dom_", i), project, n))
			if n == "b.example.com" {
				e.Status = customdomain.StatusActive
				if _, err := s.UpdateDomain(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, tc := range []struct {
			q    customdomain.DomainQuery
			want string
		}{
			{customdomain.DomainQuery{ProjectID: "prj_a"}, "[a.example.com b.example.com c.example.com]"},
			{customdomain.DomainQuery{}, "[a.example.com b.example.com c.example.com d.example.com]"},
			{customdomain.DomainQuery{Status: customdomain.StatusActive}, "[b.example.com]"},
			{customdomain.DomainQuery{ProjectID: "prj_b", Status: customdomain.StatusActive}, "[]"},
		} {
			got, err := s.ListDomains(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range got {
				names = append(names, e.Name)
			}
			if fmt.Sprint(names) != tc.want && !(tc.want == "[]" && len(names) == 0) {
				t.Fatalf("ListDomains(%+v) = %v, want %s", tc.q, names, tc.want)
			}
		}
	})
	t.Run("DueDomains", func(t *testing.T) {
		// Due is NextCheckAt alone, whatever the status: a removed or
		// released entry has one while its records at the DNS provider
		// are still to be deleted, and none (so it is never returned)
		// otherwise.
		t.Parallel()
		s := openDomains(t, open)
		at := func(m int) time.Time { return domainTime.Add(time.Duration(m) * time.Minute) }
		for i, tc := range []struct {
			next   time.Time
			status customdomain.Status
		}{
			{at(5), customdomain.StatusPending},
			{at(1), customdomain.StatusIssuing},
			{time.Time{}, customdomain.StatusActive},
			{at(3), customdomain.StatusPending},
			{at(60), customdomain.StatusPending},
			{at(2), customdomain.StatusRemoved},
			{time.Time{}, customdomain.StatusRemoved},
			{at(4), customdomain.StatusReleased},
		} {
			e := newEntry(fmt.Sprint("dom_", i), "prj_a", fmt.Sprintf("n%d.example.com", i))
			e = mustCreateDomain(t, s, e)
			e.NextCheckAt, e.Status = tc.next, tc.status
			if _, err := s.UpdateDomain(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			now   time.Time
			limit int
			want  string
		}{
			{at(10), 10, "[n1.example.com n5.example.com n3.example.com n7.example.com n0.example.com]"},
			{at(10), 2, "[n1.example.com n5.example.com]"},
			{at(3), 10, "[n1.example.com n5.example.com n3.example.com]"},
			{at(0), 10, "[]"},
		} {
			got, err := s.DueDomains(ctx, tc.now, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for _, e := range got {
				names = append(names, e.Name)
			}
			if fmt.Sprint(names) != tc.want {
				t.Fatalf("DueDomains(+%s, %d) = %v, want %s", tc.now.Sub(domainTime), tc.limit, names, tc.want)
			}
		}
	})
	t.Run("OutboxKeptWithTheChangeAndDue", func(t *testing.T) {
		// The events of a change are stored in its entry by the same
		// write (Outbox, with their IDs and the domain's JSON as it was),
		// read back byte for byte, and DueOutboxes finds the entries whose
		// events are due, whatever their status, by OutboxDueAt alone
		// (not NextCheckAt); clearing them, removed entries included, is
		// a version-checked write like any other, after which the entry
		// is never returned again.
		t.Parallel()
		s := openDomains(t, open)
		at := func(m int) time.Time { return domainTime.Add(time.Duration(m) * time.Minute) }
		dueNames := func(now time.Time, limit int) string {
			t.Helper()
			due, err := s.DueOutboxes(ctx, now, limit)
			if err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for _, e := range due {
				names = append(names, e.Name)
			}
			return fmt.Sprint(names)
		}
		event := func(id, typ string) customdomain.PendingEvent {
			return customdomain.PendingEvent{ID: id, Type: typ, CreatedAt: domainTime,
				Domain: []byte(`{"name":"x.example.com","status":"pending","history":[{"status":"pending","at":"2026-11-22T10:00:00.123Z"}]}`)}
		}
		var entries []customdomain.Entry
		for i, tc := range []struct {
			due    time.Time
			status customdomain.Status
		}{
			{at(5), customdomain.StatusActive},
			{at(1), customdomain.StatusPending},
			{time.Time{}, customdomain.StatusPending},
			{at(3), customdomain.StatusRemoved},
			{at(60), customdomain.StatusReleased},
		} {
			e := newEntry(fmt.Sprint("dom_", i), "prj_a", fmt.Sprintf("n%d.example.com", i))
			e.NextCheckAt = time.Time{}
			if !tc.due.IsZero() {
				e.Outbox, e.OutboxDueAt = []customdomain.PendingEvent{event(fmt.Sprint("evt_", i), customdomain.EventAdded)}, tc.due
			}
			created := mustCreateDomain(t, s, e)
			if e.Version = 1; entryJSON(t, created) != entryJSON(t, e) {
				t.Fatalf("created = %+v, want %+v", created, e)
			}
			created.Status = tc.status
			if !tc.due.IsZero() {
				created.Outbox = append(created.Outbox, event(fmt.Sprint("evt_", i, "b"), customdomain.EventVerified))
			}
			updated, err := s.UpdateDomain(ctx, created)
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, updated)
		}
		if got := dueNames(at(10), 10); got != "[n1.example.com n3.example.com n0.example.com]" {
			t.Fatalf("DueOutboxes(+10m) = %s, want [n1.example.com n3.example.com n0.example.com]", got)
		}
		if got := dueNames(at(10), 1); got != "[n1.example.com]" {
			t.Fatalf("DueOutboxes(+10m, 1) = %s, want [n1.example.com]", got)
		}
		if got := dueNames(at(0), 10); got != "[]" {
			t.Fatalf("DueOutboxes(+0) = %s, want none", got)
		}
		due, err := s.DueOutboxes(ctx, at(10), 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range due {
			if e.ID == "dom_3" && (entryJSON(t, e) != entryJSON(t, entries[3]) || len(e.Outbox) != 2 || string(e.Outbox[1].Domain) != string(entries[3].Outbox[1].Domain)) {
				t.Fatalf("due entry = %s, want %s", entryJSON(t, e), entryJSON(t, entries[3]))
			}
		}
		removed := entries[3]
		removed.Outbox, removed.OutboxDueAt = nil, time.Time{}
		cleared, err := s.UpdateDomain(ctx, removed)
		if err != nil || cleared.Status != customdomain.StatusRemoved {
			t.Fatalf("clearing a removed entry's outbox = %s, %v", cleared.Status, err)
		}
		_, err = s.UpdateDomain(ctx, removed) // another replica, from the same read
		wantCode(t, err, petstore.CodeConflict)
		if got := dueNames(at(120), 10); got != "[n1.example.com n0.example.com n4.example.com]" {
			t.Fatalf("DueOutboxes once n3's are cleared = %s, want [n1.example.com n0.example.com n4.example.com]", got)
		}
	})
	t.Run("Configs", func(t *testing.T) {
		t.Parallel()
		s := openDomains(t, open)
		c, err := s.DomainConfig(ctx, "prj_a")
		if err != nil {
			t.Fatal(err)
		}
		if c.ProjectID != "prj_a" || c.Primary != "" || len(c.Redirects) != 0 {
			t.Fatalf("config never stored = %+v, want empty for prj_a", c)
		}
		list, err := s.ListDomainConfigs(ctx)
		if err != nil || list == nil || len(list) != 0 {
			t.Fatalf("ListDomainConfigs on nothing = %#v, %v; want empty non-nil", list, err)
		}
		want := customdomain.Config{ProjectID: "prj_b", Primary: "shop.example.com", Redirects: []customdomain.Redirect{
			{From: "www.example.com", To: "shop.example.com", Status: 301},
			{From: "old.example.com", To: "shop.example.com", Status: 308},
		}}
		for _, c := range []customdomain.Config{want, {ProjectID: "prj_a", Primary: "a.example.com", Redirects: []customdomain.Redirect{}}, {ProjectID: "prj_c"}} {
			if err := s.PutDomainConfig(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.DomainConfig(ctx, "prj_b")
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("config = %+v, want %+v", got, want)
		}
		list, err = s.ListDomainConfigs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var projects []string
		for _, c := range list {
			projects = append(projects, c.ProjectID)
		}
		if fmt.Sprint(projects) != "[prj_a prj_b]" {
			t.Fatalf("ListDomainConfigs projects = %v, want [prj_a prj_b] (empty configs left out)", projects)
		}
		want.Redirects = want.Redirects[:1]
		want.Primary = ""
		if err := s.PutDomainConfig(ctx, want); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.DomainConfig(ctx, "prj_b"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("replaced config = %+v, want %+v", got, want)
		}
	})
	t.Run("ConfigNeedsAProject", func(t *testing.T) {
		t.Parallel()
		s := openDomains(t, open)
		err := s.PutDomainConfig(ctx, customdomain.Config{Primary: "shop.example.com", Redirects: []customdomain.Redirect{}})
		wantCode(t, err, petstore.CodeInvalidRequest)
		if list, err := s.ListDomainConfigs(ctx); err != nil || len(list) != 0 {
			t.Fatalf("ListDomainConfigs after a config without a project = %+v, %v; want none stored", list, err)
		}
	})
	runDomainLimits(t, open)
}
