package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/acme/blobs"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/webhook"
)

// ofBytes returns prefix followed by unit repeated, n bytes long in all,
// padded with 'x' where unit, a character of several bytes, does not fit.
func ofBytes(prefix string, n int, unit string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for b.Len()+len(unit) <= n {
		b.WriteString(unit)
	}
	for b.Len() < n {
		b.WriteByte('x')
	}
	return b.String()
}

// runKeyLimits checks petstore.MaxKeyIDBytes, petstore.MaxProjectIDBytes and
// petstore.MaxPlanBytes on a KeyStore.
func runKeyLimits(t *testing.T, open Opener) {
	ctx := context.Background()
	t.Run("LimitsAtTheEdge", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		for i, unit := range []string{"a", "é"} {
			k := petstore.APIKey{
				ID:        ofBytes("key_", petstore.MaxKeyIDBytes, unit),
				ProjectID: ofBytes("prj_", petstore.MaxProjectIDBytes, unit),
				Plan:      petstore.PlanPro,
				CreatedAt: time.Now().UTC().Truncate(time.Second),
			}
			hash := petstore.HashAPIKey(fmt.Sprint("psk_limit", i))
			if err := s.CreateKey(ctx, k, hash); err != nil {
				t.Fatalf("CreateKey with a %d-byte id and a %d-byte project: %v", len(k.ID), len(k.ProjectID), err)
			}
			if got, _, err := s.KeyByHash(ctx, hash); err != nil || got != k {
				t.Fatalf("KeyByHash = %+v, %v; want %+v", got, err, k)
			}
			k.Plan = petstore.PlanBusiness
			if got, err := s.SetKeyPlan(ctx, k.ID, k.Plan, petstore.Limits{}); err != nil || got != k {
				t.Fatalf("SetKeyPlan = %+v, %v; want %+v", got, err, k)
			}
			k.Plan = petstore.Plan(ofBytes("p", petstore.MaxPlanBytes, unit)) // a plan of a later version
			if got, err := s.SetKeyPlan(ctx, k.ID, k.Plan, petstore.Limits{}); err != nil || got != k {
				t.Fatalf("SetKeyPlan with a %d-byte plan = %+v, %v; want %+v", len(k.Plan), got, err, k)
			}
			if err := s.DeleteKey(ctx, k.ID); err != nil {
				t.Fatalf("DeleteKey: %v", err)
			}
			if got, err := s.RevokedKey(ctx, hash); err != nil || got != k {
				t.Fatalf("RevokedKey = %+v, %v; want %+v", got, err, k)
			}
			if got, err := s.UnrevokeKey(ctx, k.ID); err != nil || got != k {
				t.Fatalf("UnrevokeKey = %+v, %v; want %+v", got, err, k)
			}
			up := k
			up.ID, up.ProjectID = ofBytes("key_up", petstore.MaxKeyIDBytes, unit), ofBytes("prj_up", petstore.MaxProjectIDBytes, unit)
			uphash := petstore.HashAPIKey(fmt.Sprint("psk_upsert", i))
			if got, err := s.UpsertKey(ctx, up, uphash); err != nil || got != up {
				t.Fatalf("UpsertKey = %+v, %v; want %+v", got, err, up)
			}
		}
	})
	t.Run("LimitsPast", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ok := func() petstore.APIKey {
			return petstore.APIKey{ID: petstore.NewKeyID(), ProjectID: petstore.NewProjectID(), Plan: petstore.PlanPro,
				CreatedAt: time.Now().UTC().Truncate(time.Second)}
		}
		var longIDs []string // and ids not storable
		var refused []petstore.APIKey
		for _, unit := range []string{"a", "é"} {
			longID := ok()
			longID.ID = ofBytes("key_", petstore.MaxKeyIDBytes+1, unit)
			longIDs = append(longIDs, longID.ID)
			longProject := ok()
			longProject.ProjectID = ofBytes("prj_", petstore.MaxProjectIDBytes+1, unit)
			longPlan := ok()
			longPlan.Plan = petstore.Plan(ofBytes("p", petstore.MaxPlanBytes+1, unit))
			refused = append(refused, longID, longProject, longPlan)
		}
		for _, bad := range []string{"\xff", "\x00"} {
			k := ok()
			k.ID += bad
			longIDs = append(longIDs, k.ID)
			refused = append(refused, k)
			k = ok()
			k.ProjectID += bad
			refused = append(refused, k)
			k = ok()
			k.Plan += petstore.Plan(bad)
			refused = append(refused, k)
		}
		for i, k := range refused {
			hash := petstore.HashAPIKey(fmt.Sprint("psk_past", i))
			if err := s.CreateKey(ctx, k, hash); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("CreateKey with id %q, project %q and plan %q: %v, want invalid_request", clip(k.ID), clip(k.ProjectID), clip(string(k.Plan)), err)
			}
			if _, err := s.UpsertKey(ctx, k, hash); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("UpsertKey with id %q, project %q and plan %q: %v, want invalid_request", clip(k.ID), clip(k.ProjectID), clip(string(k.Plan)), err)
			}
			_, _, err := s.KeyByHash(ctx, hash)
			wantCode(t, err, petstore.CodeNotFound)
		}
		if all, err := s.ListKeys(ctx); err != nil || len(all) != 0 {
			t.Fatalf("ListKeys = %+v, %v; want none stored", all, err)
		}
		// A plan past its limit, or not storable, is refused on a stored
		// key too, which keeps its plan.
		kept := ok()
		if err := s.CreateKey(ctx, kept, petstore.HashAPIKey("psk_kept")); err != nil {
			t.Fatal(err)
		}
		for _, plan := range []string{ofBytes("p", petstore.MaxPlanBytes+1, "a"), ofBytes("p", petstore.MaxPlanBytes+1, "é"), "pro\xff", "pro\x00"} {
			// The input is checked first: of an unknown key too.
			for _, id := range append([]string{kept.ID, "key_unknown"}, longIDs...) {
				_, err := s.SetKeyPlan(ctx, id, petstore.Plan(plan), petstore.Limits{})
				if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
					t.Fatalf("SetKeyPlan of %q with plan %q: %v, want invalid_request", clip(id), clip(plan), err)
				}
			}
		}
		if got, _, err := s.KeyByHash(ctx, petstore.HashAPIKey("psk_kept")); err != nil || got != kept {
			t.Fatalf("KeyByHash after refused plans = %+v, %v; want %+v", got, err, kept)
		}
		for _, id := range longIDs {
			_, err := s.SetKeyPlan(ctx, id, petstore.PlanFree, petstore.Limits{})
			wantCode(t, err, petstore.CodeNotFound)
			wantCode(t, s.DeleteKey(ctx, id), petstore.CodeNotFound)
			_, err = s.UnrevokeKey(ctx, id)
			wantCode(t, err, petstore.CodeNotFound)
		}
	})
}

