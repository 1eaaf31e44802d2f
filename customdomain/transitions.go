package customdomain

import (
	"context"
	"fmt"
	"time"

	"github.com/petstorekit/petstore"
)

// CertificateChanged tells the engine that name's certificate changed
// state, so an issuing domain becomes active (or failed) now rather than at
// the next background check. The certificate layer calls it.
func (e *Engine) CertificateChanged(ctx context.Context, name string) error {
	if e.cfg.CertIssuer == nil {
		return nil
	}
	n, err := ParseName(name)
	if err != nil {
		return err
	}
	e.forgetCert(n.ASCII) // renewed, failed or obtained: the next view asks
	stored, written, err := e.update(ctx, func() (Entry, error) { return e.cfg.Store.DomainByName(ctx, n.ASCII) },
		func(entry *Entry) (bool, error) {
			if entry.Status != StatusIssuing {
				return false, nil
			}
			e.advanceCert(ctx, entry, e.now()) // no new request: the issuer just reported
			return entry.Status != StatusIssuing, nil
		})
	if petstore.ErrorCode(err) == petstore.CodeConflict {
		return nil // still changing: whoever changes it decides, and the loop checks again
	}
	if err != nil || !written {
		return err
	}
	e.reload(ctx)
	e.publish(ctx, stored.Name)
	return nil
}

// update owns the optimistic-concurrency loop of every change to a
// stored domain: read the entry, let change edit it (and say whether
// there is anything to write), and write it if its version is still the
// one read; on a conflict (another process, or the background loop,
// wrote it meanwhile) read it again, three times at most, then answer
// conflict. It returns the entry as stored, and whether it was written.
// Effects outside the store (a certificate request) belong after it
// returns, so that a lost write has none.
func (e *Engine) update(ctx context.Context, read func() (Entry, error), change func(*Entry) (write bool, err error)) (Entry, bool, error) {
	for range 3 {
		entry, err := read()
		if err != nil {
			return Entry{}, false, err
		}
		write, err := change(&entry)
		if err != nil || !write {
			return entry, false, err
		}
		stored, err := e.cfg.Store.UpdateDomain(ctx, entry)
		if petstore.ErrorCode(err) == petstore.CodeConflict {
			continue
		}
		if err != nil {
			return Entry{}, false, err
		}
		return stored, true, nil
	}
	return Entry{}, false, petstore.Errorf(petstore.CodeConflict, "the domain is changing right now; try again")
}

// transition records a status change in the entry and its history.
func (e *Engine) transition(entry *Entry, s Status, now time.Time, reason string) {
	if entry.Status == s && entry.Reason == reason {
		return
	}
	entry.Status, entry.Reason = s, reason
	entry.History = append(entry.History, Transition{Status: s, At: now, Reason: reason})
}

// apply records a check in the entry and moves it on. manual is true for
// Verify (a person asked), false for the background loop. It does no I/O:
// it reports whether a certificate must be requested, which the caller
// does once the entry is written (requestCert), so that a write that
// loses a race requests nothing.
func (e *Engine) apply(entry *Entry, res checkResult, now time.Time, manual bool) (requestCert bool) {
	entry.Attempts++
	entry.CheckedAt = now
	entry.UpdatedAt = now
	entry.Findings = res.findings
	if !res.lookupFailed {
		entry.Observed = res.observed
	}
	switch {
	case res.ok:
		switch entry.Status {
		case StatusPending, StatusFailed:
			entry.VerifiedAt = now
			e.transition(entry, StatusVerified, now, "")
			return e.startCert(entry, now)
		case StatusVerified:
			return e.startCert(entry, now)
		case StatusIssuing:
			if manual { // Re-verify: a new certificate attempt
				entry.VerifiedAt = now
				return e.startCert(entry, now)
			}
		}
	case entry.Status == StatusFailed && manual:
		entry.PendingSince = now
		e.transition(entry, StatusPending, now, "")
		entry.NextCheckAt = now.Add(time.Minute)
	case entry.Status == StatusPending:
		e.schedule(entry, now, res)
	}
	return false
}

