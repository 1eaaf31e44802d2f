package customdomain

import (
	"context"
	"reflect"
	"time"

	"github.com/petstorekit/petstore"
)

// Events receives a domain's lifecycle events, for webhooks or email,
// with the domain as the dashboard showed it when the change was stored.
// The types are EventAdded ("domain.added"), EventVerified, EventActive,
// EventMisconfigured, EventCertIssued, EventCertFailed and EventRemoved
// (removed by the customer, or released after drift).
//
// Each event is stored with its change, in the same write (the entry's
// Outbox), so a stored change always has its event: the engine calls
// DomainEvent once the write won, and again, from any engine's RunDue on
// the store, until a call returns nil. So an event may be told more than
// once, also by several processes at a time, always with the same ID:
// an implementation must store it once per ID (a second call with an ID
// it has is a no-op that returns nil) and return nil only once the event
// is durably its own. It is called from the request or background
// goroutine that made the change, so it must return quickly (queue, do
// not deliver inline) and honour ctx's deadline, at most
// EngineConfig.HandOffTimeout away (the engine gives up on a call then,
// and tells the event again later), and must be safe for concurrent use.
// Set it on every engine sharing a store, or the events of one wait in
// the store for an engine that has it.
type Events interface {
	DomainEvent(ctx context.Context, projectID string, ev PendingEvent) error
}

// policy is Step's view of the configuration.
func (e *Engine) policy() Policy {
	return Policy{
		Window:  e.cfg.PropagationWindow,
		Issuer:  e.cfg.CertIssuer != nil,
		Recheck: e.cfg.RecheckActive,
		Grace:   e.cfg.DriftGrace,
	}
}

// change is the one optimistic write loop of every change to a stored
// domain (Verify, Remove, CertificateChanged, the background loop): read
// the entry, apply Step with the event (whose inputs the caller gathered
// before: no I/O runs between the read and the write), and write it if
// its version is still the one read; on a conflict (another process, or
// the background loop, wrote it meanwhile) read it again, at most tries
// times, then answer conflict. The effects run only once the write won,
// so a lost write has none. The events the change emits are stored with
// it, in the same write (record), and handed to Events after it, unless
// a hand-off of r already ran out of time (see round). The
// view they carry needs I/O (eventView): when what was looked up does not
// fit the entry read, it is looked up for it, and the entry is read
// again (at most tries lookups, with the same now, so the view looked up
// is the one stored when nothing changed meanwhile). It returns the entry
// as stored.
func (e *Engine) change(ctx context.Context, r *round, tries int, read func() (Entry, error), ev Event) (Entry, error) {
	var (
		looked  *eventView
		lookups int
		now     time.Time // kept from a lookup to the read after it
	)
	for try := 0; try < tries; {
		entry, err := read()
		if err != nil {
			return Entry{}, err
		}
		if now.IsZero() {
			now = e.now()
		}
		next, effects := Step(entry, ev, now, e.policy())
		if reflect.DeepEqual(next, entry.Canonical()) {
			return entry, nil
		}
		view, ok := e.eventDomain(looked, next, effects)
		if !ok && lookups < tries {
			looked, lookups = e.lookUpView(ctx, next), lookups+1
			continue
		}
		at := now
		try, now = try+1, time.Time{}
		if !ok { // the entry changed during every lookup
			continue
		}
		dropped := e.record(&next, effects, at, view)
		stored, err := e.cfg.Store.UpdateDomain(ctx, next)
		if petstore.ErrorCode(err) == petstore.CodeConflict {
			continue
		}
		if err != nil {
			return Entry{}, err
		}
		e.logDropped(stored, dropped)
		e.perform(ctx, r, stored, effects)
		return stored, nil
	}
	return Entry{}, petstore.Errorf(petstore.CodeConflict, "the domain is changing right now; try again")
}

// perform runs a written Step's effects in their fixed order: routing
// first (a removed name stops being served before anything else), then
// the certificate, the customer's DNS records, and last the hand-off of
// the events the write stored (the Emit effects are in stored.Outbox).
func (e *Engine) perform(ctx context.Context, r *round, stored Entry, effects []Effect) {
	has := func(k EffectKind) bool {
		for _, f := range effects {
			if f.Kind == k {
				return true
			}
		}
		return false
	}
	switch {
	case has(Unroute):
		e.unroute(ctx, stored)
	case has(Reroute):
		e.reload(ctx, stored.ProjectID)
		e.publish(ctx, stored.Name)
	}
	if has(RequestCert) && e.cfg.CertIssuer != nil {
		if err := e.cfg.CertIssuer.Request(ctx, stored.Name); err != nil {
			// The background check asks again within a minute: the issuer
			// then knows nothing of the name (CertNone).
			e.cfg.Logger.Warn("certificate request failed; will retry", "domain", stored.Name, "err", err)
		}
		e.forgetCert(stored.Name)
	}
	if has(RemoveCert) || has(UnconfigureDNS) {
		stored = e.cleanUp(ctx, stored)
	}
	e.handOff(ctx, r, stored, time.Time{})
}

