package webhook_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/webhook"
)

// received is one request a receiver got.
type received struct {
	body      []byte
	signature string
	ctype     string
}

// receiver is a real HTTP server on loopback that answers each delivery
// with the next of its scripted statuses (the last one repeats).
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	statuses []int
	got      []received
	arrived  chan struct{}
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses, arrived: make(chan struct{}, 100)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{body: b, signature: req.Header.Get(webhook.SignatureHeader), ctype: req.Header.Get("Content-Type")})
		status := r.statuses[min(len(r.got), len(r.statuses))-1]
		r.mu.Unlock()
		w.WriteHeader(status)
		_, _ = io.WriteString(w, http.StatusText(status)+" from the receiver")
		r.arrived <- struct{}{}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// eventCounter is a receiver that answers every delivery 200, after
// wait, and counts the requests of each event.
type eventCounter struct {
	URL string
	mu  sync.Mutex
	n   map[string]int // event id: requests
}

func countEvents(t *testing.T, wait time.Duration) *eventCounter {
	c := &eventCounter{n: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct{ ID string }
		_ = json.NewDecoder(r.Body).Decode(&ev)
		c.mu.Lock()
		c.n[ev.ID]++
		c.mu.Unlock()
		time.Sleep(wait)
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

// counts returns how many requests each event made, by id.
func (c *eventCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// start is where the tests' clocks start: now, so that receivers verify
// signatures against the real time as they must.
func start() *testenv.Clock { return testenv.NewClock(time.Now().UTC().Truncate(time.Second)) }

func newService(t *testing.T, cfg webhook.Config) *webhook.Service {
	t.Helper()
	if cfg.Jitter == nil {
		cfg.Jitter = func() float64 { return 0.5 } // every retry exactly at its delay
	}
	s, err := webhook.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func deliverDue(t *testing.T, s *webhook.Service) int {
	t.Helper()
	n, err := s.DeliverDue(context.Background())
	if err != nil {
		t.Fatalf("DeliverDue: %v", err)
	}
	return n
}

// firstAttempt creates prj_a's endpoint at url, enqueues one
// domain.active event and makes its first attempt: it returns the one
// delivery.
func firstAttempt(t *testing.T, svc *webhook.Service, url string) webhook.Delivery {
	t.Helper()
	ctx := context.Background()
	ep, err := svc.CreateEndpoint(ctx, "prj_a", url)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
		t.Fatal(err)
	}
	deliverDue(t, svc)
	ds, err := svc.Deliveries(ctx, "prj_a", ep.ID)
	if err != nil || len(ds) != 1 {
		t.Fatalf("deliveries %+v, %v; want one", ds, err)
	}
	return ds[0]
}

// A receiver that fails twice and then answers 204 gets the same event
// three times, on the backoff schedule, each time signed anew; the
// delivery ends succeeded with the three answers.
func TestDeliveryRetriesUntilTheReceiverAnswers(t *testing.T) {
	ctx := context.Background()
	clock := start()
	store := memstore.New()
	rcv := newReceiver(t, 500, 503, 204)
	svc := newService(t, webhook.Config{Store: store, AllowPrivate: true, Now: clock.Now})
	ep, err := svc.CreateEndpoint(ctx, "prj_a", rcv.srv.URL+"/hook")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ep.Secret, "whsec_") || len(ep.Secret) < 40 {
		t.Fatalf("secret %q: want whsec_ and 32 random bytes", ep.Secret)
	}
	created := clock.Now()
	if err := svc.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]any{"name": "shop.example.com", "status": "active"}); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		advance time.Duration
		want    int // requests the receiver has after the step
	}{
		{0, 1},                // at once: 500
		{0, 1},                // not due again yet
		{29 * time.Second, 1}, // the first retry waits 30 s
		{time.Second, 2},      // 503
		{59 * time.Second, 2}, // the second waits a minute
		{time.Second, 3},      // 204
		{24 * time.Hour, 3},   // done: never sent again
	}
	for i, st := range steps {
		clock.Advance(st.advance)
		deliverDue(t, svc)
		if got := len(rcv.requests()); got != st.want {
			t.Fatalf("step %d (+%v, at +%v): the receiver has %d requests, want %d", i, st.advance, clock.Now().Sub(created), got, st.want)
		}
	}

	reqs := rcv.requests()
	var firstID string
	for i, r := range reqs {
		if string(r.body) != string(reqs[0].body) {
			t.Fatalf("attempt %d sent %s, want the same body as the first, %s", i+1, r.body, reqs[0].body)
		}
		if err := webhook.VerifyWebhook(ep.Secret, r.signature, r.body, 48*time.Hour); err != nil {
			t.Fatalf("attempt %d: %v (header %q)", i+1, err, r.signature)
		}
		if r.ctype != "application/json" {
			t.Fatalf("Content-Type %q", r.ctype)
		}
		var ev struct {
			ID        string    `json:"id"`
			Type      string    `json:"type"`
			CreatedAt time.Time `json:"createdAt"`
			Data      struct {
				Domain map[string]string `json:"domain"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.body, &ev); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(ev.ID, "evt_") || ev.Type != "domain.active" || !ev.CreatedAt.Equal(created) || ev.Data.Domain["name"] != "shop.example.com" {
			t.Fatalf("event %s, want domain.active of shop.example.com created at %v", r.body, created)
		}
		if i == 0 {
			firstID = ev.ID
		} else if ev.ID != firstID {
			t.Fatalf("attempt %d has id %s, want %s: an event keeps its id across retries", i+1, ev.ID, firstID)
		}
	}
	if reqs[0].signature == reqs[1].signature {
		t.Fatal("each attempt must be signed at its own time")
	}

	ds, err := svc.Deliveries(ctx, "prj_a", ep.ID)
	if err != nil || len(ds) != 1 {
		t.Fatalf("Deliveries = %+v, %v; want one", ds, err)
	}
	d := ds[0]
	if d.EventID != firstID || d.State != webhook.StateSucceeded || d.Attempts != 3 || len(d.Answers) != 3 {
		t.Fatalf("delivery %+v, want succeeded after 3 attempts", d)
	}
	for i, want := range []struct {
		status int
		at     time.Duration
	}{{500, 0}, {503, 30 * time.Second}, {204, 90 * time.Second}} {
		a := d.Answers[i]
		body := http.StatusText(want.status) + " from the receiver"
		if want.status == http.StatusNoContent {
			body = ""
		}
		if a.Attempt != i+1 || a.StatusCode != want.status || !a.At.Equal(created.Add(want.at)) || a.Body != body || a.Error != "" {
			t.Fatalf("answer %d = %+v, want %d at +%v with the receiver's body", i, a, want.status, want.at)
		}
	}
}

// A receiver that never answers 2xx is retried until Config.RetryFor has
// passed since the event, then the delivery is failed and left alone.
func TestDeliveryGivesUpAfterRetryFor(t *testing.T) {
	ctx := context.Background()
	clock := start()
	rcv := newReceiver(t, 500)
	svc := newService(t, webhook.Config{Store: memstore.New(), AllowPrivate: true, Now: clock.Now, RetryFor: 10 * time.Minute})
	ep, err := svc.CreateEndpoint(ctx, "prj_a", rcv.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Enqueue(ctx, "prj_a", webhook.TypeDomainCertificateFailed, json.RawMessage(`{"name":"a.example.com"}`)); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		deliverDue(t, svc)
		ds, _ := svc.Deliveries(ctx, "prj_a", ep.ID)
		if ds[0].State != webhook.StatePending {
			break
		}
		clock.Set(ds[0].NextAttemptAt)
	}
	ds, _ := svc.Deliveries(ctx, "prj_a", ep.ID)
	// 30 s, 1, 2 and 4 min after the attempts at 0, 0:30, 1:30, 3:30,
	// 7:30; the next, at 15:30, would be past 10 minutes.
	if d := ds[0]; d.State != webhook.StateFailed || d.Attempts != 5 || !d.NextAttemptAt.IsZero() {
		t.Fatalf("delivery %+v, want failed after 5 attempts", d)
	}
	clock.Advance(time.Hour)
	if deliverDue(t, svc); len(rcv.requests()) != 5 {
		t.Fatalf("the receiver got %d requests, want 5: a failed delivery is not retried", len(rcv.requests()))
	}
}

// openStore opens (and migrates) the database dsn names, as a process
// starting on it does.
func openStore(t *testing.T, dsn string, opts ...bunstore.Option) *bunstore.Store {
	t.Helper()
	db, err := bunopen.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := bunstore.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return bunstore.New(db, opts...)
}

// Nothing is lost across a restart: a delivery that failed before it is
// retried by the next process, and one whose process died in the middle
// of an attempt is picked up once that process's lease has run out.
func TestDeliveryPersistsAcrossRestart(t *testing.T) {
	ctx := context.Background()
	clock := start()
	path := filepath.Join(t.TempDir(), "petstore.db")
	rcv := newReceiver(t, 500, 200)

	// The fake clock ends the dead process's lease: the stores judge
	// leases on it.
	first := openStore(t, "sqlite:"+path, bunstore.CallerClock())
	svc := newService(t, webhook.Config{Store: first, AllowPrivate: true, Now: clock.Now})
	ep, err := svc.CreateEndpoint(ctx, "prj_a", rcv.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Enqueue(ctx, "prj_a", webhook.TypeDomainAdded, map[string]string{"name": "a.example.com"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if err := svc.Enqueue(ctx, "prj_a", webhook.TypeDomainRemoved, map[string]string{"name": "b.example.com"}); err != nil {
		t.Fatal(err)
	}
	// The first event is claimed by a process that dies before sending
	// it; the second is attempted (500).
	if n, err := first.ClaimWebhookDeliveries(ctx, "dying-process", clock.Now(), clock.Now().Add(webhook.DefaultLease), 1, 1); err != nil || len(n) != 1 {
		t.Fatalf("claim: %v, %v", n, err)
	}
	deliverDue(t, svc)
	if got := len(rcv.requests()); got != 1 {
		t.Fatalf("before the restart the receiver has %d requests, want 1", got)
	}
	first.DB().Close()

	second := openStore(t, "sqlite:"+path, bunstore.CallerClock())
	restarted := newService(t, webhook.Config{Store: second, AllowPrivate: true, Now: clock.Now})
	clock.Advance(30 * time.Second) // the failed one is due again; the lease still holds
	deliverDue(t, restarted)
	if got := len(rcv.requests()); got != 2 {
		t.Fatalf("after the restart the receiver has %d requests, want 2 (the retry)", got)
	}
	clock.Advance(webhook.DefaultLease) // the dead process's lease has run out
	deliverDue(t, restarted)
	reqs := rcv.requests()
	if len(reqs) != 3 || string(reqs[0].body) != string(reqs[1].body) || !strings.Contains(string(reqs[1].body), `"domain.removed"`) || !strings.Contains(string(reqs[2].body), `"domain.added"`) {
		t.Fatalf("the receiver got %d requests, want domain.removed twice (then its retry) and then domain.added", len(reqs))
	}
	ds, err := restarted.Deliveries(ctx, "prj_a", ep.ID)
	if err != nil || len(ds) != 2 || ds[0].State != webhook.StateSucceeded || ds[1].State != webhook.StateSucceeded {
		t.Fatalf("deliveries %+v, %v; want both succeeded", ds, err)
	}
}

// Two processes sharing a database never send the same attempt: every
// event reaches the receiver exactly once.
func TestTwoWorkersShareTheOutbox(t *testing.T) {
	ctx := context.Background()
	clock := start()
	path := filepath.Join(t.TempDir(), "petstore.db")
	rcv := newReceiver(t, 200)
	a := newService(t, webhook.Config{Store: openStore(t, "sqlite:"+path), AllowPrivate: true, Now: clock.Now})
	b := newService(t, webhook.Config{Store: openStore(t, "sqlite:"+path), AllowPrivate: true, Now: clock.Now})
	if _, err := a.CreateEndpoint(ctx, "prj_a", rcv.srv.URL); err != nil {
		t.Fatal(err)
	}
	const events = 40
	for range events {
		if err := b.Enqueue(ctx, "prj_a", webhook.TypeDomainVerified, map[string]string{"name": "a.example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, svc := range []*webhook.Service{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, err := svc.DeliverDue(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	// A claim that lost every candidate to the other returns 0 early;
	// what is left is picked up by the next call.
	for deliverDue(t, a) > 0 {
	}
	ids := map[string]int{}
	for _, r := range rcv.requests() {
		var ev struct{ ID string }
		_ = json.Unmarshal(r.body, &ev)
		ids[ev.ID]++
	}
	if len(ids) != events {
		t.Fatalf("the receiver got %d distinct events, want %d", len(ids), events)
	}
	for id, n := range ids {
		if n != 1 {
			t.Fatalf("event %s was sent %d times, want once", id, n)
		}
	}
}

// TestReplicasNeverSendAnAttemptTwiceOverASlowDatabase: two workers on
// one database (PostgreSQL, MariaDB), through a link slowed 150 ms each way, with the
// shortest lease New accepts for their 1 s timeout and a receiver that
// answers within it. One claim of 32 deliveries then takes more than its
// lease, yet no attempt is ever in flight twice: an attempt starts only
// while its lease has room for it and for its answer's record, so each
// event reaches the receiver once per attempt the store records (once,
// unless a starved machine made an answer outrun the timeout, which is
// then retried).
func TestReplicasNeverSendAnAttemptTwiceOverASlowDatabase(t *testing.T) {
	t.Parallel()
	for _, db := range serverDatabases {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel() // each on its own database and proxy
			replicasNeverSendAnAttemptTwice(t, db.dsn(t))
		})
	}
}

// replicasNeverSendAnAttemptTwice is
// TestReplicasNeverSendAnAttemptTwiceOverASlowDatabase on the database
// direct names.
func replicasNeverSendAnAttemptTwice(t *testing.T, direct string) {
	ctx := context.Background()
	proxy, dsn := faultproxy.StartFor(t, direct)
	open := func() *bunstore.Store { return openStore(t, dsn) }
	first := open()
	rcv := countEvents(t, 700*time.Millisecond) // a 200 within the 1 s timeout
	config := func(s *bunstore.Store) webhook.Config {
		return webhook.Config{Store: s, AllowPrivate: true, Timeout: time.Second, Lease: 5 * time.Second}
	}
	a, b := newService(t, config(first)), newService(t, config(open()))
	ep, err := a.CreateEndpoint(ctx, "prj_a", rcv.URL)
	if err != nil {
		t.Fatal(err)
	}
	const events = 32
	for range events {
		if err := a.Enqueue(ctx, "prj_a", webhook.TypeDomainVerified, map[string]string{"name": "a.example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	proxy.SetLatency(150 * time.Millisecond)
	allRecorded := allSucceeded(t, a, "prj_a", ep.ID, events)
	var done atomic.Bool
	var wg sync.WaitGroup
	for i, svc := range []*webhook.Service{a, b} {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * time.Second) // b starts polling while a's claim runs
			for !done.Load() {
				if n, _ := svc.DeliverDue(ctx); n == 0 {
					time.Sleep(200 * time.Millisecond) // a poll interval
				}
			}
		})
	}
	for deadline := time.Now().Add(90 * time.Second); !allRecorded(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) { // a hang guard
			done.Store(true)
			wg.Wait()
			t.Fatalf("not every delivery succeeded within 90 s; sent: %v", rcv.counts())
		}
	}
	done.Store(true)
	wg.Wait()
	sent := rcv.counts()
	if len(sent) != events {
		t.Fatalf("the receiver got %d distinct events, want %d", len(sent), events)
	}
	ds, err := a.Deliveries(ctx, "prj_a", ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		// An attempt whose answer came after the timeout (a starved
		// machine) is retried, as it should be: each recorded attempt
		// reaches the receiver once, and no other does.
		if n := sent[d.EventID]; n != d.Attempts {
			t.Errorf("event %s reached the receiver %d times in %d recorded attempts %+v: an attempt was in flight twice", d.EventID, n, d.Attempts, d.Answers)
		} else if n > 1 {
			t.Logf("event %s was retried: %+v", d.EventID, d.Answers)
		}
	}
}

// Without AllowPrivate, a receiver on a non-public address is refused:
// at creation for an IP literal or localhost, and at every connection for
// a name, after it is resolved, so a name that pointed somewhere public
// when it was registered and to loopback now (DNS rebinding) gets
// nothing.
func TestPrivateReceiversAreRefused(t *testing.T) {
	ctx := context.Background()
	clock := start()
	store := memstore.New()
	rcv := newReceiver(t, 200)
	guarded := newService(t, webhook.Config{Store: store, Now: clock.Now})
	for _, u := range []string{rcv.srv.URL, strings.Replace(rcv.srv.URL, "127.0.0.1", "localhost", 1), "http://[::1]/", "http://10.0.0.7/", "http://169.254.169.254/latest"} {
		_, err := guarded.CreateEndpoint(ctx, "prj_a", u)
		if petstore.ErrorCode(err) != petstore.CodeInvalidRequest || !strings.Contains(petstore.ErrorMessage(err), "public") && !strings.Contains(petstore.ErrorMessage(err), "localhost") {
			t.Fatalf("CreateEndpoint(%s) = %v, want invalid_request saying the address is not public", u, err)
		}
	}
	// The name is only resolved when a delivery connects.
	rebound := webhook.Endpoint{ID: "wh_rebound", ProjectID: "prj_a", URL: strings.Replace(rcv.srv.URL, "127.0.0.1", "localhost", 1), Secret: "whsec_x", CreatedAt: clock.Now()}
	if err := store.CreateWebhookEndpoint(ctx, rebound); err != nil {
		t.Fatal(err)
	}
	if err := guarded.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
		t.Fatal(err)
	}
	deliverDue(t, guarded)
	if got := len(rcv.requests()); got != 0 {
		t.Fatalf("the private receiver got %d requests, want none", got)
	}
	ds, err := guarded.Deliveries(ctx, "prj_a", rebound.ID)
	if err != nil || len(ds) != 1 || len(ds[0].Answers) != 1 {
		t.Fatalf("deliveries %+v, %v", ds, err)
	}
	a := ds[0].Answers[0]
	if a.StatusCode != 0 || !strings.Contains(a.Error, "not a public address") || ds[0].State != webhook.StatePending {
		t.Fatalf("answer %+v, want no status and an error saying the address is not public; the delivery still retried", a)
	}
}

// Run delivers an event enqueued in its process at once, without waiting
// for its poll, and stops when its context ends.
func TestRunDeliversPromptly(t *testing.T) {
	rcv := newReceiver(t, 200)
	svc := newService(t, webhook.Config{Store: memstore.New(), AllowPrivate: true, PollInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	if _, err := svc.CreateEndpoint(ctx, "prj_a", rcv.srv.URL); err != nil {
		t.Fatal(err)
	}
	if err := svc.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rcv.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the event was not delivered within 30 s though Run was told at once")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil once its context ends", err)
	}
}

func TestEnqueueRefusesUnknownTypes(t *testing.T) {
	svc := newService(t, webhook.Config{Store: memstore.New()})
	err := svc.Enqueue(context.Background(), "prj_a", "domain.exploded", nil)
	if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
		t.Fatalf("Enqueue of an unknown type = %v, want invalid_request", err)
	}
	for _, typ := range webhook.Types() {
		if err := svc.Enqueue(context.Background(), "prj_a", typ, nil); err != nil {
			t.Fatalf("Enqueue(%s) = %v", typ, err)
		}
	}
}

// EnqueueOnce stores an event once per id: a caller that does not know
// whether its first call stored the event (it failed, or its process
// died) calls again, from as many processes as it likes, and each
// endpoint gets one delivery, with that id and the first call's body.
func TestEnqueueOnceStoresAnIDOnce(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	svc := newService(t, webhook.Config{Store: store})
	ep, err := svc.CreateEndpoint(ctx, "prj_a", "https://hooks.example.com/a")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for range 4 {
		other := newService(t, webhook.Config{Store: store})
		wg.Go(func() {
			if err := other.EnqueueOnce(ctx, "prj_a", "evt_once", webhook.TypeDomainAdded, at, map[string]string{"name": "a.example.com"}); err != nil {
				t.Errorf("EnqueueOnce = %v, want nil each time", err)
			}
		})
	}
	wg.Wait()
	ds, err := svc.Deliveries(ctx, "prj_a", ep.ID)
	if err != nil || len(ds) != 1 || ds[0].EventID != "evt_once" || !ds[0].CreatedAt.Equal(at) {
		t.Fatalf("deliveries %+v (%v), want one of evt_once at %s", ds, err, at)
	}
	if err := svc.EnqueueOnce(ctx, "prj_a", "not-an-event-id", webhook.TypeDomainAdded, at, nil); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
		t.Fatalf("EnqueueOnce with an id not evt_ = %v, want invalid_request", err)
	}
}

// A lease shorter than a claim's attempts could take would let another
// process send the same attempt: New refuses it.
func TestNewRefusesALeaseShorterThanTheAttempts(t *testing.T) {
	if _, err := webhook.New(webhook.Config{Store: memstore.New(), Timeout: time.Minute, Lease: 2 * time.Minute}); err == nil || !strings.Contains(err.Error(), "Lease") {
		t.Fatalf("New with a 2-minute lease over 1-minute attempts: %v, want an error", err)
	}
	if _, err := webhook.New(webhook.Config{}); err == nil {
		t.Fatal("New without a Store succeeded")
	}
}

// A receiver whose network fails, for real through the fault proxy, is
// retried like one that answers 5xx: a cut connection and a black hole
// (no answer within Config.Timeout) are recorded as answers with the
// reason, and the event arrives once the network is back.
func TestDeliveryRetriesNetworkFailures(t *testing.T) {
	ctx := context.Background()
	clock := start()
	rcv := newReceiver(t, 200)
	proxy := faultproxy.Start(t, strings.TrimPrefix(rcv.srv.URL, "http://"))
	svc := newService(t, webhook.Config{Store: memstore.New(), AllowPrivate: true, Now: clock.Now, Timeout: 300 * time.Millisecond})
	ep, err := svc.CreateEndpoint(ctx, "prj_a", "http://"+proxy.Addr()+"/hook")
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Enqueue(ctx, "prj_a", webhook.TypeDomainMisconfigured, map[string]string{"name": "a.example.com"}); err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	deliverDue(t, svc)
	proxy.Restore()
	proxy.Pause()
	clock.Advance(30 * time.Second)
	deliverDue(t, svc)
	proxy.Cut() // what the black hole held never arrives
	proxy.Restore()
	clock.Advance(time.Minute)
	deliverDue(t, svc)

	if got := len(rcv.requests()); got != 1 {
		t.Fatalf("the receiver got %d requests, want 1: only once the network was back", got)
	}
	ds, err := svc.Deliveries(ctx, "prj_a", ep.ID)
	if err != nil || len(ds) != 1 {
		t.Fatalf("deliveries %+v, %v", ds, err)
	}
	d := ds[0]
	if d.State != webhook.StateSucceeded || d.Attempts != 3 || len(d.Answers) != 3 {
		t.Fatalf("delivery %+v, want succeeded at the third attempt", d)
	}
	if a := d.Answers[0]; a.StatusCode != 0 || a.Error == "" {
		t.Fatalf("answer to the cut connection %+v, want no status and an error", a)
	}
	if a := d.Answers[1]; a.StatusCode != 0 || !strings.Contains(a.Error, "no answer within 300ms") {
		t.Fatalf("answer to the black hole %+v, want a timeout", a)
	}
	if a := d.Answers[2]; a.StatusCode != 200 || a.Error != "" {
		t.Fatalf("last answer %+v, want 200", a)
	}
}

// A project may hold Config.MaxEndpoints endpoints; the rest are refused
// with invalid_request, and other projects are not affected.
func TestEndpointCap(t *testing.T) {
	ctx := context.Background()
	svc := newService(t, webhook.Config{Store: memstore.New(), MaxEndpoints: 2})
	for range 2 {
		if _, err := svc.CreateEndpoint(ctx, "prj_a", "https://hooks.example.com/a"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := svc.CreateEndpoint(ctx, "prj_a", "https://hooks.example.com/a")
	if petstore.ErrorCode(err) != petstore.CodeInvalidRequest || !strings.Contains(petstore.ErrorMessage(err), "delete one first") {
		t.Fatalf("third endpoint: %v, want invalid_request", err)
	}
	if _, err := svc.CreateEndpoint(ctx, "prj_b", "https://hooks.example.com/b"); err != nil {
		t.Fatalf("another project: %v", err)
	}
	es, err := svc.Endpoints(ctx, "prj_a")
	if err != nil || len(es) != 2 {
		t.Fatalf("Endpoints = %+v, %v", es, err)
	}
	for _, e := range es {
		if e.Secret != "" {
			t.Fatalf("Endpoints shows a secret: %+v", e)
		}
	}
}

// TestEndpointCapHoldsUnderConcurrentCreates: creates that race each
// other in one process still stop at the cap.
func TestEndpointCapHoldsUnderConcurrentCreates(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, "sqlite:"+filepath.Join(t.TempDir(), "webhooks.db"))
	svc := newService(t, webhook.Config{Store: store, MaxEndpoints: 3})
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() { _, _ = svc.CreateEndpoint(ctx, "prj_a", "https://hooks.example.com/a") })
	}
	wg.Wait()
	if es, err := svc.Endpoints(ctx, "prj_a"); err != nil || len(es) != 3 {
		t.Fatalf("%d endpoints after 40 concurrent creates (%v), want the cap, 3", len(es), err)
	}
}

// The log says which delivery failed and why, never the secret, the
// endpoint's URL (it may carry the receiver's own token) or a body.
func TestLogsHoldNoSecrets(t *testing.T) {
	ctx := context.Background()
	clock := start()
	rcv := newReceiver(t, 500)
	var logs bytes.Buffer
	svc := newService(t, webhook.Config{Store: memstore.New(), AllowPrivate: true, Now: clock.Now,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ep, err := svc.CreateEndpoint(ctx, "prj_a", rcv.srv.URL+"/hook?token=receivers-own-token")
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "private-name.example.com"}); err != nil {
		t.Fatal(err)
	}
	deliverDue(t, svc)
	out := logs.String()
	if !strings.Contains(out, "webhook delivery failed") || !strings.Contains(out, ep.ID) || !strings.Contains(out, "status=500") {
		t.Fatalf("log %q does not say which delivery failed and how", out)
	}
	for _, secret := range []string{ep.Secret, "receivers-own-token", "private-name", "from the receiver"} {
		if strings.Contains(out, secret) {
			t.Fatalf("log shows %q: %s", secret, out)
		}
	}
}

// An endpoint id from a URL may hold anything: one no endpoint can have
// (a NUL byte, which PostgreSQL cannot even compare) is not_found, like
// any unknown id, never an internal error.
func TestImpossibleEndpointIDsAreNotFound(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, testenv.PostgresSchema(t))
	s := newService(t, webhook.Config{Store: store})
	for _, id := range []string{"wh_a\x00b", "wh_\xff", strings.Repeat("x", 65), "wh_unknown"} {
		if err := s.DeleteEndpoint(ctx, "prj_a", id); petstore.ErrorCode(err) != petstore.CodeNotFound {
			t.Errorf("DeleteEndpoint(%q) = %v, want not_found", id, err)
		}
		if _, err := s.Deliveries(ctx, "prj_a", id); petstore.ErrorCode(err) != petstore.CodeNotFound {
			t.Errorf("Deliveries(%q) = %v, want not_found", id, err)
		}
	}
}

// hostileReceiver answers every request with a status line of n bytes of
// garbage: what a broken or malicious receiver can send.
func hostileReceiver(t *testing.T, n int) (addr string, requests *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	requests = new(atomic.Int64)
	garbage := []byte(strings.Repeat("X", n) + "\r\n\r\n")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				requests.Add(1)
				_, _ = c.Write(garbage)
			}()
		}
	}()
	return ln.Addr().String(), requests
}

// TestHostileAnswersAreBounded: whatever a receiver sends back, a
// delivery keeps at most MaxAnswerBody bytes of why the attempt failed,
// and the log line about it is as short. A receiver answering megabytes
// of garbage once made each answer (and each log line) as big, until
// MariaDB could not store the answers at all: the attempt was then never
// recorded and sent again at every lease, past Config.RetryFor, forever.
func TestHostileAnswersAreBounded(t *testing.T) {
	ctx := context.Background()
	// The fake clock makes the retries due: the store judges them on it.
	store := openStore(t, testenv.MySQLDatabase(t), bunstore.CallerClock())
	for _, tc := range []struct {
		name  string
		store webhook.Store
	}{{"memstore", memstore.New()}, {"MariaDB", store}} {
		t.Run(tc.name, func(t *testing.T) {
			clock := start()
			addr, requests := hostileReceiver(t, 9<<20)
			var logs bytes.Buffer
			svc := newService(t, webhook.Config{Store: tc.store, AllowPrivate: true, Now: clock.Now, Lease: time.Minute,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			ep, err := svc.CreateEndpoint(ctx, "prj_hostile", "http://"+addr+"/hook")
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.Enqueue(ctx, "prj_hostile", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				deliverDue(t, svc)
				clock.Advance(5 * time.Minute) // past the next attempt, and past any lease
			}
			ds, err := svc.Deliveries(ctx, "prj_hostile", ep.ID)
			if err != nil || len(ds) != 1 {
				t.Fatalf("deliveries %+v, %v", ds, err)
			}
			if d := ds[0]; d.Attempts != int(requests.Load()) || d.Attempts != 3 {
				t.Fatalf("the receiver got %d requests, the delivery records %d attempts: want 3 and 3", requests.Load(), d.Attempts)
			}
			for _, a := range ds[0].Answers {
				if a.StatusCode != 0 || a.Error == "" || len(a.Error) > webhook.MaxAnswerBody {
					t.Fatalf("answer with status %d and a %d-byte error, want no status and at most %d bytes of error", a.StatusCode, len(a.Error), webhook.MaxAnswerBody)
				}
			}
			for line := range strings.Lines(logs.String()) {
				if len(line) > 2*webhook.MaxAnswerBody {
					t.Fatalf("a %d-byte log line: %.200s…", len(line), line)
				}
			}
		})
	}
}

// TestRetryAfterIsHonoured: a receiver answering 429 or 503 with
// Retry-After (seconds or an HTTP date) is not tried again before then,
// at most an hour later, and still not past Config.RetryFor; another
// status's Retry-After, or one it cannot read, leaves the schedule as it
// is.
func TestRetryAfterIsHonoured(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter func(now time.Time) string
		want       time.Duration // from the first attempt to the second
	}{
		{"503 in seconds", 503, func(time.Time) string { return "300" }, 5 * time.Minute},
		{"429 as a date", 429, func(now time.Time) string { return now.Add(10 * time.Minute).Format(http.TimeFormat) }, 10 * time.Minute},
		{"sooner than the schedule", 503, func(time.Time) string { return "5" }, 30 * time.Second},
		{"more than an hour", 503, func(time.Time) string { return "86400" }, time.Hour},
		{"unreadable", 503, func(time.Time) string { return "soon" }, 30 * time.Second},
		{"on a 500", 500, func(time.Time) string { return "300" }, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := start()
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					w.Header().Set("Retry-After", tc.retryAfter(clock.Now()))
					w.WriteHeader(tc.status)
					return
				}
				w.WriteHeader(http.StatusNoContent)
			}))
			t.Cleanup(srv.Close)
			svc := newService(t, webhook.Config{Store: memstore.New(), AllowPrivate: true, Now: clock.Now})
			first := clock.Now()
			if got := firstAttempt(t, svc, srv.URL).NextAttemptAt.Sub(first); got != tc.want {
				t.Fatalf("next attempt %v after the first, want %v", got, tc.want)
			}
			clock.Set(first.Add(tc.want - time.Second))
			if deliverDue(t, svc); calls.Load() != 1 {
				t.Fatalf("the receiver was called again %v after the first attempt, before %v", tc.want-time.Second, tc.want)
			}
			clock.Set(first.Add(tc.want))
			if deliverDue(t, svc); calls.Load() != 2 {
				t.Fatalf("the receiver got %d calls at %v, want 2", calls.Load(), tc.want)
			}
		})
	}
	t.Run("past RetryFor", func(t *testing.T) {
		clock := start()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1800")
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		t.Cleanup(srv.Close)
		svc := newService(t, webhook.Config{Store: memstore.New(), AllowPrivate: true, Now: clock.Now, RetryFor: 10 * time.Minute})
		if d := firstAttempt(t, svc, srv.URL); d.State != webhook.StateFailed {
			t.Fatalf("delivery %+v; want failed: the receiver asked for a retry after RetryFor", d)
		}
	})
}

// TestRedirectsAreNotFollowed: a receiver's redirect is a failed attempt,
// retried at the same URL; the place it points to (here another server,
// as an internal address would be) gets nothing.
func TestRedirectsAreNotFollowed(t *testing.T) {
	clock := start()
	target := newReceiver(t, 200)
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		redirector := httptest.NewServer(http.RedirectHandler(target.srv.URL+"/internal", status))
		t.Cleanup(redirector.Close)
		svc := newService(t, webhook.Config{Store: memstore.New(), AllowPrivate: true, Now: clock.Now})
		d := firstAttempt(t, svc, redirector.URL)
		if len(d.Answers) != 1 {
			t.Fatalf("delivery %+v, want one answer", d)
		}
		if d.State != webhook.StatePending || d.Answers[0].StatusCode != status {
			t.Fatalf("after a %d: state %s, answer %+v; want pending with the %d recorded", status, d.State, d.Answers[0], status)
		}
	}
	if n := len(target.requests()); n != 0 {
		t.Fatalf("the redirect's target got %d requests, want none", n)
	}
}

// allSucceeded reports, each time it is called, whether svc lists n
// deliveries to the endpoint, every one succeeded; an error fails t and
// ends the wait.
func allSucceeded(t *testing.T, svc *webhook.Service, projectID, endpointID string, n int) func() bool {
	return func() bool {
		ds, err := svc.Deliveries(context.Background(), projectID, endpointID)
		if err != nil {
			t.Error(err)
			return true
		}
		for _, d := range ds {
			if d.State != webhook.StateSucceeded {
				return false
			}
		}
		return len(ds) == n
	}
}
