package webhook_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/webhook"
)

// checkingReceiver is a receiver as a project writes one: it checks each
// delivery's signature with the secret it is configured with (VerifyWebhook,
// on the real clock) and answers 204, or 401 when the check fails.
type checkingReceiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	secret  string
	headers []string
	bodies  [][]byte
	checks  []error
}

func newCheckingReceiver(t *testing.T) *checkingReceiver {
	r := &checkingReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		h := req.Header.Get(webhook.SignatureHeader)
		r.mu.Lock()
		// The tests' clocks move an hour or so ahead of the real one.
		err := webhook.VerifyWebhook(r.secret, h, b, 3*time.Hour)
		r.headers, r.bodies, r.checks = append(r.headers, h), append(r.bodies, b), append(r.checks, err)
		r.mu.Unlock()
		if err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// use configures the receiver with secret.
func (r *checkingReceiver) use(secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = secret
}

// lastDelivery is what a checkingReceiver got last.
type lastDelivery struct {
	header string
	body   []byte
	check  error // of the signature, with the receiver's secret
	n      int   // deliveries received so far
}

func (r *checkingReceiver) last(t *testing.T) lastDelivery {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.checks)
	if n == 0 {
		t.Fatal("the receiver got nothing")
	}
	return lastDelivery{header: r.headers[n-1], body: r.bodies[n-1], check: r.checks[n-1], n: n}
}

// rollStores are the stores RollSecret is checked on: one process's, and
// a database's, judging due times on the tests' fake clock.
func rollStores(t *testing.T) map[string]webhook.Store {
	return map[string]webhook.Store{
		"memstore":        memstore.New(),
		"bunstore-sqlite": openStore(t, "sqlite:"+filepath.Join(t.TempDir(), "petstore.db"), bunstore.CallerClock()),
	}
}

// A rolled secret: a receiver still checking with the old secret keeps
// accepting deliveries while the overlap lasts and refuses them from its
// end on; one that switched to the new secret at once accepts every
// delivery. Every attempt in the overlap is signed with both, the new
// first; after it, with the new only. The list shows until when the old
// secret is valid, never a secret, and the log holds neither.
func TestRolledSecretOverlaps(t *testing.T) {
	for name, store := range rollStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clock := start()
			var logs bytes.Buffer
			svc := newService(t, webhook.Config{Store: store, AllowPrivate: true, Now: clock.Now,
				Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			stays, switches := newCheckingReceiver(t), newCheckingReceiver(t)
			a, err := svc.CreateEndpoint(ctx, "prj_a", stays.srv.URL+"/stays")
			if err != nil {
				t.Fatal(err)
			}
			b, err := svc.CreateEndpoint(ctx, "prj_a", switches.srv.URL+"/switches")
			if err != nil {
				t.Fatal(err)
			}
			stays.use(a.Secret)
			switches.use(b.Secret)

			rolledAt := clock.Now()
			a2, err := svc.RollSecret(ctx, "prj_a", a.ID, time.Hour)
			if err != nil {
				t.Fatalf("RollSecret: %v", err)
			}
			b2, err := svc.RollSecret(ctx, "prj_a", b.ID, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(a2.Secret, "whsec_") || a2.Secret == a.Secret || a2.PreviousSecret != "" ||
				!a2.PreviousSecretExpiresAt.Equal(rolledAt.Add(time.Hour)) || a2.ID != a.ID || a2.URL != a.URL {
				t.Fatalf("RollSecret returned %+v; want the endpoint with a new secret, the old one's end in an hour and not the old secret", a2)
			}
			switches.use(b2.Secret) // this receiver switches at once

			// deliver sends one event to both endpoints and returns what
			// the receiver keeping the old secret got.
			n := 0
			deliver := func(t *testing.T) lastDelivery {
				t.Helper()
				if err := svc.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
					t.Fatal(err)
				}
				deliverDue(t, svc)
				n++
				got, sw := stays.last(t), switches.last(t)
				if got.n != n || sw.n != n {
					t.Fatalf("the receivers got %d and %d deliveries, want %d", got.n, sw.n, n)
				}
				if sw.check != nil {
					t.Fatalf("the receiver that switched to the new secret refused a delivery: %v", sw.check)
				}
				return got
			}
			// both is the header of an attempt now signed with the new
			// secret and the old.
			both := func(body []byte) string {
				old := webhook.Sign(a.Secret, clock.Now(), body)
				return webhook.Sign(a2.Secret, clock.Now(), body) + old[strings.Index(old, ","):]
			}

			if got := deliver(t); got.check != nil || got.header != both(got.body) {
				t.Fatalf("just after the roll the old secret's receiver: %v, header %q; want it accepted, signed %q", got.check, got.header, both(got.body))
			}
			clock.Advance(59 * time.Minute)
			if got := deliver(t); got.check != nil || got.header != both(got.body) {
				t.Fatalf("59 minutes into an hour's overlap the old secret's receiver: %v, header %q; want it accepted, signed with both", got.check, got.header)
			}
			es, err := svc.Endpoints(ctx, "prj_a")
			if err != nil || len(es) != 2 || !es[0].PreviousSecretExpiresAt.Equal(rolledAt.Add(time.Hour)) || es[0].Secret != "" || es[0].PreviousSecret != "" {
				t.Fatalf("Endpoints during the overlap = %+v, %v; want the old secret's end and no secret", es, err)
			}
			clock.Advance(time.Minute) // the overlap's end
			if got := deliver(t); !errors.Is(got.check, webhook.ErrNoValidSignature) || got.header != webhook.Sign(a2.Secret, clock.Now(), got.body) {
				t.Fatalf("at the overlap's end the old secret's receiver: %v, header %q; want ErrNoValidSignature, signed with the new secret only", got.check, got.header)
			}
			es, err = svc.Endpoints(ctx, "prj_a")
			if err != nil || len(es) != 2 || !es[0].PreviousSecretExpiresAt.IsZero() {
				t.Fatalf("Endpoints after the overlap = %+v, %v; want no previous secret's end", es, err)
			}
			ds, err := svc.Deliveries(ctx, "prj_a", a.ID)
			if err != nil || len(ds) != 3 || ds[0].State != webhook.StatePending || ds[0].Answers[0].StatusCode != http.StatusUnauthorized || ds[1].State != webhook.StateSucceeded {
				t.Fatalf("deliveries %+v, %v; want the last refused (401, retried), the earlier ones succeeded", ds, err)
			}

			out := logs.String()
			for _, secret := range []string{a.Secret, a2.Secret, b.Secret, b2.Secret} {
				if strings.Contains(out, secret) {
					t.Fatalf("log shows a secret: %s", out)
				}
			}
		})
	}
}

