// Package storetest is the conformance suite for petstore store
// implementations. Every store in this module runs it, and so can a store
// written outside it, calling the suite of each optional interface it
// implements:
//
//	func TestConformance(t *testing.T) {
//		open := func(t testing.TB) petstore.Store { return mystore.New(...) }
//		storetest.Run(t, open)
//		t.Run("Idempotency", func(t *testing.T) { storetest.RunIdempotency(t, open) })
//	}
//
// open must return a new, empty store each time it is called; the suite
// runs its subtests in parallel.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
)

// Opener returns a new, empty store for one subtest and arranges its
// cleanup with t.Cleanup.
type Opener func(t testing.TB) petstore.Store

// Run runs the suite of the contract every store keeps, petstore.Store:
// pets, keys and pages.
//
// The optional store interfaces have suites of their own, which a store's
// test calls for each interface it implements: RunIdempotency
// (petstore.IdempotencyStore), RunOrders (petstore.OrderStore), RunBlobs
// (blobs.Store), RunDomains (customdomain.Store) and RunWebhooks
// (webhook.Store); docs/testing.md lists what each checks. Each fails, rather
// than skips, when the store lacks its interface: a suite that was asked
// for and did not run would look like a pass.
func Run(t *testing.T, open Opener) {
	t.Run("Pets", func(t *testing.T) { RunPets(t, open) })
	t.Run("Keys", func(t *testing.T) { RunKeys(t, open) })
	t.Run("Pages", func(t *testing.T) { RunPages(t, open) })
}

// lacks fails the test of a suite whose store does not implement the
// interface the suite checks.
func lacks(t testing.TB, iface string) {
	t.Helper()
	t.Fatalf("the store does not implement %s: implement it, or do not call this suite", iface)
}

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := petstore.ErrorCode(err); got != code {
		t.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
}

func mustCreate(t testing.TB, s petstore.PetStore, p petstore.NewPet) petstore.Pet {
	t.Helper()
	pet, err := s.CreatePet(context.Background(), p)
	if err != nil {
		t.Fatalf("CreatePet(%+v): %v", p, err)
	}
	return pet
}

