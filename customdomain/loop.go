package customdomain

import (
	"context"
	"time"

	"github.com/petstorekit/petstore"
)

// RunDue does the background work due at now: re-checks pending domains
// whose time has come, fails those past the propagation window, retries
// certificate requests and removals and asks the CertIssuer about issuing
// domains. It returns how many domains it looked at. Tests call it with a
// fake clock; Run calls it in production.
func (e *Engine) RunDue(ctx context.Context, now time.Time) (int, error) {
	now = now.UTC()
	done := 0
	if e.cfg.CertIssuer != nil {
		e.removeLeftoverCerts(ctx)
	}
	for {
		due, err := e.cfg.Store.DueDomains(ctx, now, 100)
		if err != nil {
			return done, err
		}
		var changed []string
		for _, entry := range due {
			if err := ctx.Err(); err != nil {
				return done, err
			}
			c, err := e.runOne(ctx, entry, now)
			if err != nil {
				e.cfg.Logger.Warn("background domain check failed", "domain", entry.Name, "err", err)
			}
			if c {
				changed = append(changed, entry.Name)
			}
			done++
		}
		if len(changed) > 0 {
			e.reload(ctx)
			e.publish(ctx, changed...)
		}
		if len(due) < 100 {
			return done, nil
		}
	}
}

func (e *Engine) runOne(ctx context.Context, entry Entry, now time.Time) (bool, error) {
	// Claim the entry first: of several processes sharing the store, only
	// the one whose update wins checks it now.
	entry.NextCheckAt = now.Add(2 * time.Minute)
	claimed, err := e.cfg.Store.UpdateDomain(ctx, entry)
	if err != nil {
		if petstore.ErrorCode(err) == petstore.CodeConflict {
			return false, nil
		}
		return false, err
	}
	entry = claimed
	if e.suspension(ctx, entry.ProjectID) != "" {
		// Suspended: nothing moves on until the project upgrades.
		entry.NextCheckAt = now.Add(suspendedRecheck)
		_, err := e.cfg.Store.UpdateDomain(ctx, entry)
		if petstore.ErrorCode(err) == petstore.CodeConflict {
			err = nil
		}
		return false, err
	}
	before := entry.Status
	requestCert := false
	switch entry.Status {
	case StatusPending:
		requestCert = e.apply(&entry, e.check(ctx, entry.Name, outstandingProof(entry), now), now, false)
	case StatusVerified:
		entry.UpdatedAt = now
		requestCert = e.startCert(&entry, now)
	case StatusIssuing:
		if e.cfg.CertIssuer == nil {
			e.transition(&entry, StatusActive, now, "")
			entry.NextCheckAt = time.Time{}
		} else {
			requestCert = e.advanceCert(ctx, &entry, now)
		}
	default:
		entry.NextCheckAt = time.Time{}
	}
	stored, err := e.cfg.Store.UpdateDomain(ctx, entry)
	if petstore.ErrorCode(err) == petstore.CodeConflict {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if requestCert { // only now that the write won
		e.requestCert(ctx, stored)
	}
	stored = e.recheckCert(ctx, stored)
	return before != stored.Status, nil
}

// recheckCert asks the issuer once more about a domain that has just been
// stored as issuing and whose certificate was just requested: when the
// certificate already exists (another process obtained it into shared
// storage) the issuer has it at once, and an issuer that reports changes
// through another path than CertificateChanged (or none) would otherwise
// leave the domain issuing until the next background check.
func (e *Engine) recheckCert(ctx context.Context, entry Entry) Entry {
	if entry.Status != StatusIssuing || e.cfg.CertIssuer == nil {
		return entry
	}
	if err := e.CertificateChanged(ctx, entry.Name); err != nil {
		return entry
	}
	if again, err := e.cfg.Store.DomainByName(ctx, entry.Name); err == nil {
		return again
	}
	return entry
}

// Run does the background work until ctx ends: every RefreshEvery it runs
// RunDue and reloads the routing table, so changes made by other processes
// sharing the store reach this one within that time. It returns ctx's error.
func (e *Engine) Run(ctx context.Context) error {
	t := time.NewTicker(e.cfg.RefreshEvery)
	defer t.Stop()
	for {
		if _, err := e.RunDue(ctx, e.now()); err != nil && ctx.Err() == nil {
			e.cfg.Logger.Error("domain background checks failed", "err", err)
		}
		if err := e.Refresh(ctx); err != nil && ctx.Err() == nil {
			e.cfg.Logger.Error("domain routing refresh failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