// runIdempotencyLimits checks petstore.MaxScopeBytes, petstore.MaxRequestHashBytes and
// petstore.MaxIdempotencyKeyLength on an IdempotencyStore.
func runIdempotencyLimits(t *testing.T, idem func(t *testing.T) petstore.IdempotencyStore) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	respond := func(r petstore.IdempotencyRecord) petstore.IdempotencyRecord {
		r.Completed, r.Status, r.ContentType, r.Location, r.Body = true, 201, "application/json", "/v1/pets/1", []byte(`{"id":1}`)
		return r
	}
	t.Run("LimitsAtTheEdge", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		for _, unit := range []string{"a", "é"} {
			rec := petstore.IdempotencyRecord{
				Scope:       ofBytes("key_", petstore.MaxScopeBytes, unit),
				Key:         ofBytes("k"+unit, petstore.MaxIdempotencyKeyLength, "a"),
				RequestHash: ofBytes("h", petstore.MaxRequestHashBytes, "a"),
				CreatedAt:   now,
			}
			want := respond(rec)
			want.ContentType = ofBytes("application/", petstore.MaxContentTypeBytes, unit)
			want.Location = ofBytes("/v1/pets/", petstore.MaxLocationBytes, unit)
			got, ran, err := s.CreateOnce(ctx, rec, func(context.Context) (petstore.IdempotencyRecord, bool) { return want, true })
			if err != nil || !ran {
				t.Fatalf("CreateOnce with a %d-byte scope, a %d-byte key and a %d-byte request hash: ran %v, %v",
					len(rec.Scope), len(rec.Key), len(rec.RequestHash), ran, err)
			}
			got, err = s.GetIdempotencyKey(ctx, rec.Scope, rec.Key)
			if err != nil || got.Scope != want.Scope || got.Key != want.Key || got.RequestHash != want.RequestHash || got.Status != want.Status ||
				got.ContentType != want.ContentType || got.Location != want.Location {
				t.Fatalf("GetIdempotencyKey = %+v, %v; want %+v", got, err, want)
			}
		}
	})
	t.Run("LimitsPast", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		ok := func() petstore.IdempotencyRecord {
			return petstore.IdempotencyRecord{Scope: "key_a", Key: "k", RequestHash: "h", CreatedAt: now}
		}
		var recs []petstore.IdempotencyRecord
		for _, unit := range []string{"a", "é"} {
			r := ok()
			r.Scope = ofBytes("key_", petstore.MaxScopeBytes+1, unit)
			recs = append(recs, r)
		}
		r := ok()
		r.Key = ofBytes("k", petstore.MaxIdempotencyKeyLength+1, "a")
		recs = append(recs, r)
		r = ok()
		r.RequestHash = ofBytes("h", petstore.MaxRequestHashBytes+1, "a")
		recs = append(recs, r)
		for _, bad := range []string{"\xff", "\x00"} {
			r = ok()
			r.Scope += bad
			recs = append(recs, r)
			r = ok()
			r.Key += bad
			recs = append(recs, r)
			r = ok()
			r.RequestHash += bad
			recs = append(recs, r)
		}
		for _, rec := range recs {
			called := false
			_, ran, err := s.CreateOnce(ctx, rec, func(context.Context) (petstore.IdempotencyRecord, bool) {
				called = true
				return respond(rec), true
			})
			if called || ran {
				t.Fatalf("CreateOnce with scope %q, key %q and request hash %q ran create",
					clip(rec.Scope), clip(rec.Key), clip(rec.RequestHash))
			}
			wantCode(t, err, petstore.CodeInvalidRequest)
			_, err = s.GetIdempotencyKey(ctx, rec.Scope, rec.Key)
			wantCode(t, err, petstore.CodeNotFound)
		}
		// A response too long to keep, or not storable, is not kept: the
		// call fails and a retry runs create again.
		var responses []petstore.IdempotencyRecord
		for _, unit := range []string{"a", "é"} {
			r := respond(ok())
			r.ContentType = ofBytes("application/", petstore.MaxContentTypeBytes+1, unit)
			responses = append(responses, r)
			r = respond(ok())
			r.Location = ofBytes("/v1/pets/", petstore.MaxLocationBytes+1, unit)
			responses = append(responses, r)
		}
		for _, bad := range []string{"\xff", "\x00"} {
			r := respond(ok())
			r.ContentType += bad
			responses = append(responses, r)
			r = respond(ok())
			r.Location += bad
			responses = append(responses, r)
		}
		for i, resp := range responses {
			rec := ok()
			rec.Key = fmt.Sprint("response", i)
			resp.Key = rec.Key
			_, _, err := s.CreateOnce(ctx, rec, func(context.Context) (petstore.IdempotencyRecord, bool) { return resp, true })
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("CreateOnce answered with content type %q and location %q: %v, want invalid_request", clip(resp.ContentType), clip(resp.Location), err)
			}
			_, err = s.GetIdempotencyKey(ctx, rec.Scope, rec.Key)
			wantCode(t, err, petstore.CodeNotFound)
			again := respond(rec)
			if got, ran, err := s.CreateOnce(ctx, rec, func(context.Context) (petstore.IdempotencyRecord, bool) { return again, true }); err != nil || !ran || got.Location != again.Location {
				t.Fatalf("CreateOnce again after a response not kept = %+v, ran %v, %v; want create run", got, ran, err)
			}
		}
	})
}