// schedule sets when a pending entry is checked next: every minute in the
// first hour, then less often, and fails it once the window has passed.
func (e *Engine) schedule(entry *Entry, now time.Time, res checkResult) {
	deadline := entry.PendingSince.Add(e.cfg.PropagationWindow)
	if !now.Before(deadline) && res.lookupFailed {
		// "Could not check" is never a verdict: keep trying.
		entry.NextCheckAt = now.Add(RecheckInterval(now.Sub(entry.PendingSince)))
		return
	}
	if !now.Before(deadline) {
		reason := "the DNS records were not right within " + windowWords(e.cfg.PropagationWindow)
		if len(res.findings) > 0 {
			reason += ": " + res.findings[0].Message
		}
		e.transition(entry, StatusFailed, now, reason)
		entry.NextCheckAt = time.Time{}
		return
	}
	next := now.Add(RecheckInterval(now.Sub(entry.PendingSince)))
	if next.After(deadline) {
		next = deadline
	}
	entry.NextCheckAt = next
}

func windowWords(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return d.String()
}

// RecheckInterval is how long the background loop waits before checking a
// pending domain again, given how long it has been pending: every minute in
// the first hour (most DNS changes show within minutes), then backing off
// to at most every 30 minutes.
func RecheckInterval(pending time.Duration) time.Duration {
	switch {
	case pending < time.Hour:
		return time.Minute
	case pending < 3*time.Hour:
		return 5 * time.Minute
	case pending < 12*time.Hour:
		return 15 * time.Minute
	}
	return 30 * time.Minute
}

// startCert moves a verified entry on: straight to active without a
// CertIssuer, else to issuing, reporting that the certificate is to be
// requested once the entry is written (requestCert).
func (e *Engine) startCert(entry *Entry, now time.Time) (requestCert bool) {
	if e.cfg.CertIssuer == nil {
		e.transition(entry, StatusActive, now, "")
		entry.NextCheckAt = time.Time{}
		return false
	}
	e.transition(entry, StatusIssuing, now, "")
	entry.NextCheckAt = now.Add(time.Minute)
	return true
}

// requestCert asks the issuer for the certificate of an entry just written
// as issuing. A request that fails is retried by the background check
// within a minute: the issuer then knows nothing of the name (CertNone),
// and advanceCert asks again.
func (e *Engine) requestCert(ctx context.Context, entry Entry) {
	if err := e.cfg.CertIssuer.Request(ctx, entry.Name); err != nil {
		e.cfg.Logger.Warn("certificate request failed; will retry", "domain", entry.Name, "err", err)
	}
	e.forgetCert(entry.Name)
}

// advanceCert asks the CertIssuer about an issuing entry. It reports
// whether to request the certificate again, which the background check
// does once its write won: an issuer that knows nothing of the name
// (CertNone: it restarted, or it is another process than the one that
// verified the name, and no certificate is in shared storage) is asked
// again, at most once per check, so the domain cannot stay issuing forever.
func (e *Engine) advanceCert(ctx context.Context, entry *Entry, now time.Time) (rerequest bool) {
	st, err := e.readCert(ctx, entry.Name)
	entry.NextCheckAt = now.Add(time.Minute)
	if err != nil {
		e.cfg.Logger.Warn("certificate status unknown; will retry", "domain", entry.Name, "err", err)
		return false
	}
	switch st.State {
	case CertNone:
		return true
	case CertIssued:
		entry.UpdatedAt = now
		e.transition(entry, StatusActive, now, "")
		entry.NextCheckAt = time.Time{}
	case CertFailed:
		entry.UpdatedAt = now
		reason := st.Reason
		if reason == "" {
			reason = "the certificate authority refused the certificate"
		}
		e.transition(entry, StatusFailed, now, reason)
		entry.NextCheckAt = time.Time{}
	}
	return false
}
