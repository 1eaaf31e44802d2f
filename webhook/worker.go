package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/petstorekit/petstore"
)

// claimBatch is how many deliveries one DeliverDue claims, and
// perEndpoint how many of them may go to one endpoint. It sends all it
// claimed at once, so a receiver that hangs holds up its own deliveries
// only: the rest of the claim is sent, and the next claim made, within
// about one Timeout, however many of its deliveries are due.
const (
	claimBatch  = 32
	perEndpoint = 4
)

// userAgent names the sender to receivers.
const userAgent = "petstore-webhooks/1"

// DeliverDue claims the deliveries due now (at most 32 of them, and at
// most 4 of one endpoint), makes one attempt of each, all
// at once, records the answers and schedules retries, and returns how
// many it attempted. Run calls it in a loop; tests call it with an
// injected clock. A delivery leased to another process is left to it.
//
// Another process may claim a delivery once its lease has run out, so an
// attempt starts only while the lease has room for it and for recording
// its answer (a Timeout each), and the answer is recorded before the
// lease ends or not at all. A claim that leaves less than that (a slow
// database) attempts none of its batch, which waits for the lease to
// run out: DeliverDue logs a warning and returns 0, nil. An answer not
// recorded in time (a database paused mid-batch) is sent again, as
// after a crash. The claim ends with the lease too, so DeliverDue
// returns within Config.Lease whatever the store does.
//
// A store shared by processes judges leases, due times and the age of
// deliveries on its own clock (bunstore: the database's), from the
// lengths the processes pass (the lease, a retry's wait), so processes
// whose clocks (Config.Now) disagree, by minutes or days even, neither
// take over an attempt in flight nor make a retry early, and give a
// delivery up once Config.RetryFor has passed on that clock since its
// event was enqueued (Due.Age), neither later nor earlier. The room
// left in a lease is measured on this process's monotonic clock from
// before the claim, so it runs out here before it does in the store. A
// store that judges them on its callers' times (memstore, one process;
// bunstore.CallerClock, for tests with a fake clock) needs the
// processes' clocks within Config.Timeout of each other.
func (s *Service) DeliverDue(ctx context.Context) (int, error) {
	leaseEnd := time.Now().Add(s.cfg.Lease) // real time, from before the claim
	// The claim itself ends with the lease: what it returned later could
	// not be attempted, and a link lost without a reset would otherwise
	// hold the worker until the kernel gives up on the connection.
	ctx, cancel := context.WithDeadline(ctx, leaseEnd)
	defer cancel()
	now := s.now()
	token := uuid.NewString()
	dues, err := s.store.ClaimWebhookDeliveries(ctx, token, now, now.Add(s.cfg.Lease), claimBatch, perEndpoint)
	if err != nil {
		return 0, err
	}
	if left := time.Until(leaseEnd); left < 2*s.cfg.Timeout {
		if len(dues) > 0 {
			s.log.Warn("webhook deliveries: the claim took too long to attempt them; they wait for their lease to run out",
				"claimed", len(dues), "left", left.Round(time.Millisecond), "lease", s.cfg.Lease)
		}
		return 0, nil
	}
	var wg sync.WaitGroup
	for _, due := range dues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.attempt(ctx, token, now, due)
		}()
	}
	wg.Wait()
	return len(dues), nil
}

// Run delivers due deliveries until ctx is done: at once after Enqueue
// in this process, and by polling for the rest (retries, and events
// enqueued by other processes). It calls DeliverDue again at once after
// one that attempted deliveries, since more may be due, and otherwise
// (nothing due, a failed claim, a claim too slow to attempt its batch)
// a Config.PollInterval after that call returned. So a database too
// slow for a claim's attempts gets one claim per PollInterval, not one
// after another each leasing deliveries it cannot send. It also deletes
// finished deliveries older than Config.Retention, and erases rolled
// secrets whose overlap has ended, hourly, while deliveries keep being
// due as well as when none are: after a claim that did not fail, and,
// after a purge that failed, again a minute later. The purge runs beside
// the claims, one at a time, so that its round trips (a slow database's)
// never delay the next claim. No store call holds it longer than
// Config.Lease, so a database that stops answering delays the next poll,
// never stops them. It returns nil when ctx is done, once its purge has
// ended.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTimer(s.cfg.PollInterval)
	defer t.Stop()
	defer s.client.CloseIdleConnections()
	var purging sync.WaitGroup
	defer purging.Wait()
	for {
		n, err := s.DeliverDue(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("webhook deliveries: claim failed; retrying at the next poll", "err", err)
		}
		// Hourly, however long deliveries keep being due: a backlog
		// must not keep old deliveries, or a secret past its overlap,
		// for as long as it lasts. Only after a claim the store
		// answered: one that cannot claim cannot purge either, and
		// waiting for it twice would double each poll's delay. Beside
		// the next claim, which it must not delay: on a slow link its
		// round trips would hold up an event queued for another
		// endpoint past its bound.
		if err == nil && s.purgeMu.TryLock() { // else the last one still runs
			purging.Go(func() {
				defer s.purgeMu.Unlock()
				s.purge(ctx)
			})
		}
		if n > 0 && ctx.Err() == nil {
			// More may be due: a claim takes only a few of one
			// endpoint's, and each claim ends within about a Timeout.
			continue
		}
		// The next poll is a PollInterval after this claim (or purge)
		// ended, not after the last one began: a claim slower than the
		// interval (a slow database's) would otherwise find a tick
		// waiting and claim again at once, leasing more it cannot send.
		t.Reset(s.cfg.PollInterval)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-s.wake:
		}
	}
}