// clip shortens s for a failure message.
func clip(s string) string {
	if len(s) > 20 {
		return s[:10] + "…" + s[len(s)-10:]
	}
	return s
}

// runOrderLimits checks petstore.MaxProjectIDBytes on an OrderStore's
// project ids.
func runOrderLimits(t *testing.T, orders func(t *testing.T) ordersStore) {
	ctx := context.Background()
	no := petstore.NewOrder{PetID: 1}
	no.Normalize()
	t.Run("LimitsAtTheEdge", func(t *testing.T) {
		t.Parallel()
		s := orders(t)
		for _, unit := range []string{"a", "é"} {
			project := ofBytes("prj_", petstore.MaxProjectIDBytes, unit)
			o, err := s.CreateOrder(ctx, project, no)
			if err != nil {
				t.Fatalf("CreateOrder with a %d-byte project: %v", len(project), err)
			}
			if got, err := s.GetOrder(ctx, project, o.ID); err != nil || got.ID != o.ID {
				t.Fatalf("GetOrder = %+v, %v; want %+v", got, err, o)
			}
			if got, err := s.ListOrders(ctx, petstore.OrderQuery{ProjectID: project, Limit: 10}); err != nil || len(got) != 1 || got[0].ID != o.ID {
				t.Fatalf("ListOrders = %+v, %v; want [%+v]", got, err, o)
			}
		}
	})
	t.Run("LimitsPast", func(t *testing.T) {
		t.Parallel()
		s := orders(t)
		stored, err := s.CreateOrder(ctx, "prj_a", no)
		if err != nil {
			t.Fatal(err)
		}
		projects := []string{
			ofBytes("prj_", petstore.MaxProjectIDBytes+1, "a"),
			ofBytes("prj_", petstore.MaxProjectIDBytes+1, "é"),
			"prj_a\xff", "prj_a\x00",
		}
		for _, project := range projects {
			_, err := s.CreateOrder(ctx, project, no)
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("CreateOrder with project %q: %v, want invalid_request", clip(project), err)
			}
			_, err = s.GetOrder(ctx, project, stored.ID)
			wantCode(t, err, petstore.CodeNotFound)
			if got, err := s.ListOrders(ctx, petstore.OrderQuery{ProjectID: project, Limit: 10}); err != nil || got == nil || len(got) != 0 {
				t.Fatalf("ListOrders of project %q = %+v, %v; want none", clip(project), got, err)
			}
		}
		if got, err := s.ListOrders(ctx, petstore.OrderQuery{ProjectID: "prj_a", Limit: 10}); err != nil || len(got) != 1 {
			t.Fatalf("ListOrders of prj_a = %+v, %v; want its one order", got, err)
		}
	})
}