// A secret rolled with no overlap ends at once: the next delivery is
// signed with the new secret only, and a receiver checking with the old
// one refuses it.
func TestRolledSecretWithoutOverlapEndsAtOnce(t *testing.T) {
	for name, store := range rollStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clock := start()
			svc := newService(t, webhook.Config{Store: store, AllowPrivate: true, Now: clock.Now})
			rcv := newCheckingReceiver(t)
			e, err := svc.CreateEndpoint(ctx, "prj_a", rcv.srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			rcv.use(e.Secret)
			e2, err := svc.RollSecret(ctx, "prj_a", e.ID, 0)
			if err != nil || !e2.PreviousSecretExpiresAt.IsZero() {
				t.Fatalf("RollSecret(0) = %+v, %v; want no previous secret's end", e2, err)
			}
			if err := svc.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
				t.Fatal(err)
			}
			deliverDue(t, svc)
			if got := rcv.last(t); !errors.Is(got.check, webhook.ErrNoValidSignature) || got.header != webhook.Sign(e2.Secret, clock.Now(), got.body) {
				t.Fatalf("the old secret's receiver: %v, header %q; want ErrNoValidSignature, signed with the new secret only", got.check, got.header)
			}
			rcv.use(e2.Secret)
			clock.Advance(time.Minute) // the retry, 30 s later
			deliverDue(t, svc)
			if got := rcv.last(t); got.check != nil || got.n != 2 {
				t.Fatalf("the retry, checked with the new secret: %v (%d deliveries); want it accepted", got.check, got.n)
			}
		})
	}
}