// purgeRetry is how soon a purge that failed is made again, rather than
// an hour later: a database blip must not keep a secret past its overlap
// for another hour.
const purgeRetry = time.Minute

// purge deletes old finished deliveries, at most once an hour, or a
// purgeRetry after one that failed. s.purgeMu is held.
func (s *Service) purge(ctx context.Context) {
	now := s.now()
	if now.Before(s.nextPurge) {
		return
	}
	// Bounded as a claim is, so that a paused database cannot hold it,
	// and Run's return, past a lease.
	pctx, cancel := context.WithTimeout(ctx, s.cfg.Lease)
	defer cancel()
	if _, err := s.store.PurgeWebhookDeliveries(pctx, now, now.Add(-s.cfg.Retention)); err != nil {
		if ctx.Err() == nil {
			s.log.Warn("webhook deliveries: purge failed; trying again in a minute", "err", err)
		}
		s.nextPurge = now.Add(purgeRetry)
		return
	}
	s.nextPurge = now.Add(time.Hour)
}

// attempt sends one delivery, claimed at claimed, once and records the
// answer.
func (s *Service) attempt(ctx context.Context, token string, claimed time.Time, due Due) {
	d := due.Delivery
	// When the event was enqueued, on this process's clock: the store
	// measured its age on its own.
	enqueued := claimed.Add(-due.Age)
	at := s.now()
	started := time.Now() // the duration is real time, whatever the clock says
	status, body, wait, err := s.post(ctx, due.Endpoint, d.Payload, at)
	if ctx.Err() != nil {
		// Shutting down, or the lease ended: it runs out and a process
		// retries this attempt; recording it would need the context that
		// just ended.
		return
	}
	d.Attempts++
	ans := Answer{Attempt: d.Attempts, At: at.UTC(), StatusCode: status, Body: body, DurationMS: time.Since(started).Milliseconds()}
	if err != nil {
		// The error may quote what the receiver sent (a garbled status
		// line): kept as short as its body, it cannot grow the delivery
		// past what the store takes, nor the log line below.
		ans.Error = answerBody([]byte(err.Error()))
	}
	d.Answers = append(d.Answers, ans)
	if len(d.Answers) > MaxAnswers {
		d.Answers = d.Answers[len(d.Answers)-MaxAnswers:]
	}
	switch next, ok := nextAttempt(enqueued, at, d.Attempts, s.jitter(), s.cfg.RetryFor, wait); {
	case err == nil && status >= 200 && status <= 299:
		d.State, d.NextAttemptAt = StateSucceeded, time.Time{}
	case ok:
		d.State, d.NextAttemptAt = StatePending, next
	default:
		d.State, d.NextAttemptAt = StateFailed, time.Time{}
	}
	log := s.log.With("endpoint", d.EndpointID, "event", d.EventID, "type", d.Type, "attempt", d.Attempts, "status", status)
	if d.State != StateSucceeded {
		// Never the URL (it may carry the receiver's own token) nor the
		// secret nor a body.
		log.Info("webhook delivery failed", "state", d.State, "next", d.NextAttemptAt, "err", logSafe(ans.Error))
	}
	switch err := s.store.FinishWebhookAttempt(ctx, token, s.now(), d); {
	case err == nil:
	case petstore.ErrorCode(err) == petstore.CodeNotFound:
		log.Info("webhook delivery: its endpoint was deleted during the attempt; no further attempt is made")
	default:
		log.Warn("webhook delivery: answer not recorded; the attempt will be made again", "err", err)
	}
}

// maxLogError bounds the why-no-answer a failed delivery's log line
// quotes: the delivery keeps MaxAnswerBody bytes of it, the log less.
const maxLogError = 200

// logSafe is why an attempt got no answer as a log line may quote it:
// it can hold what the receiver sent (a garbled status line or header),
// so every character that is not printable, a control or a bidi override
// among them, becomes "?", and it is cut after at most maxLogError bytes,
// at a character boundary, marked with "…".
func logSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		if !unicode.IsPrint(r) {
			r = '?'
		}
		if b.Len()+utf8.RuneLen(r) > maxLogError {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// post sends payload to e signed at at, and returns the status, the
// start of the answer's body and how long the receiver asks to wait
// before the next attempt (retryAfter), or why there was no answer.
func (s *Service) post(ctx context.Context, e Endpoint, payload []byte, at time.Time) (int, string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(payload))
	if err != nil {
		return 0, "", 0, errors.New("the endpoint's URL cannot be requested")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set(SignatureHeader, e.signature(at, payload))
	res, err := s.client.Do(req)
	if err != nil {
		return 0, "", 0, attemptError(err, s.cfg.Timeout)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, MaxAnswerBody+utf8.UTFMax))
	// Read on a little, so that the connection can be used again.
	_, _ = io.CopyN(io.Discard, res.Body, 64<<10)
	return res.StatusCode, answerBody(b), retryAfter(res.StatusCode, res.Header, at), nil
}

// answerBody keeps the first MaxAnswerBody bytes of an answer (or of why
// there was none), cut at a character boundary, as valid UTF-8.
func answerBody(b []byte) string {
	if len(b) > MaxAnswerBody {
		b = b[:MaxAnswerBody]
		// Drop a character the cut went through.
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
			if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// attemptError says why an attempt got no answer, in words a project
// can act on, without the Go client's "Post <url>:" prefix.
func attemptError(err error, timeout time.Duration) error {
	var refused *refusedAddrError
	switch {
	case errors.As(err, &refused):
		return refused
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("no answer within %v", timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("no answer within %v", timeout)
		}
		return ue.Err
	}
	return err
}