// runBlobLimits checks petstore.MaxBlobKeyBytes and
// petstore.MaxLockOwnerBytes on a blobs.Store.
func runBlobLimits(t *testing.T, openBlobs func(t *testing.T) blobs.Store) {
	ctx := context.Background()
	now := time.Now()
	t.Run("LimitsAtTheEdge", func(t *testing.T) {
		t.Parallel()
		s := openBlobs(t)
		for _, unit := range []string{"a", "é"} {
			key := ofBytes("k/", petstore.MaxBlobKeyBytes, unit)
			if err := s.PutBlob(ctx, key, []byte("v")); err != nil {
				t.Fatalf("PutBlob with a %d-byte key: %v", len(key), err)
			}
			if got, info, err := s.GetBlob(ctx, key); err != nil || string(got) != "v" || info.Key != key {
				t.Fatalf("GetBlob = %q, %+v, %v; want v", got, info, err)
			}
			owner := ofBytes("o", petstore.MaxLockOwnerBytes, unit)
			if ok, err := s.TryLock(ctx, key, owner, now, now.Add(time.Minute)); err != nil || !ok {
				t.Fatalf("TryLock with a %d-byte name and a %d-byte owner = %v, %v; want taken", len(key), len(owner), ok, err)
			}
			if ok, err := s.TryLock(ctx, key, "other", now, now.Add(time.Minute)); err != nil || ok {
				t.Fatalf("TryLock of a held lock = %v, %v; want refused", ok, err)
			}
			if err := s.Unlock(ctx, key, owner); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
		}
	})
	t.Run("LimitsPast", func(t *testing.T) {
		t.Parallel()
		s := openBlobs(t)
		for _, unit := range []string{"a", "é"} {
			key := ofBytes("k/", petstore.MaxBlobKeyBytes+1, unit)
			wantCode(t, s.PutBlob(ctx, key, []byte("v")), petstore.CodeInvalidRequest)
			_, _, err := s.GetBlob(ctx, key)
			wantCode(t, err, petstore.CodeNotFound)
			_, err = s.TryLock(ctx, key, "owner", now, now.Add(time.Minute))
			wantCode(t, err, petstore.CodeInvalidRequest)
			if err := s.Unlock(ctx, key, "owner"); err != nil {
				t.Fatalf("Unlock of a lock nobody can hold: %v, want nil", err)
			}
			owner := ofBytes("o", petstore.MaxLockOwnerBytes+1, unit)
			_, err = s.TryLock(ctx, "lock", owner, now, now.Add(time.Minute))
			wantCode(t, err, petstore.CodeInvalidRequest)
		}
		for _, owner := range []string{"o\xff", "o\x00"} {
			_, err := s.TryLock(ctx, "lock", owner, now, now.Add(time.Minute))
			wantCode(t, err, petstore.CodeInvalidRequest)
			if err := s.Unlock(ctx, "lock", owner); err != nil {
				t.Fatalf("Unlock by an owner nobody can be: %v, want nil", err)
			}
		}
		if infos, err := s.ListBlobs(ctx, ""); err != nil || len(infos) != 0 {
			t.Fatalf("ListBlobs = %+v, %v; want none stored", infos, err)
		}
		if ok, err := s.TryLock(ctx, "lock", "owner", now, now.Add(time.Minute)); err != nil || !ok {
			t.Fatalf("TryLock after refused ones = %v, %v; want taken, as none was held", ok, err)
		}
	})
}

