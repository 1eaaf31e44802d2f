package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
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

// runKeyLimits checks petstore.MaxKeyIDBytes and petstore.MaxProjectIDBytes on a KeyStore.
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
			refused = append(refused, longID, longProject)
		}
		for _, bad := range []string{"\xff", "\x00"} {
			k := ok()
			k.ID += bad
			longIDs = append(longIDs, k.ID)
			refused = append(refused, k)
			k = ok()
			k.ProjectID += bad
			refused = append(refused, k)
		}
		for i, k := range refused {
			hash := petstore.HashAPIKey(fmt.Sprint("psk_past", i))
			if err := s.CreateKey(ctx, k, hash); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("CreateKey with id %q and project %q: %v, want invalid_request", clip(k.ID), clip(k.ProjectID), err)
			}
			if _, err := s.UpsertKey(ctx, k, hash); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("UpsertKey with id %q and project %q: %v, want invalid_request", clip(k.ID), clip(k.ProjectID), err)
			}
			_, _, err := s.KeyByHash(ctx, hash)
			wantCode(t, err, petstore.CodeNotFound)
		}
		if all, err := s.ListKeys(ctx); err != nil || len(all) != 0 {
			t.Fatalf("ListKeys = %+v, %v; want none stored", all, err)
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
			got, ran, err := s.CreateOnce(ctx, rec, func(context.Context) (petstore.IdempotencyRecord, bool) { return want, true })
			if err != nil || !ran {
				t.Fatalf("CreateOnce with a %d-byte scope, a %d-byte key and a %d-byte request hash: ran %v, %v",
					len(rec.Scope), len(rec.Key), len(rec.RequestHash), ran, err)
			}
			got, err = s.GetIdempotencyKey(ctx, rec.Scope, rec.Key)
			if err != nil || got.Scope != want.Scope || got.Key != want.Key || got.RequestHash != want.RequestHash || got.Status != want.Status {
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
	})
}

// clip shortens s for a failure message.
func clip(s string) string {
	if len(s) > 20 {
		return s[:10] + "…" + s[len(s)-10:]
	}
	return s
}
