package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/webhook"
)

// hookTime is a fixed instant with millisecond precision, the least a
// store must keep.
var hookTime = time.Date(2026, 11, 26, 9, 0, 0, 250_000_000, time.UTC)

// RunWebhooks checks the webhook.Store contract: endpoints, the outbox of
// deliveries and the leases that keep two processes from sending the
// same attempt. It fails when the store does not implement webhook.Store.
// It moves a fake clock to end leases, so open must return a store that
// judges leases on the times its callers pass (bunstore.CallerClock);
// RunWebhooksOnOneClock checks a store that judges them on its own.
func RunWebhooks(t *testing.T, open Opener) {
	ctx := context.Background()
	openHooks := func(t *testing.T) webhook.Store {
		t.Helper()
		s, ok := open(t).(webhook.Store)
		if !ok {
			lacks(t, "webhook.Store")
		}
		return s
	}
	endpoint := func(t *testing.T, s webhook.Store, id, project string, at time.Time) webhook.Endpoint {
		t.Helper()
		e := webhook.Endpoint{ID: id, ProjectID: project, URL: "https://hooks.example.com/" + id + "?q=ü", Secret: "whsec_" + id, CreatedAt: at}
		if err := s.CreateWebhookEndpoint(ctx, e); err != nil {
			t.Fatalf("CreateWebhookEndpoint(%s): %v", id, err)
		}
		return e
	}
	enqueue := func(t *testing.T, s webhook.Store, id, project string, at time.Time) int {
		t.Helper()
		n, err := s.EnqueueWebhookEvent(ctx, webhook.Event{
			ID: id, ProjectID: project, Type: webhook.TypeDomainActive, CreatedAt: at,
			Payload: []byte(`{"id":"` + id + `","type":"domain.active","data":{"domain":{"name":"ünï.example"}}}`),
		})
		if err != nil {
			t.Fatalf("EnqueueWebhookEvent(%s): %v", id, err)
		}
		return n
	}
	// claimFew claims at most perEndpoint of one endpoint; claim as many
	// of one as of all.
	claimFew := func(t *testing.T, s webhook.Store, token string, now time.Time, limit, perEndpoint int) []webhook.Due {
		t.Helper()
		dues, err := s.ClaimWebhookDeliveries(ctx, token, now, now.Add(time.Minute), limit, perEndpoint)
		if err != nil {
			t.Fatalf("ClaimWebhookDeliveries(%s): %v", token, err)
		}
		if dues == nil {
			t.Fatal("ClaimWebhookDeliveries returned nil, want a non-nil slice")
		}
		return dues
	}
	claim := func(t *testing.T, s webhook.Store, token string, now time.Time, limit int) []webhook.Due {
		t.Helper()
		return claimFew(t, s, token, now, limit, limit)
	}
	keys := func(dues []webhook.Due) string {
		var out []string
		for _, d := range dues {
			out = append(out, d.Delivery.EventID+">"+d.Delivery.EndpointID)
		}
		return fmt.Sprint(out)
	}
	deliveries := func(t *testing.T, s webhook.Store, project, endpoint string) []webhook.Delivery {
		t.Helper()
		ds, err := s.WebhookDeliveries(ctx, project, endpoint, 100)
		if err != nil {
			t.Fatalf("WebhookDeliveries(%s): %v", endpoint, err)
		}
		if ds == nil {
			t.Fatal("WebhookDeliveries returned nil, want a non-nil slice")
		}
		return ds
	}

	t.Run("Endpoints", func(t *testing.T) {
		t.Parallel()
		s := openHooks(t)
		if es, err := s.WebhookEndpoints(ctx, "prj_none"); err != nil || es == nil || len(es) != 0 {
			t.Fatalf("WebhookEndpoints of a project without any = %v, %v; want [] and no error", es, err)
		}
		b := endpoint(t, s, "wh_b", "prj_a", hookTime.Add(time.Second))
		a := endpoint(t, s, "wh_a", "prj_a", hookTime.Add(time.Second)) // same time: by ID
		first := endpoint(t, s, "wh_z", "prj_a", hookTime)
		endpoint(t, s, "wh_other", "prj_b", hookTime)
		err := s.CreateWebhookEndpoint(ctx, webhook.Endpoint{ID: "wh_a", ProjectID: "prj_b", URL: "https://x.example/", Secret: "s", CreatedAt: hookTime})
		wantCode(t, err, petstore.CodeConflict)

		es, err := s.WebhookEndpoints(ctx, "prj_a")
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 3 {
			t.Fatalf("WebhookEndpoints = %+v, want 3", es)
		}
		for i, want := range []webhook.Endpoint{first, a, b} {
			got := es[i]
			if got.ID != want.ID || got.ProjectID != want.ProjectID || got.URL != want.URL || got.Secret != want.Secret || !got.CreatedAt.Equal(want.CreatedAt) {
				t.Fatalf("endpoint %d = %+v, want %+v (oldest first, then by ID)", i, got, want)
			}
		}

		wantEndpointNotFound(t, s.DeleteWebhookEndpoint(ctx, "prj_b", "wh_a"), "wh_a")
		if err := s.DeleteWebhookEndpoint(ctx, "prj_a", "wh_a"); err != nil {
			t.Fatalf("DeleteWebhookEndpoint: %v", err)
		}
		wantCode(t, s.DeleteWebhookEndpoint(ctx, "prj_a", "wh_a"), petstore.CodeNotFound)
		if es, _ := s.WebhookEndpoints(ctx, "prj_a"); len(es) != 2 {
			t.Fatalf("after delete: %+v, want 2 endpoints", es)
		}
	})

	t.Run("EnqueueFansOutToTheProjectsEndpoints", func(t *testing.T) {
		t.Parallel()
		s := openHooks(t)
		endpoint(t, s, "wh_1", "prj_a", hookTime)
		endpoint(t, s, "wh_2", "prj_a", hookTime)
		endpoint(t, s, "wh_3", "prj_b", hookTime)
		if n := enqueue(t, s, "evt_1", "prj_a", hookTime); n != 2 {
			t.Fatalf("enqueued %d deliveries, want 2 (one per endpoint of the project)", n)
		}
		if n := enqueue(t, s, "evt_none", "prj_c", hookTime); n != 0 {
			t.Fatalf("enqueued %d deliveries for a project without endpoints, want 0", n)
		}
		_, err := s.EnqueueWebhookEvent(ctx, webhook.Event{ID: "evt_1", ProjectID: "prj_a", Type: webhook.TypeDomainAdded, CreatedAt: hookTime, Payload: []byte("{}")})
		wantCode(t, err, petstore.CodeConflict)

		ds := deliveries(t, s, "prj_a", "wh_1")
		if len(ds) != 1 {
			t.Fatalf("deliveries of wh_1 = %+v, want 1", ds)
		}
		d := ds[0]
		if d.EventID != "evt_1" || d.EndpointID != "wh_1" || d.ProjectID != "prj_a" || d.Type != webhook.TypeDomainActive ||
			d.State != webhook.StatePending || d.Attempts != 0 || !d.CreatedAt.Equal(hookTime) || !d.NextAttemptAt.Equal(hookTime) ||
			d.Answers == nil || len(d.Answers) != 0 || !json.Valid(d.Payload) || string(d.Payload) != `{"id":"evt_1","type":"domain.active","data":{"domain":{"name":"ünï.example"}}}` {
			t.Fatalf("delivery = %+v (payload %s), want a pending delivery of evt_1, due at once, with no answers", d, d.Payload)
		}
		if ds := deliveries(t, s, "prj_b", "wh_3"); len(ds) != 0 {
			t.Fatalf("another project's endpoint got %+v", ds)
		}
		_, err = s.WebhookDeliveries(ctx, "prj_b", "wh_1", 10)
		wantCode(t, err, petstore.CodeNotFound)
		_, err = s.WebhookDeliveries(ctx, "prj_a", "wh_missing", 10)
		wantCode(t, err, petstore.CodeNotFound)
	})

	t.Run("ClaimLeaseAndFinish", func(t *testing.T) {
		t.Parallel()
		s := openHooks(t)
		e := endpoint(t, s, "wh_1", "prj_a", hookTime)
		enqueue(t, s, "evt_later", "prj_a", hookTime.Add(time.Minute))
		enqueue(t, s, "evt_first", "prj_a", hookTime)

		dues := claim(t, s, "tok_1", hookTime, 10)
		if got := keys(dues); got != "[evt_first>wh_1]" {
			t.Fatalf("claimed %s at the first event's time, want only it", got)
		}
		if ep := dues[0].Endpoint; ep.URL != e.URL || ep.Secret != e.Secret || ep.ID != e.ID {
			t.Fatalf("claimed endpoint %+v, want %+v with its URL and secret", ep, e)
		}
		if got := keys(claim(t, s, "tok_2", hookTime.Add(30*time.Second), 10)); got != "[]" {
			t.Fatalf("claimed %s while the lease holds, want nothing", got)
		}
		// The lease ends (its holder died): another claim takes it over,
		// and the first holder can no longer record its attempt.
		if got := keys(claim(t, s, "tok_3", hookTime.Add(time.Minute), 10)); got != "[evt_first>wh_1 evt_later>wh_1]" {
			t.Fatalf("claimed %s once the lease ended, want both, earliest due first", got)
		}
		d := dues[0].Delivery
		d.Attempts, d.State, d.NextAttemptAt = 1, webhook.StatePending, hookTime.Add(10*time.Minute)
		d.Answers = []webhook.Answer{{Attempt: 1, At: hookTime.Add(time.Minute), StatusCode: 503, Body: "down ünï", Error: "", DurationMS: 12}}
		wantCode(t, s.FinishWebhookAttempt(ctx, "tok_1", hookTime.Add(time.Minute), d), petstore.CodeConflict)
		if err := s.FinishWebhookAttempt(ctx, "tok_3", hookTime.Add(time.Minute), d); err != nil {
			t.Fatalf("FinishWebhookAttempt by the lease holder: %v", err)
		}
		wantCode(t, s.FinishWebhookAttempt(ctx, "tok_3", hookTime.Add(time.Minute), d), petstore.CodeConflict) // the lease ended with it

		got := deliveries(t, s, "prj_a", "wh_1")
		if len(got) != 2 || got[0].EventID != "evt_later" || got[1].EventID != "evt_first" {
			t.Fatalf("deliveries = %+v, want evt_later then evt_first (newest first)", got)
		}
		f := got[1]
		if f.Attempts != 1 || f.State != webhook.StatePending || !f.NextAttemptAt.Equal(d.NextAttemptAt) || len(f.Answers) != 1 ||
			f.Answers[0].StatusCode != 503 || f.Answers[0].Body != "down ünï" || !f.Answers[0].At.Equal(d.Answers[0].At) || f.Answers[0].DurationMS != 12 {
			t.Fatalf("after the attempt: %+v, want it recorded", f)
		}
		// evt_first is not due again before its next attempt; evt_later's
		// lease has ended.
		if got := keys(claim(t, s, "tok_4", hookTime.Add(9*time.Minute), 10)); got != "[evt_later>wh_1]" {
			t.Fatalf("claimed %s before evt_first's next attempt, want only evt_later", got)
		}
		// A lease ends at its end: claimable again at that instant.
		if got := keys(claim(t, s, "tok_5", hookTime.Add(10*time.Minute), 1)); got != "[evt_later>wh_1]" {
			t.Fatalf("claimed %s with limit 1, want the one due earliest (evt_later, due since +1m)", got)
		}
		if got := keys(claim(t, s, "tok_6", hookTime.Add(10*time.Minute), 10)); got != "[evt_first>wh_1]" {
			t.Fatalf("claimed %s, want evt_first now due", got)
		}
		// A finished delivery is never claimed again.
		d.Attempts, d.State, d.NextAttemptAt = 2, webhook.StateSucceeded, time.Time{}
		if err := s.FinishWebhookAttempt(ctx, "tok_6", hookTime.Add(10*time.Minute), d); err != nil {
			t.Fatal(err)
		}
		if got := keys(claim(t, s, "tok_7", hookTime.Add(48*time.Hour), 10)); got != "[evt_later>wh_1]" {
			t.Fatalf("claimed %s, want only the unfinished evt_later", got)
		}
	})

	// A store judging on its callers' times measures a delivery's age
	// from the event's CreatedAt to the claim's now.
	t.Run("ClaimReturnsTheAge", func(t *testing.T) {
		t.Parallel()
		s := openHooks(t)
		endpoint(t, s, "wh_1", "prj_a", hookTime)
		enqueue(t, s, "evt_first", "prj_a", hookTime)
		enqueue(t, s, "evt_later", "prj_a", hookTime.Add(time.Minute))
		dues := claim(t, s, "tok_1", hookTime.Add(90*time.Second), 10)
		if got := keys(dues); got != "[evt_first>wh_1 evt_later>wh_1]" {
			t.Fatalf("claimed %s, want both", got)
		}
		for i, want := range []time.Duration{90 * time.Second, 30 * time.Second} {
			if got := dues[i].Age; got != want {
				t.Errorf("%s claimed 90 s after hookTime has Age %v, want %v", dues[i].Delivery.EventID, got, want)
			}
		}
	})

	// One endpoint's backlog cannot fill a claim: a claim takes at most
	// perEndpoint of each endpoint's deliveries, its earliest due, and
	// of those the limit earliest.
	t.Run("ClaimTakesAFewOfEachEndpoint", func(t *testing.T) {
		t.Parallel()
		s := openHooks(t)
		endpoint(t, s, "wh_a", "prj_a", hookTime)
		endpoint(t, s, "wh_b", "prj_b", hookTime)
		for i := range 5 {
			enqueue(t, s, fmt.Sprint("evt_a", i+1), "prj_a", hookTime.Add(time.Duration(i)*time.Second))
		}
		enqueue(t, s, "evt_b1", "prj_b", hookTime.Add(10*time.Second))
		enqueue(t, s, "evt_b2", "prj_b", hookTime.Add(11*time.Second))

		at := hookTime.Add(time.Minute)
		if got, want := keys(claimFew(t, s, "tok_1", at, 10, 2)), "[evt_a1>wh_a evt_a2>wh_a evt_b1>wh_b evt_b2>wh_b]"; got != want {
			t.Fatalf("claimed %s with 2 per endpoint, want %s", got, want)
		}
		if got, want := keys(claimFew(t, s, "tok_2", at, 2, 1)), "[evt_a3>wh_a]"; got != want {
			t.Fatalf("claimed %s with 1 per endpoint of the rest, want %s", got, want)
		}
		if got, want := keys(claimFew(t, s, "tok_3", at, 10, 5)), "[evt_a4>wh_a evt_a5>wh_a]"; got != want {
			t.Fatalf("claimed %s, want %s (the rest)", got, want)
		}
		if got := keys(claimFew(t, s, "tok_4", at, 10, 0)); got != "[]" {
			t.Fatalf("claimed %s with 0 per endpoint, want nothing", got)
		}
	})

	t.Run("ConcurrentClaimsTakeEachDeliveryOnce", func(t *testing.T) {
		t.Parallel()
		s := openHooks(t)
		endpoint(t, s, "wh_1", "prj_a", hookTime)
		endpoint(t, s, "wh_2", "prj_a", hookTime)
		const events = 15
		for i := range events {
			enqueue(t, s, fmt.Sprintf("evt_%02d", i), "prj_a", hookTime.Add(time.Duration(i)*time.Millisecond))
		}
		var mu sync.Mutex
		seen := map[string]string{}
		var errs []error
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				token := fmt.Sprint("tok_", w)
				// A worker claims at most every delivery: a store that
				// hands out leased ones again fails here, not in a hang.
				for range 2*events + 1 {
					dues, err := s.ClaimWebhookDeliveries(ctx, token, hookTime.Add(time.Second), hookTime.Add(time.Hour), 4, 2)
					mu.Lock()
					if err != nil {
						errs = append(errs, err)
					}
					for _, d := range dues {
						k := d.Delivery.EventID + ">" + d.Delivery.EndpointID
						if prev, ok := seen[k]; ok {
							errs = append(errs, fmt.Errorf("%s claimed by %s and %s", k, prev, token))
						}
						seen[k] = token
					}
					mu.Unlock()
					if err != nil || len(dues) == 0 {
						return
					}
				}
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if len(seen) != 2*events {
			t.Fatalf("%d deliveries claimed, want %d", len(seen), 2*events)
		}
	})

	t.Run("DeletingAnEndpointDropsItsDeliveries", func(t *testing.T) {
		t.Parallel()
		s := openHooks(t)
		endpoint(t, s, "wh_1", "prj_a", hookTime)
		endpoint(t, s, "wh_2", "prj_a", hookTime)
		enqueue(t, s, "evt_1", "prj_a", hookTime)
		dues := claim(t, s, "tok_1", hookTime, 10)
		if len(dues) != 2 {
			t.Fatalf("claimed %s, want both", keys(dues))
		}
		if err := s.DeleteWebhookEndpoint(ctx, "prj_a", "wh_1"); err != nil {
			t.Fatal(err)
		}
		for _, d := range dues {
			err := s.FinishWebhookAttempt(ctx, "tok_1", hookTime, d.Delivery)
			if d.Delivery.EndpointID == "wh_1" {
				wantCode(t, err, petstore.CodeNotFound)
			} else if err != nil {
				t.Fatalf("finishing the other endpoint's delivery: %v", err)
			}
		}
		if got := keys(claim(t, s, "tok_2", hookTime.Add(time.Hour), 10)); got != "[evt_1>wh_2]" {
			t.Fatalf("claimed %s, want only the remaining endpoint's delivery", got)
		}
	})

	t.Run("Purge", func(t *testing.T) {
		t.Parallel()
		s := openHooks(t)
		endpoint(t, s, "wh_1", "prj_a", hookTime)
		for i, id := range []string{"evt_old_done", "evt_old_failed", "evt_old_pending", "evt_new_done"} {
			enqueue(t, s, id, "prj_a", hookTime.Add(time.Duration(i)*time.Hour))
		}
		for _, due := range claim(t, s, "tok", hookTime.Add(4*time.Hour), 10) {
			d := due.Delivery
			d.Attempts = 1
			switch d.EventID {
			case "evt_old_done", "evt_new_done":
				d.State = webhook.StateSucceeded
			case "evt_old_failed":
				d.State = webhook.StateFailed
			default:
				d.State, d.NextAttemptAt = webhook.StatePending, hookTime.Add(5*time.Hour)
			}
			if err := s.FinishWebhookAttempt(ctx, "tok", hookTime.Add(4*time.Hour), d); err != nil {
				t.Fatal(err)
			}
		}
		n, err := s.PurgeWebhookDeliveries(ctx, hookTime.Add(4*time.Hour), hookTime.Add(3*time.Hour))
		if err != nil || n != 2 {
			t.Fatalf("PurgeWebhookDeliveries = %d, %v; want the 2 old finished ones", n, err)
		}
		var left []string
		for _, d := range deliveries(t, s, "prj_a", "wh_1") {
			left = append(left, d.EventID)
		}
		if got := fmt.Sprint(left); got != "[evt_new_done evt_old_pending]" {
			t.Fatalf("left %s, want the new finished one and the pending one", got)
		}
	})

	// A rotation gives the endpoint a new secret and keeps the one it
	// replaced, until when the caller said, for every reader: the
	// endpoint's list and the claims that sign deliveries.
	t.Run("RotateSecret", func(t *testing.T) {
		t.Parallel()
		s := openHooks(t)
		e := endpoint(t, s, "wh_1", "prj_a", hookTime)
		other := endpoint(t, s, "wh_2", "prj_a", hookTime.Add(time.Second))
		secrets := func(e webhook.Endpoint) string {
			return fmt.Sprintf("%s,%s,%s", e.Secret, e.PreviousSecret, e.PreviousSecretExpiresAt.UTC().Format(time.RFC3339Nano))
		}
		listed := func(t *testing.T) string {
			t.Helper()
			es, err := s.WebhookEndpoints(ctx, "prj_a")
			if err != nil || len(es) != 2 {
				t.Fatalf("WebhookEndpoints = %+v, %v; want 2", es, err)
			}
			if secrets(es[1]) != secrets(other) {
				t.Fatalf("the other endpoint is %s, want %s: rotating one changed another", secrets(es[1]), secrets(other))
			}
			return secrets(es[0])
		}
		none := time.Time{}.Format(time.RFC3339Nano)
		if got, want := listed(t), "whsec_wh_1,,"+none; got != want {
			t.Fatalf("a new endpoint's secrets = %s, want %s (no previous one)", got, want)
		}

		until := hookTime.Add(24 * time.Hour)
		got, err := s.RotateWebhookSecret(ctx, "prj_a", "wh_1", "whsec_new1", hookTime, until)
		if err != nil {
			t.Fatalf("RotateWebhookSecret: %v", err)
		}
		want := "whsec_new1,whsec_wh_1," + until.Format(time.RFC3339Nano)
		if secrets(got) != want || got.ID != e.ID || got.URL != e.URL || got.ProjectID != e.ProjectID || !got.CreatedAt.Equal(e.CreatedAt) {
			t.Fatalf("RotateWebhookSecret returned %+v, want %s and the rest as it was", got, want)
		}
		if got := listed(t); got != want {
			t.Fatalf("listed after the rotation: %s, want %s", got, want)
		}
		enqueue(t, s, "evt_1", "prj_a", hookTime)
		for _, due := range claim(t, s, "tok_1", hookTime, 10) {
			if due.Endpoint.ID == "wh_1" && secrets(due.Endpoint) != want {
				t.Fatalf("claimed with the endpoint's secrets %s, want %s", secrets(due.Endpoint), want)
			}
		}

		// Again within the overlap: the oldest goes, two at most.
		until2 := hookTime.Add(48 * time.Hour)
		if _, err := s.RotateWebhookSecret(ctx, "prj_a", "wh_1", "whsec_new2", hookTime, until2); err != nil {
			t.Fatal(err)
		}
		if got, want := listed(t), "whsec_new2,whsec_new1,"+until2.Format(time.RFC3339Nano); got != want {
			t.Fatalf("after a second rotation: %s, want %s", got, want)
		}
		// A zero expiry drops the replaced secret at once.
		got, err = s.RotateWebhookSecret(ctx, "prj_a", "wh_1", "whsec_new3", hookTime, time.Time{})
		if want := "whsec_new3,," + none; err != nil || secrets(got) != want || listed(t) != want {
			t.Fatalf("rotation without overlap = %s, %v, listed %s; want %s", secrets(got), err, listed(t), want)
		}

		_, err = s.RotateWebhookSecret(ctx, "prj_b", "wh_1", "whsec_theirs", hookTime, until)
		wantCode(t, err, petstore.CodeNotFound)
		_, err = s.RotateWebhookSecret(ctx, "prj_a", "wh_missing", "whsec_x", hookTime, until)
		wantEndpointNotFound(t, err, "wh_missing")
		if got, want := listed(t), "whsec_new3,,"+none; got != want {
			t.Fatalf("after refused rotations: %s, want %s (unchanged)", got, want)
		}
	})

	// A rotated secret's overlap ends when the rotation said: a claim
	// during it returns the previous secret, one at its end does not, and
	// a purge from then on erases it from the store.
	t.Run("RotatedSecretEndsAndIsErased", func(t *testing.T) {
		t.Parallel()
		s := openHooks(t)
		endpoint(t, s, "wh_1", "prj_a", hookTime)
		enqueue(t, s, "evt_1", "prj_a", hookTime)
		until := hookTime.Add(time.Hour)
		if _, err := s.RotateWebhookSecret(ctx, "prj_a", "wh_1", "whsec_new", hookTime, until); err != nil {
			t.Fatal(err)
		}
		if dues := claim(t, s, "tok_1", until.Add(-time.Minute), 1); len(dues) != 1 || dues[0].Endpoint.PreviousSecret != "whsec_wh_1" || !dues[0].Endpoint.PreviousSecretExpiresAt.Equal(until) {
			t.Fatalf("a claim a minute before the overlap's end got %+v, want the previous secret until %v", dues, until)
		}
		if dues := claim(t, s, "tok_2", until, 1); len(dues) != 1 || dues[0].Endpoint.Secret != "whsec_new" || dues[0].Endpoint.PreviousSecret != "" || !dues[0].Endpoint.PreviousSecretExpiresAt.IsZero() {
			t.Fatalf("a claim at the overlap's end got %+v, want the new secret only", dues)
		}
		if _, err := s.PurgeWebhookDeliveries(ctx, until, hookTime); err != nil {
			t.Fatal(err)
		}
		es, err := s.WebhookEndpoints(ctx, "prj_a")
		if err != nil || len(es) != 1 || es[0].Secret != "whsec_new" || es[0].PreviousSecret != "" || !es[0].PreviousSecretExpiresAt.IsZero() {
			t.Fatalf("after a purge at the overlap's end WebhookEndpoints = %+v, %v; want the new secret only: the previous one is erased", es, err)
		}
	})

	// A reader running while secrets are rotated sees each endpoint with
	// the secrets of one rotation, never a new secret with a previous one
	// from another.
	t.Run("RotateSecretIsAtomic", func(t *testing.T) {
		t.Parallel()
		s := openHooks(t)
		endpoint(t, s, "wh_1", "prj_a", hookTime)
		enqueue(t, s, "evt_1", "prj_a", hookTime)
		const rotations = 40
		name := func(i int) string {
			if i == 0 {
				return "whsec_wh_1"
			}
			return fmt.Sprint("whsec_", i)
		}
		// valid reports whether e holds the secrets of the endpoint
		// before any rotation or after one of them.
		valid := func(e webhook.Endpoint) bool {
			if e.Secret == name(0) {
				return e.PreviousSecret == "" && e.PreviousSecretExpiresAt.IsZero()
			}
			for i := 1; i <= rotations; i++ {
				if e.Secret == name(i) {
					return e.PreviousSecret == name(i-1) && e.PreviousSecretExpiresAt.Equal(hookTime.Add(time.Duration(i)*time.Hour))
				}
			}
			return false
		}
		done := make(chan struct{})
		var mu sync.Mutex
		var errs []error
		seen := map[string]bool{}
		// Each read is reported, so that the rotations wait for reads
		// between them and readers see most of the secrets.
		reads := make(chan struct{}, 1)
		report := func(how string, e webhook.Endpoint, err error) {
			mu.Lock()
			if err != nil {
				err = fmt.Errorf("%s: %w", how, err)
			} else if !valid(e) {
				err = fmt.Errorf("%s saw secret %q with previous %q until %v: a mix of two rotations", how, e.Secret, e.PreviousSecret, e.PreviousSecretExpiresAt)
			} else {
				seen[e.Secret] = true
			}
			if err != nil && len(errs) < 10 {
				errs = append(errs, err)
			}
			mu.Unlock()
			select {
			case reads <- struct{}{}:
			default:
			}
		}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					if w != 0 {
						es, err := s.WebhookEndpoints(ctx, "prj_a")
						if err == nil && len(es) != 1 {
							err = fmt.Errorf("%d endpoints, want 1", len(es))
						}
						var e webhook.Endpoint
						if err == nil {
							e = es[0]
						}
						report("WebhookEndpoints", e, err)
						continue
					}
					// One claimer, whose lease ends as it starts: the
					// delivery is claimable again at once, and no other
					// claim races it for the lease.
					dues, err := s.ClaimWebhookDeliveries(ctx, fmt.Sprint("tok_", w), hookTime, hookTime, 1, 1)
					if err == nil && len(dues) != 1 {
						err = fmt.Errorf("claimed %d deliveries, want the one", len(dues))
					}
					var e webhook.Endpoint
					if err == nil {
						e = dues[0].Endpoint
					}
					report("ClaimWebhookDeliveries", e, err)
				}
			}()
		}
		for i := 1; i <= rotations; i++ {
			<-reads
			<-reads
			if _, err := s.RotateWebhookSecret(ctx, "prj_a", "wh_1", name(i), hookTime, hookTime.Add(time.Duration(i)*time.Hour)); err != nil {
				t.Errorf("rotation %d: %v", i, err)
				break
			}
		}
		close(done)
		wg.Wait()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		dues := claim(t, s, "tok_last", hookTime, 1)
		if len(dues) != 1 || !valid(dues[0].Endpoint) || dues[0].Endpoint.Secret != name(rotations) {
			t.Fatalf("after the rotations a claim got %+v, want the last secrets", dues)
		}
		if len(seen) < rotations/2 {
			t.Fatalf("readers saw %d of the %d secrets, want most: they did not run while the secret changed", len(seen), rotations+1)
		}
	})

	t.Run("ListLimit", func(t *testing.T) {
		t.Parallel()
		s := openHooks(t)
		endpoint(t, s, "wh_1", "prj_a", hookTime)
		for i := range 5 {
			enqueue(t, s, fmt.Sprint("evt_", i), "prj_a", hookTime.Add(time.Duration(i)*time.Second))
		}
		ds, err := s.WebhookDeliveries(ctx, "prj_a", "wh_1", 2)
		if err != nil || len(ds) != 2 || ds[0].EventID != "evt_4" || ds[1].EventID != "evt_3" {
			t.Fatalf("WebhookDeliveries(limit 2) = %+v, %v; want evt_4, evt_3", ds, err)
		}
	})

	t.Run("IdsAndProjectsAreExact", func(t *testing.T) {
		// An id or project id that differs from a stored one by trailing
		// spaces (which a padding collation would match) is another one.
		t.Parallel()
		s := openHooks(t)
		endpoint(t, s, "wh_a", "prj_a", hookTime)
		enqueue(t, s, "evt_1", "prj_a", hookTime)
		if es, err := s.WebhookEndpoints(ctx, "prj_a "); err != nil || len(es) != 0 {
			t.Errorf("WebhookEndpoints(prj_a ) = %+v, %v; want none", es, err)
		}
		if ds, err := s.WebhookDeliveries(ctx, "prj_a ", "wh_a", 10); petstore.ErrorCode(err) != petstore.CodeNotFound {
			t.Errorf("WebhookDeliveries(prj_a , wh_a) = %+v, %v; want not_found", ds, err)
		}
		if ds, err := s.WebhookDeliveries(ctx, "prj_a", "wh_a ", 10); petstore.ErrorCode(err) != petstore.CodeNotFound {
			t.Errorf("WebhookDeliveries(prj_a, wh_a ) = %+v, %v; want not_found", ds, err)
		}
		if n := enqueue(t, s, "evt_2", "prj_a ", hookTime); n != 0 {
			t.Errorf("an event of prj_a  went to %d of prj_a's endpoints, want none", n)
		}
		if n := enqueue(t, s, "evt_1 ", "prj_a", hookTime); n != 1 {
			t.Errorf("event evt_1  enqueued %d deliveries, want 1 (an event of its own)", n)
		}
		if err := s.DeleteWebhookEndpoint(ctx, "prj_a ", "wh_a"); petstore.ErrorCode(err) != petstore.CodeNotFound {
			t.Errorf("DeleteWebhookEndpoint(prj_a , wh_a) = %v; want not_found", err)
		}
		if err := s.DeleteWebhookEndpoint(ctx, "prj_a", "wh_a "); petstore.ErrorCode(err) != petstore.CodeNotFound {
			t.Errorf("DeleteWebhookEndpoint(prj_a, wh_a ) = %v; want not_found", err)
		}
		if err := s.CreateWebhookEndpoint(ctx, webhook.Endpoint{ID: "wh_a ", ProjectID: "prj_b", URL: "https://x.example/", Secret: "s", CreatedAt: hookTime}); err != nil {
			t.Errorf("CreateWebhookEndpoint(wh_a ) = %v; want it stored as an endpoint of its own", err)
		}
		if ds := deliveries(t, s, "prj_a", "wh_a"); len(ds) != 2 {
			t.Errorf("deliveries of wh_a = %+v, want evt_1 and evt_1 ", ds)
		}
	})

	runWebhookLimits(t, openHooks)
}