// runDomainLimits checks petstore.MaxDomainIDBytes,
// petstore.MaxDomainNameBytes, petstore.MaxProjectIDBytes,
// petstore.MaxDomainStatusBytes and petstore.MaxOwnershipTokenBytes (of
// the token and the ownership token), and customdomain.MaxHistory and
// MaxOutbox, on a customdomain.Store.
func runDomainLimits(t *testing.T, open Opener) {
	ctx := context.Background()
	t.Run("LimitsAtTheEdge", func(t *testing.T) {
		t.Parallel()
		s := openDomains(t, open)
		for _, unit := range []string{"a", "é"} {
			e := newEntry(ofBytes("dom_", petstore.MaxDomainIDBytes, unit), ofBytes("prj_", petstore.MaxProjectIDBytes, unit),
				ofBytes("n", petstore.MaxDomainNameBytes-len(".example"), unit)+".example")
			e.OwnershipToken = ofBytes("petstore-verify=", petstore.MaxOwnershipTokenBytes, unit)
			e.Token = e.OwnershipToken
			created := mustCreateDomain(t, s, e)
			if got, err := s.DomainByName(ctx, e.Name); err != nil || got.ID != e.ID || got.ProjectID != e.ProjectID ||
				got.OwnershipToken != e.OwnershipToken || got.Token != e.Token {
				t.Fatalf("DomainByName = %+v, %v; want %s", got, err, e.ID)
			}
			created.Status = customdomain.Status(ofBytes("s", petstore.MaxDomainStatusBytes, unit))
			if _, err := s.UpdateDomain(ctx, created); err != nil {
				t.Fatalf("UpdateDomain with a %d-byte status: %v", len(created.Status), err)
			}
			if got, err := s.DomainByName(ctx, e.Name); err != nil || got.Status != created.Status {
				t.Fatalf("DomainByName = %+v, %v; want status %q", got, err, created.Status)
			}
			if got, err := s.ListDomains(ctx, customdomain.DomainQuery{ProjectID: e.ProjectID, Name: e.Name}); err != nil || len(got) != 1 {
				t.Fatalf("ListDomains = %+v, %v; want the one entry", got, err)
			}
			c := customdomain.Config{ProjectID: e.ProjectID, Primary: e.Name, Redirects: []customdomain.Redirect{}}
			if err := s.PutDomainConfig(ctx, c); err != nil {
				t.Fatalf("PutDomainConfig with a %d-byte project: %v", len(c.ProjectID), err)
			}
			if got, err := s.DomainConfig(ctx, c.ProjectID); err != nil || got.Primary != c.Primary {
				t.Fatalf("DomainConfig = %+v, %v; want %+v", got, err, c)
			}
		}
		// A history and an outbox at their bounds are kept whole.
		e := newEntry("dom_full", "prj_full", "full.example")
		e.History, e.Outbox, e.OutboxDueAt = fullHistory(customdomain.MaxHistory), fullOutbox(customdomain.MaxOutbox), domainTime
		created := mustCreateDomain(t, s, e)
		if got, err := s.DomainByName(ctx, e.Name); err != nil || entryJSON(t, got) != entryJSON(t, created) {
			t.Fatalf("DomainByName of an entry at the history's and outbox's bounds = %v; want it whole", err)
		}
		created.Status = customdomain.StatusActive
		updated, err := s.UpdateDomain(ctx, created)
		if err != nil {
			t.Fatalf("UpdateDomain of an entry at the history's and outbox's bounds: %v", err)
		}
		if got, err := s.DomainByName(ctx, e.Name); err != nil || entryJSON(t, got) != entryJSON(t, updated) {
			t.Fatalf("DomainByName after an update at the bounds = %v; want it whole", err)
		}
	})
	t.Run("LimitsPast", func(t *testing.T) {
		t.Parallel()
		s := openDomains(t, open)
		var refused []customdomain.Entry
		var projects, names []string // and values not storable
		for _, unit := range []string{"a", "é"} {
			refused = append(refused, newEntry(ofBytes("dom_", petstore.MaxDomainIDBytes+1, unit), "prj_a", "long-id.example"))
			project := ofBytes("prj_", petstore.MaxProjectIDBytes+1, unit)
			name := ofBytes("n", petstore.MaxDomainNameBytes+1-len(".example"), unit) + ".example"
			projects, names = append(projects, project), append(names, name)
		}
		projects = append(projects, "prj_a\xff", "prj_a\x00")
		names = append(names, "bad\xff.example", "bad\x00.example")
		refused = append(refused, newEntry("dom_bad\xff", "prj_a", "bad-id.example"), newEntry("dom_bad\x00", "prj_a", "bad-id.example"))
		for i, p := range projects {
			refused = append(refused, newEntry(fmt.Sprint("dom_p", i), p, fmt.Sprintf("p%d.example", i)))
		}
		for i, n := range names {
			refused = append(refused, newEntry(fmt.Sprint("dom_n", i), "prj_a", n))
		}
		for _, e := range refused {
			if _, err := s.CreateDomain(ctx, e); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("CreateDomain with id %q, project %q and name %q: %v, want invalid_request", clip(e.ID), clip(e.ProjectID), clip(e.Name), err)
			}
			e.Version = 1
			_, err := s.UpdateDomain(ctx, e)
			wantCode(t, err, petstore.CodeNotFound)
		}
		for _, n := range names {
			_, err := s.DomainByName(ctx, n)
			wantCode(t, err, petstore.CodeNotFound)
			if got, err := s.ListDomains(ctx, customdomain.DomainQuery{Name: n}); err != nil || got == nil || len(got) != 0 {
				t.Fatalf("ListDomains of name %q = %+v, %v; want none", clip(n), got, err)
			}
		}
		for _, p := range projects {
			if got, err := s.ListDomains(ctx, customdomain.DomainQuery{ProjectID: p}); err != nil || got == nil || len(got) != 0 {
				t.Fatalf("ListDomains of project %q = %+v, %v; want none", clip(p), got, err)
			}
			c := customdomain.Config{ProjectID: p, Primary: "a.example", Redirects: []customdomain.Redirect{}}
			wantCode(t, s.PutDomainConfig(ctx, c), petstore.CodeInvalidRequest)
			if got, err := s.DomainConfig(ctx, p); err != nil || got.Primary != "" {
				t.Fatalf("DomainConfig of project %q = %+v, %v; want an empty config", clip(p), got, err)
			}
		}
		if got, err := s.ListDomains(ctx, customdomain.DomainQuery{}); err != nil || len(got) != 0 {
			t.Fatalf("ListDomains = %+v, %v; want none stored", got, err)
		}
		if got, err := s.ListDomainConfigs(ctx); err != nil || len(got) != 0 {
			t.Fatalf("ListDomainConfigs = %+v, %v; want none stored", got, err)
		}
		// A status, token or ownership token past its limit, or not
		// storable, is refused on creation and on update, and the entry
		// keeps what it held.
		var statuses, tokens []string
		for _, unit := range []string{"a", "é"} {
			statuses = append(statuses, ofBytes("s", petstore.MaxDomainStatusBytes+1, unit))
			tokens = append(tokens, ofBytes("petstore-verify=", petstore.MaxOwnershipTokenBytes+1, unit))
		}
		statuses = append(statuses, "pending\xff", "pending\x00")
		tokens = append(tokens, "petstore-verify=\xff", "petstore-verify=\x00")
		kept := mustCreateDomain(t, s, newEntry("dom_kept", "prj_kept", "kept.example"))
		try := func(what string, change func(*customdomain.Entry)) {
			t.Helper()
			e := newEntry("dom_new", "prj_kept", "new.example")
			change(&e)
			if _, err := s.CreateDomain(ctx, e); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("CreateDomain with %s: %v, want invalid_request", what, err)
			}
			e = kept
			change(&e)
			if _, err := s.UpdateDomain(ctx, e); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("UpdateDomain with %s: %v, want invalid_request", what, err)
			}
			e.ID = ofBytes("dom_", petstore.MaxDomainIDBytes+1, "a") // the input is checked first: of an unknown entry too
			if _, err := s.UpdateDomain(ctx, e); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("UpdateDomain of an unknown entry with %s: %v, want invalid_request", what, err)
			}
		}
		for _, st := range statuses {
			try(fmt.Sprintf("status %q", clip(st)), func(e *customdomain.Entry) { e.Status = customdomain.Status(st) })
		}
		for _, tok := range tokens {
			try(fmt.Sprintf("ownership token %q", clip(tok)), func(e *customdomain.Entry) { e.OwnershipToken = tok })
			try(fmt.Sprintf("token %q", clip(tok)), func(e *customdomain.Entry) { e.Token = tok })
		}
		// So is a history or an outbox past its bound: no store keeps an
		// entry that grows without end.
		try(fmt.Sprintf("%d status changes", customdomain.MaxHistory+1), func(e *customdomain.Entry) {
			e.History = fullHistory(customdomain.MaxHistory + 1)
		})
		try(fmt.Sprintf("%d pending events", customdomain.MaxOutbox+1), func(e *customdomain.Entry) {
			e.Outbox, e.OutboxDueAt = fullOutbox(customdomain.MaxOutbox+1), domainTime
		})
		if got, err := s.DomainByName(ctx, kept.Name); err != nil || entryJSON(t, got) != entryJSON(t, kept) {
			t.Fatalf("DomainByName after refused updates = %+v, %v; want %+v", got, err, kept)
		}
		if _, err := s.DomainByName(ctx, "new.example"); petstore.ErrorCode(err) != petstore.CodeNotFound {
			t.Fatalf("DomainByName of a refused creation: %v, want not_found", err)
		}
	})
}