// RollSecret refuses an overlap it cannot keep and endpoints the project
// does not have, changing nothing: the secret still signs.
func TestRollSecretRefuses(t *testing.T) {
	ctx := context.Background()
	clock := start()
	svc := newService(t, webhook.Config{Store: memstore.New(), AllowPrivate: true, Now: clock.Now})
	rcv := newCheckingReceiver(t)
	e, err := svc.CreateEndpoint(ctx, "prj_a", rcv.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	rcv.use(e.Secret)
	for _, tc := range []struct {
		project, id string
		overlap     time.Duration
		code        string
	}{
		{"prj_a", e.ID, -time.Second, petstore.CodeInvalidRequest},
		{"prj_a", e.ID, webhook.MaxSecretOverlap + time.Second, petstore.CodeInvalidRequest},
		{"prj_b", e.ID, time.Hour, petstore.CodeNotFound},
		{"prj_a", "wh_unknown", time.Hour, petstore.CodeNotFound},
		{"prj_a", "wh_a\x00b", time.Hour, petstore.CodeNotFound},
	} {
		if got, err := svc.RollSecret(ctx, tc.project, tc.id, tc.overlap); petstore.ErrorCode(err) != tc.code || got.Secret != "" {
			t.Errorf("RollSecret(%s, %q, %v) = %+v, %v; want %s", tc.project, tc.id, tc.overlap, got, err, tc.code)
		}
	}
	if err := svc.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
		t.Fatal(err)
	}
	deliverDue(t, svc)
	if got := rcv.last(t); got.check != nil || got.header != webhook.Sign(e.Secret, clock.Now(), got.body) {
		t.Fatalf("after the refused rolls: %v, header %q; want it signed with the secret, unchanged", got.check, got.header)
	}
	if e2, err := svc.RollSecret(ctx, "prj_a", e.ID, webhook.MaxSecretOverlap); err != nil || !e2.PreviousSecretExpiresAt.Equal(clock.Now().Add(7*24*time.Hour)) {
		t.Fatalf("RollSecret(MaxSecretOverlap) = %+v, %v; want the old secret valid for 7 days", e2, err)
	}
}

// TestRolledSecretOverlapEndsAtOnceForEveryReplica: replicas sharing a
// database, one clock an hour ahead of the real one and one an hour
// behind. A secret rolled on the replica behind with a 3-second overlap
// is still accepted by a receiver checking with the old secret when the
// replica ahead delivers at once, and refused from the overlap's end on
// when the replica behind delivers: the overlap is kept on the
// database's clock, not on the clock of whichever replica makes the
// attempt. On a SQLite file, PostgreSQL and MariaDB.
func TestRolledSecretOverlapEndsAtOnceForEveryReplica(t *testing.T) {
	t.Parallel()
	const overlap = 3 * time.Second
	for _, db := range sharedDatabases {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := db.dsn(t)
			ahead, behind := skewedService(t, dsn, time.Hour, webhook.Config{}), skewedService(t, dsn, -time.Hour, webhook.Config{})
			rcv := newCheckingReceiver(t)
			e, err := behind.CreateEndpoint(ctx, "prj_a", rcv.srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			rcv.use(e.Secret) // the receiver keeps the old secret throughout
			rolled := time.Now()
			e2, err := behind.RollSecret(ctx, "prj_a", e.ID, overlap)
			if err != nil {
				t.Fatal(err)
			}
			deliver := func(svc *webhook.Service) lastDelivery {
				t.Helper()
				if err := behind.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
					t.Fatal(err)
				}
				if n := deliverDue(t, svc); n != 1 {
					t.Fatalf("DeliverDue attempted %d deliveries, want 1", n)
				}
				return rcv.last(t)
			}
			got := deliver(ahead)
			if took := time.Since(rolled); took >= overlap {
				t.Fatalf("the first delivery took %v, past the overlap; the test needs it sooner", took)
			}
			if got.check != nil {
				t.Fatalf("the replica an hour ahead delivered within the overlap: the old secret's receiver answered %v, want it accepted (header %q)", got.check, got.header)
			}
			time.Sleep(time.Until(rolled.Add(overlap + 100*time.Millisecond)))
			got = deliver(behind)
			if !errors.Is(got.check, webhook.ErrNoValidSignature) || strings.Count(got.header, "v1=") != 1 ||
				webhook.VerifyWebhook(e2.Secret, got.header, got.body, 3*time.Hour) != nil {
				t.Fatalf("the replica an hour behind delivered after the overlap: the old secret's receiver answered %v, header %q; want ErrNoValidSignature, signed with the new secret only", got.check, got.header)
			}
		})
	}
}

// TestListShowsTheOverlapOnTheStoresClock: a replica an hour ahead of
// the database lists a rolled endpoint with previousSecretExpiresAt for
// as long as the old secret is valid on the database's clock, which is
// when its deliveries are signed with it. The list once judged it again
// on the replica's own clock and hid a 30-minute overlap at once. On a
// SQLite file, PostgreSQL and MariaDB.
func TestListShowsTheOverlapOnTheStoresClock(t *testing.T) {
	t.Parallel()
	for _, db := range sharedDatabases {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ahead := skewedService(t, db.dsn(t), time.Hour, webhook.Config{})
			e, err := ahead.CreateEndpoint(ctx, "prj_a", "http://127.0.0.1:1/hook")
			if err != nil {
				t.Fatal(err)
			}
			rolled, err := ahead.RollSecret(ctx, "prj_a", e.ID, 30*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			es, err := ahead.Endpoints(ctx, "prj_a")
			if err != nil || len(es) != 1 {
				t.Fatalf("Endpoints = %+v, %v; want the one endpoint", es, err)
			}
			if got, want := es[0].PreviousSecretExpiresAt, rolled.PreviousSecretExpiresAt; want.IsZero() || !got.Equal(want) {
				t.Fatalf("the list's PreviousSecretExpiresAt = %v, want %v, the end of the overlap the roll answered", got, want)
			}
		})
	}
}