// RunWebhooksOnOneClock checks what a webhook.Store shared by processes
// must do (bunstore does; memstore, one process, need not): judge leases
// and due times on one clock, its own, whatever the callers' clocks say.
// Of two callers, one two minutes ahead and one two minutes behind, an
// event the one ahead enqueues is due at once for the one behind; a lease
// or a retry's wait written by either holds against the other and ends
// once its length (leaseUntil - now, NextAttemptAt - now) has passed on
// the store's clock; a claimed delivery's Age is how long ago the store
// stored its event, whichever caller's clock it was enqueued or claimed
// on. It waits for one-second leases and waits to end.
func RunWebhooksOnOneClock(t *testing.T, open Opener) {
	ctx := context.Background()
	s, ok := open(t).(webhook.Store)
	if !ok {
		lacks(t, "webhook.Store")
	}
	const skew, wait = 2 * time.Minute, time.Second
	ahead := func() time.Time { return time.Now().Add(skew) }
	behind := func() time.Time { return time.Now().Add(-skew) }
	if err := s.CreateWebhookEndpoint(ctx, webhook.Endpoint{ID: "wh_1", ProjectID: "prj_a", URL: "https://hooks.example.com/", Secret: "whsec_1", CreatedAt: behind()}); err != nil {
		t.Fatal(err)
	}
	enqueued := time.Now()
	if _, err := s.EnqueueWebhookEvent(ctx, webhook.Event{ID: "evt_1", ProjectID: "prj_a", Type: webhook.TypeDomainActive, CreatedAt: ahead(), Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	var claimed time.Time // when the last claim began
	claim := func(token string, clock func() time.Time) []webhook.Due {
		t.Helper()
		claimed = time.Now()
		now := clock()
		dues, err := s.ClaimWebhookDeliveries(ctx, token, now, now.Add(wait), 10, 10)
		if err != nil {
			t.Fatalf("ClaimWebhookDeliveries(%s): %v", token, err)
		}
		return dues
	}
	// waitFor claims with clock until it gets the delivery, and fails
	// unless that took wait at least from began: the clock on which the
	// store judges has a millisecond's resolution at least. It returns
	// the claim.
	waitFor := func(what, token string, clock func() time.Time, began time.Time) []webhook.Due {
		t.Helper()
		dues := claim(token, clock)
		for deadline := began.Add(10 * wait); len(dues) == 0; dues = claim(token, clock) {
			if time.Now().After(deadline) {
				t.Fatalf("%s had not ended %v after it began, want %v", what, 10*wait, wait)
			}
			time.Sleep(wait / 20)
		}
		if took := time.Since(began); took < wait-time.Millisecond {
			t.Fatalf("%s ended %v after it began, want %v", what, took, wait)
		}
		return dues
	}
	// wantAge fails unless due's Age is between least and how long ago
	// the event was enqueued, on this process's monotonic clock, give or
	// take the store's clock's resolution (a millisecond at least) at
	// either end.
	wantAge := func(due webhook.Due, least time.Duration, who string) {
		t.Helper()
		if most := time.Since(enqueued); due.Age < least-2*time.Millisecond || due.Age > most+2*time.Millisecond {
			t.Fatalf("a claim by a caller %s has Age %v, want between %v and %v: the age was measured on the callers' clocks, not the store's", who, due.Age, least, most)
		}
	}

	dues := claim("tok_1", behind)
	if len(dues) != 1 {
		t.Fatalf("a caller %v behind the one that enqueued claimed %d deliveries, want 1: an event is due at once on the store's clock", 2*skew, len(dues))
	}
	wantAge(dues[0], 0, fmt.Sprint(2*skew, " behind the one that enqueued"))
	if n := len(claim("tok_2", ahead)); n != 0 {
		t.Fatalf("a caller %v ahead of the lease holder claimed a delivery it leased for %v: the lease was judged on the callers' clocks", 2*skew, wait)
	}
	began := time.Now()
	d := dues[0].Delivery
	now := behind()
	d.Attempts, d.State, d.NextAttemptAt = 1, webhook.StatePending, now.Add(wait)
	if err := s.FinishWebhookAttempt(ctx, "tok_1", now, d); err != nil {
		t.Fatal(err)
	}
	if n := len(claim("tok_2", ahead)); n != 0 {
		t.Fatalf("a caller %v ahead of the one that scheduled a retry in %v claimed it at once: due times were judged on the callers' clocks", 2*skew, wait)
	}
	wantAge(waitFor("a retry's wait", "tok_2", ahead, began)[0], wait, fmt.Sprint(2*skew, " ahead of the one that enqueued"))
	// The caller ahead holds it now, for wait on the store's clock from
	// some time in its claim, which lasts a few round trips.
	waitFor("a lease taken by a caller ahead", "tok_3", behind, claimed)

	// A secret rotated by the caller ahead with an overlap of wait is
	// valid for wait on the store's clock: a claim by the caller behind
	// just after the rotation gets it, its end on that caller's clock,
	// and claims end it with the overlap, not minutes later.
	if err := s.CreateWebhookEndpoint(ctx, webhook.Endpoint{ID: "wh_2", ProjectID: "prj_b", URL: "https://hooks.example.com/", Secret: "whsec_2", CreatedAt: ahead()}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnqueueWebhookEvent(ctx, webhook.Event{ID: "evt_2", ProjectID: "prj_b", Type: webhook.TypeDomainActive, CreatedAt: ahead(), Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	rotated := time.Now()
	now = ahead()
	if _, err := s.RotateWebhookSecret(ctx, "prj_b", "wh_2", "whsec_2b", now, now.Add(wait)); err != nil {
		t.Fatal(err)
	}
	// of is the claim's delivery to wh_2, if it has it.
	of := func(dues []webhook.Due) (webhook.Due, bool) {
		for _, d := range dues {
			if d.Endpoint.ID == "wh_2" {
				return d, true
			}
		}
		return webhook.Due{}, false
	}
	before := behind()
	due, ok := of(claim("tok_4", behind))
	if !ok {
		t.Fatal("a caller behind the one that enqueued did not claim the new event at once")
	}
	// Give or take the store's clock's resolution, a millisecond at least.
	if end := due.Endpoint.PreviousSecretExpiresAt; due.Endpoint.PreviousSecret != "whsec_2" || end.Before(before) || end.After(before.Add(wait+2*time.Millisecond)) {
		t.Fatalf("a claim by a caller %v behind the one that rotated the secret got previous secret %q until %v, %v after the claim began on its clock; want it until at most %v after: the overlap was judged on the callers' clocks", 2*skew, due.Endpoint.PreviousSecret, end, end.Sub(before), wait)
	}
	time.Sleep(time.Until(rotated.Add(wait)))
	for deadline := rotated.Add(10 * wait); ; time.Sleep(wait / 20) {
		if due, ok = of(claim("tok_5", behind)); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delivery leased for %v was not claimed again %v after", wait, 10*wait)
		}
	}
	if due.Endpoint.Secret != "whsec_2b" || due.Endpoint.PreviousSecret != "" || !due.Endpoint.PreviousSecretExpiresAt.IsZero() {
		t.Fatalf("a claim by a caller %v behind, after an overlap of %v on the store's clock, got secret %q and previous %q until %v; want the new secret only", 2*skew, wait, due.Endpoint.Secret, due.Endpoint.PreviousSecret, due.Endpoint.PreviousSecretExpiresAt)
	}
}

// wantEndpointNotFound fails t unless err is webhook.EndpointNotFound(id),
// the error every store and the Service return alike.
func wantEndpointNotFound(t testing.TB, err error, id string) {
	t.Helper()
	if want := webhook.EndpointNotFound(id); petstore.ErrorCode(err) != want.Code || petstore.ErrorMessage(err) != want.Message {
		t.Fatalf("err = %v, want %v", err, want)
	}
}