// fullHistory is a history of n status changes, a minute apart.
func fullHistory(n int) []customdomain.Transition {
	h := make([]customdomain.Transition, n)
	for i := range h {
		h[i] = customdomain.Transition{Status: customdomain.StatusPending, At: domainTime.Add(time.Duration(i) * time.Minute), Reason: fmt.Sprint("change ", i)}
	}
	return h
}

// fullOutbox is an outbox of n events, a minute apart.
func fullOutbox(n int) []customdomain.PendingEvent {
	o := make([]customdomain.PendingEvent, n)
	for i := range o {
		o[i] = customdomain.PendingEvent{ID: fmt.Sprintf("evt_%d", i), Type: customdomain.EventActive,
			CreatedAt: domainTime.Add(time.Duration(i) * time.Minute), Domain: []byte(`{"name":"x.example.com","status":"active"}`)}
	}
	return o
}

// runWebhookLimits checks petstore.MaxWebhookIDBytes,
// petstore.MaxProjectIDBytes, petstore.MaxWebhookSecretBytes and
// petstore.MaxWebhookEventTypeBytes on a webhook.Store's endpoints and
// events.
func runWebhookLimits(t *testing.T, openHooks func(t *testing.T) webhook.Store) {
	ctx := context.Background()
	t.Run("LimitsAtTheEdge", func(t *testing.T) {
		t.Parallel()
		s := openHooks(t)
		for _, unit := range []string{"a", "é"} {
			e := webhook.Endpoint{ID: ofBytes("wh_", petstore.MaxWebhookIDBytes, unit), ProjectID: ofBytes("prj_", petstore.MaxProjectIDBytes, unit),
				URL: "https://hooks.example.com/", Secret: ofBytes("whsec_", petstore.MaxWebhookSecretBytes, unit), CreatedAt: hookTime}
			if err := s.CreateWebhookEndpoint(ctx, e); err != nil {
				t.Fatalf("CreateWebhookEndpoint with a %d-byte id, a %d-byte project and a %d-byte secret: %v", len(e.ID), len(e.ProjectID), len(e.Secret), err)
			}
			if es, err := s.WebhookEndpoints(ctx, e.ProjectID); err != nil || len(es) != 1 || es[0].ID != e.ID || es[0].Secret != e.Secret {
				t.Fatalf("WebhookEndpoints = %+v, %v; want %+v", es, err, e)
			}
			ev := webhook.Event{ID: ofBytes("evt_", petstore.MaxWebhookIDBytes, unit), ProjectID: e.ProjectID,
				Type: ofBytes("domain.", petstore.MaxWebhookEventTypeBytes, unit), CreatedAt: hookTime, Payload: []byte(`{}`)}
			if n, err := s.EnqueueWebhookEvent(ctx, ev); err != nil || n != 1 {
				t.Fatalf("EnqueueWebhookEvent with a %d-byte id and a %d-byte type = %d, %v; want 1", len(ev.ID), len(ev.Type), n, err)
			}
			if ds, err := s.WebhookDeliveries(ctx, e.ProjectID, e.ID, 10); err != nil || len(ds) != 1 || ds[0].EventID != ev.ID || ds[0].Type != ev.Type {
				t.Fatalf("WebhookDeliveries = %+v, %v; want the event", ds, err)
			}
			secret := ofBytes("whsec_new", petstore.MaxWebhookSecretBytes, unit)
			got, err := s.RotateWebhookSecret(ctx, e.ProjectID, e.ID, secret, hookTime, hookTime.Add(time.Hour))
			if err != nil || got.Secret != secret || got.PreviousSecret != e.Secret {
				t.Fatalf("RotateWebhookSecret with a %d-byte secret = %+v, %v; want it, and the old one as the previous", len(secret), got, err)
			}
		}
	})
	t.Run("LimitsPast", func(t *testing.T) {
		t.Parallel()
		s := openHooks(t)
		ok := func(i int) webhook.Endpoint {
			return webhook.Endpoint{ID: fmt.Sprint("wh_", i), ProjectID: "prj_a", URL: "https://hooks.example.com/", Secret: "whsec_a", CreatedAt: hookTime}
		}
		var refused []webhook.Endpoint
		var projects, secrets []string // and values not storable
		for _, unit := range []string{"a", "é"} {
			e := ok(len(refused))
			e.ID = ofBytes("wh_", petstore.MaxWebhookIDBytes+1, unit)
			refused = append(refused, e)
			projects = append(projects, ofBytes("prj_", petstore.MaxProjectIDBytes+1, unit))
			secrets = append(secrets, ofBytes("whsec_", petstore.MaxWebhookSecretBytes+1, unit))
		}
		for _, bad := range []string{"\xff", "\x00"} {
			e := ok(len(refused))
			e.ID += bad
			refused = append(refused, e)
			projects = append(projects, "prj_a"+bad)
			secrets = append(secrets, "whsec_a"+bad)
		}
		for _, p := range projects {
			e := ok(len(refused))
			e.ProjectID = p
			refused = append(refused, e)
		}
		for _, secret := range secrets {
			e := ok(len(refused))
			e.Secret = secret
			refused = append(refused, e)
		}
		for _, e := range refused {
			if err := s.CreateWebhookEndpoint(ctx, e); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("CreateWebhookEndpoint with id %q, project %q and secret %q: %v, want invalid_request", clip(e.ID), clip(e.ProjectID), clip(e.Secret), err)
			}
		}
		for _, p := range append(projects, "prj_a") {
			if es, err := s.WebhookEndpoints(ctx, p); err != nil || es == nil || len(es) != 0 {
				t.Fatalf("WebhookEndpoints of project %q = %+v, %v; want none", clip(p), es, err)
			}
		}
		// No endpoint has an id or a project a store cannot keep.
		stored := ok(len(refused) + 1)
		if err := s.CreateWebhookEndpoint(ctx, stored); err != nil {
			t.Fatal(err)
		}
		var lookups [][2]string // project, id
		for _, p := range projects {
			lookups = append(lookups, [2]string{p, stored.ID})
		}
		for _, e := range refused[:4] { // the ids past the limit or not storable
			lookups = append(lookups, [2]string{stored.ProjectID, e.ID})
		}
		for _, l := range lookups {
			if _, err := s.WebhookDeliveries(ctx, l[0], l[1], 10); petstore.ErrorCode(err) != petstore.CodeNotFound {
				t.Fatalf("WebhookDeliveries of project %q, endpoint %q: %v, want not_found", clip(l[0]), clip(l[1]), err)
			}
			if _, err := s.RotateWebhookSecret(ctx, l[0], l[1], "whsec_b", hookTime, hookTime.Add(time.Hour)); petstore.ErrorCode(err) != petstore.CodeNotFound {
				t.Fatalf("RotateWebhookSecret of project %q, endpoint %q: %v, want not_found", clip(l[0]), clip(l[1]), err)
			}
			if err := s.DeleteWebhookEndpoint(ctx, l[0], l[1]); petstore.ErrorCode(err) != petstore.CodeNotFound {
				t.Fatalf("DeleteWebhookEndpoint of project %q, endpoint %q: %v, want not_found", clip(l[0]), clip(l[1]), err)
			}
		}
		// An event with an id, project or type past its limit, or not
		// storable, is refused, and no delivery is stored.
		var events []webhook.Event
		for i, id := range append([]string{ofBytes("evt_", petstore.MaxWebhookIDBytes+1, "a"), ofBytes("evt_", petstore.MaxWebhookIDBytes+1, "é")}, "evt_\xff", "evt_\x00") {
			events = append(events, webhook.Event{ID: id, ProjectID: stored.ProjectID, Type: webhook.TypeDomainActive, Payload: []byte(`{}`), CreatedAt: hookTime.Add(time.Duration(i))})
		}
		for i, p := range projects {
			events = append(events, webhook.Event{ID: fmt.Sprint("evt_p", i), ProjectID: p, Type: webhook.TypeDomainActive, Payload: []byte(`{}`), CreatedAt: hookTime})
		}
		for i, typ := range []string{ofBytes("domain.", petstore.MaxWebhookEventTypeBytes+1, "a"), ofBytes("domain.", petstore.MaxWebhookEventTypeBytes+1, "é"), "domain.\xff", "domain.\x00"} {
			events = append(events, webhook.Event{ID: fmt.Sprint("evt_t", i), ProjectID: stored.ProjectID, Type: typ, Payload: []byte(`{}`), CreatedAt: hookTime})
		}
		for _, ev := range events {
			if _, err := s.EnqueueWebhookEvent(ctx, ev); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("EnqueueWebhookEvent with id %q, project %q and type %q: %v, want invalid_request", clip(ev.ID), clip(ev.ProjectID), clip(ev.Type), err)
			}
		}
		if ds, err := s.WebhookDeliveries(ctx, stored.ProjectID, stored.ID, 10); err != nil || len(ds) != 0 {
			t.Fatalf("WebhookDeliveries after refused events = %+v, %v; want none", ds, err)
		}
		if err := s.DeleteWebhookEndpoint(ctx, stored.ProjectID, stored.ID); err != nil {
			t.Fatalf("DeleteWebhookEndpoint after refused lookups: %v", err)
		}
		// A secret past its limit, or not storable, is refused on
		// rotation, and the endpoint keeps its secret.
		kept := ok(len(refused))
		if err := s.CreateWebhookEndpoint(ctx, kept); err != nil {
			t.Fatal(err)
		}
		for _, secret := range secrets {
			_, err := s.RotateWebhookSecret(ctx, kept.ProjectID, kept.ID, secret, hookTime, hookTime.Add(time.Hour))
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("RotateWebhookSecret with secret %q: %v, want invalid_request", clip(secret), err)
			}
		}
		if es, err := s.WebhookEndpoints(ctx, kept.ProjectID); err != nil || len(es) != 1 || es[0].Secret != kept.Secret || es[0].PreviousSecret != "" {
			t.Fatalf("WebhookEndpoints after refused rotations = %+v, %v; want %+v", es, err, kept)
		}
	})
}
