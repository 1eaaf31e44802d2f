package customdomain

import (
	"context"
	"reflect"
	"time"

	"github.com/petstorekit/petstore"
)

// This file is what a removal or release leaves to do after its write:
// remove the name's certificate and delete the records ConfigureDNS
// wrote. The write marked both pending in the entry (CertRemovalPending,
// DNSRecords, and NextCheckAt for when to try again), so that no process's
// memory is needed: the engine that wrote it tries at once (cleanUp), and
// any engine's RunDue tries again when it is due (retryCleanup).

// cleanUp removes the certificate of en, a removed or released entry as
// stored, and deletes its records at the DNS provider, as far as they are
// pending, and records what it did (see Entry.CertRemovalPending). It
// returns the entry as stored afterwards. A failure is logged, not
// returned, as the removal itself is done: what is still pending stays
// in the store, retried from there by any engine's RunDue, also when this
// process ends first.
//
// A name attached again meanwhile (the removal's earlier steps take time,
// or its retries waited) is not cleaned from under its new holder. Its
// certificate is kept, whichever project holds the name now: it is the
// platform's certificate for the name, the new domain uses it once it
// verifies (the CertIssuer finds it in storage), and the new domain's own
// removal or release removes it. Its records are the project's, at the
// project's DNS provider: the same project's new domain takes them over
// (they are in the zone, ConfigureDNS left them alone as already right,
// and its removal deletes them); another project's keeps them out of
// reach, so they stay pending with en, to delete once the name is free
// again, as nothing else would ever delete them.
func (e *Engine) cleanUp(ctx context.Context, en Entry) Entry {
	certDone, dnsDone := false, false
	if en.CertRemovalPending && e.cfg.CertIssuer != nil {
		// Each step asks who holds the name just before it: the
		// certificate's removal takes time, during which the name may be
		// attached again.
		switch _, err := e.cfg.Store.DomainByName(ctx, en.Name); {
		case err == nil:
			certDone = true
		case petstore.ErrorCode(err) != petstore.CodeNotFound:
			e.cfg.Logger.Warn("domain removed but its certificate was not; will retry", "domain", en.Name, "err", err)
		default:
			err := e.cfg.CertIssuer.Remove(ctx, en.Name)
			e.forgetCert(en.Name)
			if err != nil {
				// The removal stands (it is stored and the name is no
				// longer routed or admitted).
				e.cfg.Logger.Error("domain removed but its certificate was not; will retry", "domain", en.Name, "err", err)
			} else {
				certDone = true
			}
		}
	}
	// Without DNS this engine cannot delete them: they stay pending, for
	// an engine that can (replicas may be configured differently).
	if len(en.DNSRecords) > 0 && e.cfg.DNS != nil {
		switch holder, err := e.cfg.Store.DomainByName(ctx, en.Name); {
		case err == nil && holder.ProjectID == en.ProjectID:
			mine := func(cur Entry) bool { return cur.ProjectID == en.ProjectID }
			if err := e.addDNSRecords(ctx, en.Name, mine, en.DNSRecords); err != nil {
				e.cfg.Logger.Warn("leftover DNS records not handed to the domain added again; will retry", "domain", en.Name, "err", err)
			} else {
				dnsDone = true
			}
		case err == nil: // held by another project: kept until the name is free
		case petstore.ErrorCode(err) != petstore.CodeNotFound:
			e.cfg.Logger.Warn("domain removed but its records at the DNS provider were not; will retry", "domain", en.Name, "err", err)
		default:
			if err := e.deleteDNS(ctx, en); err != nil {
				e.cfg.Logger.Warn("domain removed but its records at the DNS provider were not; will retry", "domain", en.Name, "err", err)
			} else {
				dnsDone = true
			}
		}
	}
	return e.cleaned(ctx, en, certDone, dnsDone)
}