// RunPets checks the petstore.PetStore contract.
func RunPets(t *testing.T, open Opener) {
	ctx := context.Background()
	t.Run("CreateThenGet", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		for _, np := range []petstore.NewPet{
			{Name: "Rex", CategoryID: 1, Status: petstore.StatusAvailable},
			{Name: "Ünïcødé 🐈 猫", CategoryID: 9223372036854775807},
			{Name: strings.Repeat("🐕", petstore.MaxNameLength), CategoryID: 3, Status: petstore.StatusSold},
			{Name: `quote ' " \ ; -- drop`, CategoryID: 4, Status: petstore.StatusPending},
		} {
			pet := mustCreate(t, s, np)
			if pet.ID <= 0 {
				t.Fatalf("id = %d, want > 0", pet.ID)
			}
			want := petstore.Pet{ID: pet.ID, Name: np.Name, CategoryID: np.CategoryID, Status: np.Status}
			if pet != want {
				t.Fatalf("created %+v, want %+v", pet, want)
			}
			got, err := s.GetPet(ctx, pet.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("GetPet = %+v, want %+v", got, want)
			}
		}
	})
	t.Run("GetMissing", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		_, err := s.GetPet(ctx, 12345)
		wantCode(t, err, petstore.CodeNotFound)
	})
	t.Run("IDsAscend", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		var last int64
		for i := range 10 {
			p := mustCreate(t, s, petstore.NewPet{Name: fmt.Sprint("p", i), CategoryID: 1})
			if p.ID <= last {
				t.Fatalf("id %d after %d: ids must ascend", p.ID, last)
			}
			last = p.ID
		}
	})
	t.Run("ListEmpty", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		pets, err := s.ListPets(ctx, petstore.PetQuery{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if pets == nil || len(pets) != 0 {
			t.Fatalf("ListPets on empty store = %#v, want empty non-nil", pets)
		}
	})
	t.Run("ListNonPositiveLimit", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreate(t, s, petstore.NewPet{Name: "Rex", CategoryID: 1})
		for _, limit := range []int{0, -1, math.MinInt} {
			pets, err := s.ListPets(ctx, petstore.PetQuery{Limit: limit})
			if err != nil || pets == nil || len(pets) != 0 {
				t.Fatalf("ListPets(Limit: %d) = %#v, %v; want empty non-nil", limit, pets, err)
			}
		}
	})
	t.Run("ListFiltersAndPages", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		statuses := []petstore.PetStatus{petstore.StatusAvailable, petstore.StatusPending, petstore.StatusSold, ""}
		var all []petstore.Pet
		for i := range 23 {
			all = append(all, mustCreate(t, s, petstore.NewPet{Name: fmt.Sprint("pet", i), CategoryID: int64(i + 1), Status: statuses[i%4]}))
		}
		for _, st := range statuses {
			var want []petstore.Pet
			for _, p := range all {
				if st == "" || p.Status == st {
					want = append(want, p)
				}
			}
			var got []petstore.Pet
			var after int64
			for {
				page, err := s.ListPets(ctx, petstore.PetQuery{Status: st, AfterID: after, Limit: 4})
				if err != nil {
					t.Fatal(err)
				}
				if len(page) > 4 {
					t.Fatalf("page of %d pets, limit 4", len(page))
				}
				got = append(got, page...)
				if len(page) < 4 {
					break
				}
				after = page[len(page)-1].ID
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("status %q: listed\n%v\nwant\n%v", st, got, want)
			}
		}
	})
	t.Run("ListIsTheCallers", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		for i := range 3 {
			mustCreate(t, s, petstore.NewPet{Name: fmt.Sprint("p", i), CategoryID: 1, Status: petstore.StatusAvailable})
		}
		// Changing a listed page, as a caller may, changes nothing the
		// store answers afterwards, whether it reads the database again
		// or keeps pages.
		for _, q := range []petstore.PetQuery{{Limit: 10}, {Status: petstore.StatusAvailable, Limit: 10}} {
			want, err := s.ListPets(ctx, q)
			if err != nil || len(want) != 3 {
				t.Fatalf("ListPets(%+v) = %v, %v", q, want, err)
			}
			want = slices.Clone(want)
			page, _ := s.ListPets(ctx, q)
			for i := range page {
				page[i].Name, page[i].Status = "changed", petstore.StatusSold
			}
			_ = append(page[:1], petstore.Pet{ID: 99, Name: "appended"})
			again, err := s.ListPets(ctx, q)
			if err != nil || fmt.Sprint(again) != fmt.Sprint(want) {
				t.Fatalf("ListPets(%+v) after the caller changed a page = %v, %v; want %v", q, again, err, want)
			}
			for _, p := range want {
				if got, err := s.GetPet(ctx, p.ID); err != nil || got != p {
					t.Fatalf("GetPet(%d) after the caller changed a page = %+v, %v; want %+v", p.ID, got, err, p)
				}
			}
		}
	})
	t.Run("ServicePagesCoverEachPetOnce", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		svc := petstore.NewService(s)
		// 20 pets with limit 5 ends on an exact-multiple page: the last
		// full page must carry no next cursor.
		for i := range 20 {
			mustCreate(t, s, petstore.NewPet{Name: fmt.Sprint("p", i), CategoryID: 1, Status: petstore.StatusPending})
		}
		seen := map[int64]bool{}
		cursor, pages := "", 0
		for {
			page, err := svc.ListPets(ctx, petstore.PetFilter{Limit: 5, Status: petstore.StatusPending, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, p := range page.Pets {
				if seen[p.ID] {
					t.Fatalf("pet %d listed twice", p.ID)
				}
				seen[p.ID] = true
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		if len(seen) != 20 || pages != 4 {
			t.Fatalf("saw %d pets on %d pages, want 20 on 4", len(seen), pages)
		}
	})
	t.Run("ConcurrentCreates", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		const n = 64
		var wg sync.WaitGroup
		ids := make([]int64, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				p, err := s.CreatePet(ctx, petstore.NewPet{Name: fmt.Sprint("c", i), CategoryID: int64(i + 1), Status: petstore.StatusAvailable})
				ids[i], errs[i] = p.ID, err
			})
		}
		wg.Wait()
		seen := map[int64]bool{}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("create %d: %v", i, err)
			}
			if seen[ids[i]] {
				t.Fatalf("id %d assigned twice", ids[i])
			}
			seen[ids[i]] = true
			p, err := s.GetPet(ctx, ids[i])
			if err != nil || p.Name != fmt.Sprint("c", i) {
				t.Fatalf("GetPet(%d) = %+v, %v", ids[i], p, err)
			}
		}
		listed := map[int64]int{}
		var after int64
		for {
			page, err := s.ListPets(ctx, petstore.PetQuery{AfterID: after, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range page {
				listed[p.ID]++
			}
			if len(page) < 10 {
				break
			}
			after = page[len(page)-1].ID
		}
		if len(listed) != n {
			t.Fatalf("listed %d distinct pets, want %d", len(listed), n)
		}
		for id, c := range listed {
			if c != 1 || !seen[id] {
				t.Fatalf("pet %d listed %d times", id, c)
			}
		}
	})
	t.Run("CanceledContext", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		pet := mustCreate(t, s, petstore.NewPet{Name: "there", CategoryID: 1})
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.CreatePet(cctx, petstore.NewPet{Name: "x", CategoryID: 1}); err == nil {
			t.Fatal("CreatePet with a canceled context succeeded")
		}
		if _, err := s.GetPet(cctx, pet.ID); err == nil {
			t.Fatal("GetPet with a canceled context succeeded")
		}
		if _, err := s.ListPets(cctx, petstore.PetQuery{Limit: 1}); err == nil {
			t.Fatal("ListPets with a canceled context succeeded")
		}
		pets, err := s.ListPets(ctx, petstore.PetQuery{Limit: 10})
		if err != nil || len(pets) != 1 || pets[0] != pet {
			t.Fatalf("after a canceled create: %v, %v; want nothing written", pets, err)
		}
	})
}

