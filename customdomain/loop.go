package customdomain

import (
	"context"
	"slices"
	"sync"
	"time"
)

// RunDue does the background work due at now: re-checks pending domains
// whose time has come (failing those past the propagation window), re-checks
// live domains' records for drift, asks the CertIssuer about issuing
// domains, looks again at domains failed for lack of a certificate (see
// Step), retries certificate removals and the deletions of records
// ConfigureDNS wrote (those of domains any engine on the store removed,
// which DueDomains returns with the others), and then hands Events the
// events of stored changes not handed over yet (DueOutboxes), whichever
// engine stored them: last, so that an Events that is slow to answer
// never holds up the checks. Once one hand-off of the round has run out
// of EngineConfig.HandOffTimeout (or answered after more than half of
// it), it tries no other, and leaves their
// events waiting in their entries for a later round: an Events that
// hangs holds the round up about one timeout, however many domains
// changed. It returns how many domains it looked at.
// Tests call it with a fake clock; Run calls it in production.
func (e *Engine) RunDue(ctx context.Context, now time.Time) (int, error) {
	now = now.UTC()
	r := &round{background: true}
	done, err := e.runDueDomains(ctx, r, now)
	if err != nil {
		return done, err
	}
	return done, e.retryOutboxes(ctx, r, now)
}

// runDueDomains is RunDue's work on the domains DueDomains returns.
func (e *Engine) runDueDomains(ctx context.Context, r *round, now time.Time) (int, error) {
	done := 0
	if (e.cfg.RecheckActive > 0 || e.cfg.CertIssuer != nil) && e.unscheduled.CompareAndSwap(false, true) {
		// Domains that went active before drift checks (or, without
		// them, looks at certificates) existed have no next check, nor
		// do those that failed for lack of a certificate before the loop
		// looked at them (certRecheck): check them once now, which
		// schedules them.
		listed, err := e.cfg.Store.ListDomains(ctx, DomainQuery{Status: StatusActive})
		if err == nil && e.cfg.CertIssuer != nil {
			var failed []Entry
			failed, err = e.cfg.Store.ListDomains(ctx, DomainQuery{Status: StatusFailed})
			listed = append(listed, slices.DeleteFunc(failed, func(en Entry) bool { return !failedIssuing(en.History) })...)
		}
		if err != nil {
			e.unscheduled.Store(false)
			return done, err
		}
		for _, entry := range listed {
			if entry.NextCheckAt.IsZero() {
				e.runOne(ctx, r, entry)
				done++
			}
		}
	}
	// A domain whose write failed is still due, so the next batch holds
	// it again: each is run once per call, each batch asks for the ones
	// run so far plus 100 new, and a batch with nothing new ends the call
	// (the next one retries them). By ID: a name's removed entries and
	// its holder may all be due.
	ran := map[string]bool{}
	for {
		limit := len(ran) + 100
		due, err := e.cfg.Store.DueDomains(ctx, now, limit)
		if err != nil {
			return done, err
		}
		fresh := 0
		for _, entry := range due {
			if err := ctx.Err(); err != nil {
				return done, err
			}
			if ran[entry.ID] {
				continue
			}
			ran[entry.ID] = true
			fresh++
			if entry.Status.FreesName() {
				// Due only while its certificate or records it wrote
				// at the DNS provider are still to be removed; the
				// lifecycle has nothing more for it.
				e.retryCleanup(ctx, entry, now)
			} else {
				e.runOne(ctx, r, entry)
			}
			done++
		}
		if len(due) < limit || fresh == 0 {
			return done, nil
		}
	}
}

// runOne gathers what entry's next step needs and applies it through
// change, once: of several processes sharing the store, the one whose
// write wins moves the domain on, and the others, finding it changed,
// leave it to that one.
func (e *Engine) runOne(ctx context.Context, r *round, entry Entry) {
	var ev Event
	switch {
	case e.held(ctx, entry):
		ev = PlanChanged{Suspended: true}
	case entry.Status == StatusIssuing, entry.Status == StatusActive && e.cfg.RecheckActive <= 0:
		// Without drift checks, an active domain is due only for a look
		// at its certificate (certRecheck).
		ev = CertReported{Cert: e.certNow(ctx, entry.Name)}
	default:
		ev = e.gather(ctx, entry, false)
	}
	read := func() (Entry, error) { return entry, nil }
	stored, err := e.change(ctx, r, 1, read, ev)
	if err != nil {
		if !isConflict(err) {
			e.cfg.Logger.Warn("background domain check failed", "domain", entry.Name, "err", err)
		}
		return
	}
	if _, waits := ev.(PlanChanged); waits {
		// Left as it is: an issuing domain whose certificate came
		// meanwhile goes active only once its checks resume.
		return
	}
	e.settle(ctx, r, stored)
}

// Run does the background work until ctx ends: every RefreshEvery it
// reloads the routing table, so changes made by other processes sharing
// the store reach this one within that time, and, in its own loop so that
// slow DNS never holds a reload back, looks up the edge's addresses again
// (when EdgeIPs is empty) and runs RunDue as often. It returns ctx's
// error once both loops have stopped.
func (e *Engine) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() {
		every(ctx, e.cfg.RefreshEvery, func() {
			if len(e.cfg.EdgeIPs) == 0 {
				e.lookupEdge(ctx)
			}
			if _, err := e.RunDue(ctx, e.now()); err != nil && ctx.Err() == nil {
				e.cfg.Logger.Error("domain background checks failed", "err", err)
			}
		})
	})
	every(ctx, e.cfg.RefreshEvery, func() {
		if err := e.reloadRoutes(ctx, true); err != nil && ctx.Err() == nil {
			e.cfg.Logger.Error("domain routing refresh failed", "err", err)
		}
	})
	wg.Wait()
	return ctx.Err()
}

// every runs do at once and then every d, never two at a time (a tick
// that comes while do runs is dropped), until ctx ends.
func every(ctx context.Context, d time.Duration, do func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		do()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
