package webhook_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/webhook"
)

// claim is one ClaimWebhookDeliveries call a claimLog saw.
type claim struct {
	start, end time.Time
	leased     int // deliveries returned
	err        error
}

// claimLog is a webhook.Store that forwards every call to the real
// store it wraps and records each claim, signalling it on claimed.
type claimLog struct {
	webhook.Store
	claimed chan struct{}

	mu     sync.Mutex
	claims []claim
}

func (l *claimLog) ClaimWebhookDeliveries(ctx context.Context, token string, now, leaseUntil time.Time, limit, perEndpoint int) ([]webhook.Due, error) {
	start := time.Now()
	dues, err := l.Store.ClaimWebhookDeliveries(ctx, token, now, leaseUntil, limit, perEndpoint)
	l.mu.Lock()
	l.claims = append(l.claims, claim{start: start, end: time.Now(), leased: len(dues), err: err})
	l.mu.Unlock()
	select {
	case l.claimed <- struct{}{}:
	default:
	}
	return dues, err
}

func (l *claimLog) first(n int) []claim {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]claim(nil), l.claims[:n]...)
}

// TestRunPollsWhileClaimsAreTooSlowToAttempt holds the doc of
// Service.Run: a worker whose database link is so slow that each claim
// leaves less of its lease than its attempts need (2 × Timeout) attempts
// nothing, and waits a PollInterval before it claims again, rather than
// claiming back to back, each claim leasing more deliveries it cannot
// send. Once the link is fast again, every delivery is sent, once. On
// PostgreSQL and MariaDB, through a link slowed so that a claim (three
// round trips) takes at least 6 × 110 ms, about 700 ms, well inside the
// (Lease - 2 × Timeout, Lease) = (550 ms, 1050 ms) window.
func TestRunPollsWhileClaimsAreTooSlowToAttempt(t *testing.T) {
	t.Parallel()
	const (
		timeout = 250 * time.Millisecond
		lease   = 1050 * time.Millisecond // just over the least New allows, 4 × timeout
		poll    = 300 * time.Millisecond
		latency = 110 * time.Millisecond // each way
		events  = 12                     // one endpoint: 4 a claim, so every slow claim leases some
		slow    = 3                      // claims made while the link is slow
	)
	for _, db := range serverDatabases {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel() // each on its own database and proxy: half the wall time
			ctx := context.Background()
			direct := db.dsn(t)
			proxy, proxied := faultproxy.StartFor(t, direct)
			defer proxy.Restore()
			rcv := countEvents(t, 0)
			// Events are queued by another process (b), so that no wake-up
			// of a's own makes it claim before its poll.
			b := newService(t, webhook.Config{Store: openStore(t, direct), AllowPrivate: true})
			ep, err := b.CreateEndpoint(ctx, "prj_a", rcv.URL)
			if err != nil {
				t.Fatal(err)
			}
			for range events {
				if err := b.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
					t.Fatal(err)
				}
			}
			log := &claimLog{Store: openStore(t, proxied), claimed: make(chan struct{}, 1000)}
			var logs bytes.Buffer // read once Run has returned
			a := newService(t, webhook.Config{Store: log, AllowPrivate: true, Timeout: timeout, Lease: lease, PollInterval: poll,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})

			proxy.SetLatency(latency)
			runCtx, stop := context.WithCancel(ctx)
			ran := make(chan error, 1)
			go func() { ran <- a.Run(runCtx) }()
			halt := sync.OnceFunc(func() { stop(); <-ran })
			defer halt()
			patience := time.After(10 * time.Second) // a hang guard
			for n := 0; n < slow; n++ {
				select {
				case <-log.claimed:
				case <-patience:
					t.Fatalf("Run made %d claims within 10 s, want %d", n, slow)
				}
			}
			proxy.SetLatency(0)

			claims := log.first(slow)
			for i, c := range claims {
				if i > 0 {
					t.Logf("claim %d began %v after the previous one ended", i, c.start.Sub(claims[i-1].end))
				}
				t.Logf("claim %d: %d leased in %v, %v", i, c.leased, c.end.Sub(c.start), c.err)
				if took := c.end.Sub(c.start); c.err != nil || c.leased == 0 || took <= lease-2*timeout || took >= lease {
					t.Fatalf("claim %d over the slow link: %d leased in %v, %v; the test needs each to lease deliveries in more than Lease - 2 × Timeout (%v) and less than Lease (%v)", i, c.leased, took, c.err, lease-2*timeout, lease)
				}
			}
			for i := 1; i < slow; i++ {
				if gap := claims[i].start.Sub(claims[i-1].end); gap < poll {
					t.Errorf("claim %d began %v after claim %d, which attempted nothing, ended; want a PollInterval (%v): the worker claims back to back, each claim leasing deliveries it will not send", i, gap, i-1, poll)
				}
			}

			// The link is fast again: what the slow claims leased is sent
			// once their leases run out, and nothing twice.
			allRecorded := allSucceeded(t, b, "prj_a", ep.ID, events)
			for deadline := time.Now().Add(10 * time.Second); !allRecorded(); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) { // a hang guard
					t.Fatal("not every delivery succeeded within 10 s of the link's return")
				}
			}
			halt()
			// The operator is told why nothing is sent.
			if got := strings.Count(logs.String(), "the claim took too long to attempt them"); got < slow {
				t.Errorf("the worker warned of %d claims too slow to attempt, want %d at least; logs:\n%s", got, slow, logs.String())
			}
			sent := rcv.counts()
			if len(sent) != events {
				t.Fatalf("the receiver got %d distinct events, want %d", len(sent), events)
			}
			for id, n := range sent {
				if n != 1 {
					t.Errorf("event %s reached the receiver %d times, want once", id, n)
				}
			}
		})
	}
}