// unroute stops serving a removed or released name in this process at
// once, drops the redirects that mention it, reloads the table and tells
// the other processes.
func (e *Engine) unroute(ctx context.Context, stored Entry) {
	e.routeMu.Lock()
	e.unadmit(stored.Name)
	e.patchRoutes(func(m map[string]RouteAnswer) {
		delete(m, stored.Name)
		for host, r := range m {
			if r.RedirectTo == stored.Name {
				// Its redirect is dropped below; the source is live, so
				// it serves its project again.
				m[host] = RouteAnswer{Kind: RouteServe, Name: host, ProjectID: r.ProjectID}
			}
		}
	})
	if err := e.dropFromConfig(ctx, stored.ProjectID, stored.Name); err != nil {
		e.cfg.Logger.Warn("redirects of a removed domain not dropped; routing ignores them", "domain", stored.Name, "err", err)
	}
	if err := e.reloadLocked(ctx, stored.ProjectID); err != nil {
		e.cfg.Logger.Warn("routing table reload failed; the next refresh retries", "err", err)
	}
	e.routeMu.Unlock()
	e.publish(ctx, stored.Name)
}

// gather reads what a check of entry needs, before any write: DNS, and
// the certificate's status when there is a CertIssuer.
func (e *Engine) gather(ctx context.Context, entry Entry, manual bool) Checked {
	c := Checked{DNS: e.check(ctx, entry), Manual: manual, Cert: CertStatus{State: CertNone}}
	if e.cfg.CertIssuer != nil {
		c.Cert = e.certNow(ctx, entry.Name)
	}
	return c
}

// certNow asks the certificate layer about name now; an error reads as
// "unknown" (the empty state), which Step ignores. Without a CertIssuer
// (this replica has none, though the one that verified the domain had)
// the answer is "unknown" too, and Step decides as it does without one.
func (e *Engine) certNow(ctx context.Context, name string) CertStatus {
	if e.cfg.CertIssuer == nil {
		return CertStatus{}
	}
	st, err := e.readCert(ctx, name)
	if err != nil {
		e.cfg.Logger.Warn("certificate status unknown; will retry", "domain", name, "err", err)
		return CertStatus{}
	}
	return st
}

// CertificateChanged tells the engine that name's certificate changed
// state, so an issuing domain becomes active (or failed) now rather than at
// the next background check. The certificate layer calls it. A domain that
// is not live, of a project that is suspended or whose plan this engine
// never read (see held), is left as it is, as the background loop leaves
// it: its certificate is told, and the domain moves on, at its first
// check once the project is back on Pro or its plan is read (a domain
// failed for lack of a certificate too: the loop looks at one every
// hour, and every minute while it is held). A live domain's renewal is
// recorded and told for every project.
func (e *Engine) CertificateChanged(ctx context.Context, name string) error {
	if e.cfg.CertIssuer == nil {
		return nil
	}
	n, err := ParseName(name)
	if err != nil {
		return err
	}
	e.forgetCert(n.ASCII) // renewed, failed or obtained: the next view asks
	read := func() (Entry, error) { return e.cfg.Store.DomainByName(ctx, n.ASCII) }
	entry, err := read()
	if err != nil {
		return err
	}
	if !entry.Status.live() && e.held(ctx, entry) {
		// Told now, domain.certificate.issued would come long before
		// domain.active, which only the upgrade brings, and at another
		// time than when the loop finds the certificate: it is told with
		// domain.active, in the change that resumes the domain.
		return nil
	}
	st := e.certNow(ctx, n.ASCII)
	_, err = e.change(ctx, &round{}, 3, read, CertReported{Cert: st})
	if petstore.ErrorCode(err) == petstore.CodeConflict {
		return nil // still changing: whoever changes it decides, and the loop checks again
	}
	return err
}

// settle asks the issuer once more about a domain just stored as issuing:
// when the certificate already exists (another process obtained it into
// shared storage) the issuer has it at once, and the domain need not
// wait for the next background check.
func (e *Engine) settle(ctx context.Context, r *round, stored Entry) Entry {
	if stored.Status != StatusIssuing || e.cfg.CertIssuer == nil {
		return stored
	}
	st := e.certNow(ctx, stored.Name)
	if st.State != CertIssued && st.State != CertFailed {
		return stored
	}
	again, err := e.change(ctx, r, 3, func() (Entry, error) { return e.cfg.Store.DomainByName(ctx, stored.Name) }, CertReported{Cert: st})
	if err != nil {
		return stored
	}
	return again
}