// retryCleanup tries once more what the removal or release of en left
// pending, en being a removed or released entry DueDomains returned: its
// NextCheckAt is when the attempt is due. It is tried by one engine at a
// time, less often the longer it waits, as the background checks are
// (every minute in the first hour, then up to every 30 minutes), until
// nothing is pending. It first claims the attempt by moving NextCheckAt
// on (a version-checked write: of several replicas reading en, one wins,
// and a process that dies mid-way leaves it due again then), so the
// certificate is removed and the records are deleted once, not by every
// replica; a step done but not recorded, as the store failed or the
// process ended right after it, is tried again, which removes nothing
// more (a removed certificate is gone, and only records still exactly as
// written are deleted).
//
// An engine claims only what it can do: without a CertIssuer it does not
// remove the certificate, and without DNS (EngineConfig.DNS) it does not
// delete the records, and it leaves what it cannot do due when it was.
// Replicas of mixed configuration may share the store, and its claims
// would otherwise move that work away from the engines that can do it,
// every time, for as long as it runs.
func (e *Engine) retryCleanup(ctx context.Context, en Entry, now time.Time) {
	cert := en.CertRemovalPending && e.cfg.CertIssuer != nil
	dns := len(en.DNSRecords) > 0 && e.cfg.DNS != nil
	if !cert && !dns {
		if !en.CertRemovalPending && len(en.DNSRecords) == 0 { // nothing to do: never due again
			e.cleaned(ctx, en, false, false)
		}
		return
	}
	freed := en.UpdatedAt
	if len(en.History) > 0 {
		freed = en.History[len(en.History)-1].At
	}
	claim := en.Canonical()
	claim.NextCheckAt = now.Add(recheckInterval(now.Sub(freed)))
	claimed, err := e.cfg.Store.UpdateDomain(ctx, claim)
	if err != nil {
		if !isConflict(err) { // a conflict: another engine has it
			e.cfg.Logger.Warn("leftovers of a removed domain not retried; will retry", "domain", en.Name, "err", err)
		}
		return
	}
	after := e.cleanUp(ctx, claimed)
	mine := cert && after.CertRemovalPending || dns && len(after.DNSRecords) > 0
	if !mine && after.NextCheckAt.Equal(claim.NextCheckAt) {
		// What is left is due when it was, for an engine configured to do
		// it. A step of its own that failed keeps the claim's time
		// instead, so that this engine retries it less often.
		back := after.Canonical()
		back.NextCheckAt = en.NextCheckAt
		if _, err := e.cfg.Store.UpdateDomain(ctx, back); err != nil && !isConflict(err) {
			e.cfg.Logger.Warn("a removed domain's certificate removal waits longer than due", "domain", en.Name, "err", err)
		}
	}
}

// cleaned records in en, a removed or released entry, that its
// certificate was removed (certDone) and its records at the DNS provider
// deleted or handed over (dnsDone), and zeroes NextCheckAt once nothing
// is pending, so that DueDomains no longer returns it. An entry changed
// meanwhile (a released one dismissed, or another engine's claim after
// the lease) is read again and written so too. It returns the entry as
// stored afterwards. A write that fails leaves the steps due, to be tried
// again.
func (e *Engine) cleaned(ctx context.Context, en Entry, certDone, dnsDone bool) Entry {
	for range 3 {
		next := en.Canonical()
		if certDone {
			next.CertRemovalPending = false
		}
		if dnsDone {
			next.DNSRecords = nil
		}
		if !next.CertRemovalPending && len(next.DNSRecords) == 0 {
			next.NextCheckAt = time.Time{}
		}
		if reflect.DeepEqual(next, en.Canonical()) {
			return en
		}
		stored, err := e.cfg.Store.UpdateDomain(ctx, next)
		if err == nil {
			return stored
		}
		if !isConflict(err) {
			e.cfg.Logger.Warn("a removed domain's certificate or records were removed but this was not stored; will try again", "domain", en.Name, "err", err)
			return en
		}
		cur, ok, err := e.freedEntry(ctx, en)
		if err != nil || !ok {
			return en
		}
		en = cur
	}
	return en
}

// freedEntry reads en again, from the removed and released entries of its
// project and name.
func (e *Engine) freedEntry(ctx context.Context, en Entry) (Entry, bool, error) {
	for _, st := range []Status{StatusRemoved, StatusReleased} {
		freed, err := e.cfg.Store.ListDomains(ctx, DomainQuery{ProjectID: en.ProjectID, Name: en.Name, Status: st})
		if err != nil {
			return Entry{}, false, err
		}
		for _, cur := range freed {
			if cur.ID == en.ID {
				return cur, true, nil
			}
		}
	}
	return Entry{}, false, nil
}