// TestRolledSecretEndsOnTimeOverASlowLink holds docs/custom-domains.md
// ("Webhooks") with the worker's database link slowed to 250 ms a round
// trip through the fault proxy: no attempt made after a rolled secret's
// overlap has ended on the database's clock is signed with it, and every
// attempt made before the end, less its claim's round trips (the claim
// reads how long the secret is still valid, and the worker counts that
// from before the claim, never later), is. The test makes the claims
// itself, one event each, from just after the roll until one starts
// after the end, and judges each attempt by the instant the worker
// recorded it (Answer.At) and the instant its DeliverDue began, which
// bounds the claim's round trips: never by when the attempt happened to
// arrive, which a loaded machine delays. On PostgreSQL and MariaDB, whose
// clock is this host's.
func TestRolledSecretEndsOnTimeOverASlowLink(t *testing.T) {
	t.Parallel()
	const (
		rtt  = 250 * time.Millisecond
		call = 5 * rtt // a claim's 3 round trips, a ping of a connection idle for a second, its attempt and record
		// Long enough that a quiet machine's first claim, ending its own
		// length before the end, checks the attempts signed with both.
		overlap = 2*call + rtt
	)
	for _, db := range serverDatabases {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel() // each on its own database and proxy
			ctx := context.Background()
			direct := db.dsn(t)
			proxy, proxied := faultproxy.StartFor(t, direct)
			defer proxy.Restore()
			raw, err := bunopen.Open(ctx, direct)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { raw.Close() })
			var mu sync.Mutex
			var signed []bool // per arrival: signed with the old secret too
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				signed = append(signed, strings.Count(r.Header.Get(webhook.SignatureHeader), "v1=") == 2)
			}))
			t.Cleanup(srv.Close)
			b := newService(t, webhook.Config{Store: openStore(t, direct), AllowPrivate: true})
			a := newService(t, webhook.Config{Store: openStore(t, proxied), AllowPrivate: true})
			e, err := b.CreateEndpoint(ctx, "prj_a", srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.RollSecret(ctx, "prj_a", e.ID, overlap); err != nil {
				t.Fatal(err)
			}
			var endNS int64 // on the database's clock, this host's
			if err := raw.NewRaw("SELECT previous_secret_expires_ns FROM webhook_endpoints WHERE id = ?", e.ID).Scan(ctx, &endNS); err != nil {
				t.Fatal(err)
			}
			end := time.Unix(0, endNS)

			proxy.SetLatency(rtt / 2)
			var both, newOnly int
			for {
				if err := b.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
					t.Fatal(err)
				}
				began := time.Now() // before the claim, as the worker's count of the overlap is
				if n := deliverDue(t, a); n != 1 {
					t.Fatalf("DeliverDue attempted %d deliveries, want 1", n)
				}
				ds, err := b.Deliveries(ctx, "prj_a", e.ID)
				if err != nil || len(ds) == 0 || len(ds[0].Answers) != 1 {
					t.Fatalf("deliveries %+v, %v; want the one just attempted first, with its answer", ds, err)
				}
				at := ds[0].Answers[0].At // when the worker signed it
				mu.Lock()
				old := signed[len(signed)-1]
				mu.Unlock()
				switch {
				case old && !at.Before(end):
					t.Errorf("an attempt made %v after the overlap's end was signed with the old secret too", at.Sub(end))
				case !old && at.Add(at.Sub(began)).Before(end):
					t.Errorf("an attempt made %v before the overlap's end, %v after its claim began, was signed with the new secret only; want both until the end less the claim's round trips", end.Sub(at), at.Sub(began))
				case old:
					both++
				default:
					newOnly++
				}
				if began.After(end) {
					break
				}
			}
			if newOnly == 0 {
				t.Fatalf("%d attempts signed with both secrets, none with the new only; the last began after the overlap's end", both)
			}
			if both == 0 {
				// A loaded machine's claims took more than half the
				// overlap: only the end was checked.
				t.Logf("no attempt was signed with both secrets: every claim took too long to check them")
			}
		})
	}
}