// RunKeys checks the petstore.KeyStore contract, through petstore.Keys
// where it adds behaviour (hashing, constant-time comparison).
func RunKeys(t *testing.T, open Opener) {
	ctx := context.Background()
	t.Run("CreateAuthenticate", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		keys := petstore.NewKeys(s)
		k, secret, err := keys.Create(ctx, "prj_one", petstore.PlanFree, petstore.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(secret, petstore.APIKeyPrefix) || strings.Contains(k.ID, secret) {
			t.Fatalf("secret %q, id %q", secret, k.ID)
		}
		got, err := keys.Authenticate(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != k.ID || got.ProjectID != "prj_one" || got.Plan != petstore.PlanFree || !got.CreatedAt.Equal(k.CreatedAt) {
			t.Fatalf("Authenticate = %+v, want %+v", got, k)
		}
		_, err = keys.Authenticate(ctx, secret+"x")
		wantCode(t, err, petstore.CodeUnauthorized)
		_, err = keys.Authenticate(ctx, "")
		wantCode(t, err, petstore.CodeUnauthorized)
	})
	t.Run("StoresOnlyHashes", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		secret := petstore.GenerateAPIKey()
		key := petstore.APIKey{ID: petstore.NewKeyID(), ProjectID: "p", Plan: petstore.PlanPro, CreatedAt: time.Now().UTC().Truncate(time.Second)}
		if err := s.CreateKey(ctx, key, petstore.HashAPIKey(secret)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.KeyByHash(ctx, secret); petstore.ErrorCode(err) != petstore.CodeNotFound {
			t.Fatalf("lookup by the raw secret: %v, want not_found", err)
		}
		got, stored, err := s.KeyByHash(ctx, petstore.HashAPIKey(secret))
		if err != nil || got.ID != key.ID || stored != petstore.HashAPIKey(secret) {
			t.Fatalf("KeyByHash = %+v, %q, %v", got, stored, err)
		}
		err = s.CreateKey(ctx, petstore.APIKey{ID: petstore.NewKeyID(), ProjectID: "p", Plan: petstore.PlanPro}, petstore.HashAPIKey(secret))
		wantCode(t, err, petstore.CodeConflict)
		err = s.CreateKey(ctx, key, petstore.HashAPIKey("another"))
		wantCode(t, err, petstore.CodeConflict)
	})
	t.Run("EnsureUpserts", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		keys := petstore.NewKeys(s)
		first, err := keys.Ensure(ctx, "psk_Chosen4mT9xB2wQ6kZ8rNh3", petstore.PlanFree, petstore.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		second, err := keys.Ensure(ctx, "psk_Chosen4mT9xB2wQ6kZ8rNh3", petstore.PlanEnterprise, petstore.Limits{PerMinute: 5, PerDay: 50})
		if err != nil {
			t.Fatal(err)
		}
		if second.ID != first.ID || second.ProjectID != first.ProjectID || second.Plan != petstore.PlanEnterprise {
			t.Fatalf("second Ensure = %+v, want same id/project as %+v on enterprise", second, first)
		}
		got, err := keys.Authenticate(ctx, "psk_Chosen4mT9xB2wQ6kZ8rNh3")
		if err != nil || got.EffectiveLimits() != (petstore.Limits{PerMinute: 5, PerDay: 50}) {
			t.Fatalf("Authenticate = %+v, %v", got, err)
		}
		all, err := keys.List(ctx)
		if err != nil || len(all) != 1 {
			t.Fatalf("List = %v, %v; want one key", all, err)
		}
		// An upsert of a stored hash keeps the key's id, project and
		// creation time, whatever the new key says.
		later := petstore.APIKey{ID: petstore.NewKeyID(), ProjectID: "prj_other", Plan: petstore.PlanPro, CreatedAt: first.CreatedAt.Add(time.Hour)}
		third, err := s.UpsertKey(ctx, later, petstore.HashAPIKey("psk_Chosen4mT9xB2wQ6kZ8rNh3"))
		if err != nil || third.ID != first.ID || third.ProjectID != first.ProjectID || !third.CreatedAt.Equal(first.CreatedAt) || third.Plan != petstore.PlanPro {
			t.Fatalf("UpsertKey of a stored hash = %+v, %v; want %s of %s created %v, on pro", third, err, first.ID, first.ProjectID, first.CreatedAt)
		}
		if k, _ := keys.Authenticate(ctx, "psk_Chosen4mT9xB2wQ6kZ8rNh3"); k.ID != first.ID || !k.CreatedAt.Equal(first.CreatedAt) {
			t.Fatalf("after the upsert, Authenticate = %+v; want %s created %v", k, first.ID, first.CreatedAt)
		}
	})
	t.Run("ListSetPlanRevoke", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		keys := petstore.NewKeys(s)
		var ids []string
		secrets := map[string]string{}
		for _, p := range []petstore.Plan{petstore.PlanFree, petstore.PlanPro, petstore.PlanBusiness} {
			k, secret, err := keys.Create(ctx, "", p, petstore.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, k.ID)
			secrets[k.ID] = secret
			time.Sleep(2 * time.Millisecond) // distinct UUID v7 timestamps
		}
		all, err := keys.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, k := range all {
			got = append(got, k.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(ids) {
			t.Fatalf("List ids = %v, want %v (oldest first)", got, ids)
		}
		k, err := keys.SetPlan(ctx, ids[0], petstore.PlanBusiness, petstore.Limits{})
		if err != nil || k.Plan != petstore.PlanBusiness {
			t.Fatalf("SetPlan = %+v, %v", k, err)
		}
		if k, _ := keys.Authenticate(ctx, secrets[ids[0]]); k.Plan != petstore.PlanBusiness {
			t.Fatalf("plan after SetPlan = %q", k.Plan)
		}
		// Custom limits are stored with the plan, and cleared with it.
		custom := petstore.Limits{PerMinute: 7, PerDay: 70}
		if k, err := keys.SetPlan(ctx, ids[2], petstore.PlanEnterprise, custom); err != nil || k.Limits != custom {
			t.Fatalf("SetPlan(enterprise, %+v) = %+v, %v", custom, k, err)
		}
		if k, err := keys.Authenticate(ctx, secrets[ids[2]]); err != nil || k.Plan != petstore.PlanEnterprise || k.EffectiveLimits() != custom {
			t.Fatalf("after SetPlan(enterprise, %+v): Authenticate = %+v, %v", custom, k, err)
		}
		if _, err := keys.SetPlan(ctx, ids[2], petstore.PlanBusiness, petstore.Limits{}); err != nil {
			t.Fatal(err)
		}
		if k, err := keys.Authenticate(ctx, secrets[ids[2]]); err != nil || k.Plan != petstore.PlanBusiness || k.Limits != (petstore.Limits{}) {
			t.Fatalf("after SetPlan(business): Authenticate = %+v, %v; want no custom limits", k, err)
		}
		_, err = keys.SetPlan(ctx, "key_missing", petstore.PlanPro, petstore.Limits{})
		wantCode(t, err, petstore.CodeNotFound)
		// Ids are exact: one with a trailing space (which a padding
		// collation would match) names no key.
		_, err = keys.SetPlan(ctx, ids[0]+" ", petstore.PlanPro, petstore.Limits{})
		wantCode(t, err, petstore.CodeNotFound)
		wantCode(t, keys.Revoke(ctx, ids[1]+" "), petstore.CodeNotFound)
		if err := keys.Revoke(ctx, ids[1]); err != nil {
			t.Fatal(err)
		}
		_, err = keys.Authenticate(ctx, secrets[ids[1]])
		wantCode(t, err, petstore.CodeUnauthorized)
		wantCode(t, keys.Revoke(ctx, ids[1]), petstore.CodeNotFound)
		if all, _ := keys.List(ctx); len(all) != 2 {
			t.Fatalf("%d keys after revoke, want 2", len(all))
		}
		// A key reinstated is as old as it was: back in its place.
		if _, err := keys.Unrevoke(ctx, ids[1]); err != nil {
			t.Fatal(err)
		}
		all, err = keys.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, k := range all {
			got = append(got, k.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(ids) {
			t.Fatalf("List ids after Unrevoke = %v, want %v (oldest first)", got, ids)
		}
	})
	t.Run("RevocationSticks", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		keys := petstore.NewKeys(s)
		const secret = "psk_Sticky7dQ2wN9xK4vB8mR3z"
		first, err := keys.Ensure(ctx, secret, petstore.PlanPro, petstore.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if err := keys.Revoke(ctx, first.ID); err != nil {
			t.Fatal(err)
		}
		// The configuration still lists the secret: it stays revoked.
		got, err := keys.Ensure(ctx, secret, petstore.PlanPro, petstore.Limits{})
		if !errors.Is(err, petstore.ErrKeyRevoked) || got.ID != first.ID || strings.Contains(err.Error(), secret) {
			t.Fatalf("Ensure of a revoked secret = %+v, %v; want ErrKeyRevoked naming %s, not the secret", got, err, first.ID)
		}
		_, err = keys.Authenticate(ctx, secret)
		wantCode(t, err, petstore.CodeUnauthorized)
		if all, _ := keys.List(ctx); len(all) != 0 {
			t.Fatalf("%d keys after Ensure of a revoked secret, want 0", len(all))
		}
		_, err = keys.Unrevoke(ctx, "key_missing")
		wantCode(t, err, petstore.CodeNotFound)
		back, err := keys.Unrevoke(ctx, first.ID)
		if err != nil || back.ID != first.ID || back.ProjectID != first.ProjectID || back.Plan != petstore.PlanPro {
			t.Fatalf("Unrevoke = %+v, %v; want %+v", back, err, first)
		}
		if got, err := keys.Authenticate(ctx, secret); err != nil || got.ID != first.ID {
			t.Fatalf("Authenticate after Unrevoke = %+v, %v", got, err)
		}
		_, err = keys.Unrevoke(ctx, first.ID)
		wantCode(t, err, petstore.CodeNotFound)
		if again, err := keys.Ensure(ctx, secret, petstore.PlanBusiness, petstore.Limits{}); err != nil || again.ID != first.ID {
			t.Fatalf("Ensure after Unrevoke = %+v, %v; want the same key", again, err)
		}
	})
	t.Run("ConcurrentRevokes", func(t *testing.T) {
		// Two operators (or a command run again) revoke one key at once:
		// each is told it is revoked or that no key has the id, never of a
		// conflict or a deadlock, and the key is kept as revoked once.
		t.Parallel()
		s := open(t)
		keys := petstore.NewKeys(s)
		key, secret, err := keys.Create(ctx, "", petstore.PlanPro, petstore.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		const n = 8
		errs := make(chan error, n)
		start := make(chan struct{})
		for range n {
			go func() {
				<-start
				errs <- s.DeleteKey(ctx, key.ID)
			}()
		}
		close(start)
		revoked := 0
		for range n {
			switch err := <-errs; {
			case err == nil:
				revoked++
			case petstore.ErrorCode(err) != petstore.CodeNotFound:
				t.Errorf("a concurrent DeleteKey: %v, want success or not_found", err)
			}
		}
		if revoked == 0 {
			t.Fatal("no concurrent DeleteKey succeeded")
		}
		if got, err := s.RevokedKey(ctx, petstore.HashAPIKey(secret)); err != nil || got.ID != key.ID {
			t.Fatalf("RevokedKey = %+v, %v; want %s", got, err, key.ID)
		}
		// And so do two reinstating it.
		start = make(chan struct{})
		for range n {
			go func() {
				<-start
				_, err := s.UnrevokeKey(ctx, key.ID)
				errs <- err
			}()
		}
		close(start)
		reinstated := 0
		for range n {
			switch err := <-errs; {
			case err == nil:
				reinstated++
			case petstore.ErrorCode(err) != petstore.CodeNotFound:
				t.Errorf("a concurrent UnrevokeKey: %v, want success or not_found", err)
			}
		}
		if reinstated == 0 {
			t.Fatal("no concurrent UnrevokeKey succeeded")
		}
		if got, _, err := s.KeyByHash(ctx, petstore.HashAPIKey(secret)); err != nil || got.ID != key.ID {
			t.Fatalf("KeyByHash after UnrevokeKey = %+v, %v; want %s", got, err, key.ID)
		}
		_, err = s.UnrevokeKey(ctx, key.ID)
		wantCode(t, err, petstore.CodeNotFound)
	})
	t.Run("UpsertOfARevokedHash", func(t *testing.T) {
		// Keys.Ensure looks for a revocation before it upserts; a revoke
		// landing between the two leaves the store the last word.
		t.Parallel()
		s := open(t)
		const secret = "psk_Raced4hT8nW2qL6vX9cJ5pE"
		hash := petstore.HashAPIKey(secret)
		first, err := s.UpsertKey(ctx, petstore.APIKey{ID: petstore.NewKeyID(), ProjectID: "prj_raced", Plan: petstore.PlanPro, CreatedAt: time.Unix(1700000000, 0).UTC()}, hash)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteKey(ctx, first.ID); err != nil {
			t.Fatal(err)
		}
		got, err := s.UpsertKey(ctx, petstore.APIKey{ID: petstore.NewKeyID(), ProjectID: "prj_other", Plan: petstore.PlanBusiness, CreatedAt: time.Unix(1700000100, 0).UTC()}, hash)
		if !errors.Is(err, petstore.ErrKeyRevoked) || got.ID != first.ID {
			t.Fatalf("UpsertKey of a revoked hash = %+v, %v; want the revoked key %s and ErrKeyRevoked", got, err, first.ID)
		}
		if _, _, err := s.KeyByHash(ctx, hash); petstore.ErrorCode(err) != petstore.CodeNotFound {
			t.Fatalf("KeyByHash after UpsertKey of a revoked hash: %v, want not_found", err)
		}
		if all, _ := s.ListKeys(ctx); len(all) != 0 {
			t.Fatalf("%d keys after UpsertKey of a revoked hash, want 0", len(all))
		}
	})
	t.Run("UpsertRacingARevoke", func(t *testing.T) {
		// Keys.Ensure upserts while an operator revokes the key: whichever
		// lands first, the upsert's answer tells the truth. A success
		// means the upsert came first, so the key was revoked with the
		// plan it set (and comes back with it); ErrKeyRevoked means the
		// revoke came first, and returns the key as revoked.
		t.Parallel()
		s := open(t)
		for i := range 40 {
			hash := petstore.HashAPIKey(fmt.Sprintf("psk_UpsertRace%02dq7Lm3Xv9Tb", i))
			key, err := s.UpsertKey(ctx, petstore.APIKey{ID: petstore.NewKeyID(), ProjectID: "prj_race", Plan: petstore.PlanPro,
				CreatedAt: time.Unix(1700000000, 0).UTC()}, hash)
			if err != nil {
				t.Fatal(err)
			}
			start := make(chan struct{})
			var upErr, delErr error
			var up petstore.APIKey
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				up, upErr = s.UpsertKey(ctx, petstore.APIKey{ID: petstore.NewKeyID(), ProjectID: "prj_other", Plan: petstore.PlanBusiness,
					CreatedAt: time.Unix(1700000100, 0).UTC()}, hash)
			}()
			go func() {
				defer wg.Done()
				<-start
				delErr = s.DeleteKey(ctx, key.ID)
			}()
			close(start)
			wg.Wait()
			if delErr != nil {
				t.Fatalf("DeleteKey beside UpsertKey: %v", delErr)
			}
			revoked, err := s.RevokedKey(ctx, hash)
			if err != nil {
				t.Fatalf("RevokedKey: %v", err)
			}
			switch {
			case upErr == nil:
				if up.ID != key.ID || up.Plan != petstore.PlanBusiness || revoked.Plan != petstore.PlanBusiness {
					t.Fatalf("round %d: UpsertKey = %+v, nil beside a revoke, but the key was revoked as %+v; want it revoked with the plan the upsert reported", i, up, revoked)
				}
			case errors.Is(upErr, petstore.ErrKeyRevoked):
				if up != revoked || revoked.Plan != petstore.PlanPro {
					t.Fatalf("round %d: UpsertKey = %+v, %v; revoked as %+v; want the revoked key, on its plan before", i, up, upErr, revoked)
				}
			default:
				t.Fatalf("round %d: UpsertKey beside a revoke: %v, want success or ErrKeyRevoked", i, upErr)
			}
			if _, _, err := s.KeyByHash(ctx, hash); petstore.ErrorCode(err) != petstore.CodeNotFound {
				t.Fatalf("round %d: KeyByHash after the revoke: %v, want not_found", i, err)
			}
		}
	})
	runKeyLimits(t, open)
}
