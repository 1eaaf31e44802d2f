package customdomain

import (
	"context"
	"encoding/json"
	"net/netip"
	"reflect"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/petstorekit/petstore"
)

// OutboxLease is how long the engine that stored a change has to hand its
// events to Events, and to record that it did, before any engine's RunDue
// hands them over instead. A hand-off twice is harmless (Events stores an
// ID once); the lease only spares the replicas the work.
// EngineConfig.HandOffTimeout must be shorter.
const OutboxLease = 10 * time.Second

// record adds the events of a change (its Emit effects) to next's Outbox,
// so that the write storing the change stores them too: each gets its
// ID now, once, and view, the domain as the dashboard shows next (see
// eventDomain). Without an Events port there is nobody to hand them to,
// and none is kept. Past MaxOutbox it drops the oldest, and returns
// them for the caller to log once the write is stored.
func (e *Engine) record(next *Entry, effects []Effect, now time.Time, view json.RawMessage) (dropped []PendingEvent) {
	if e.cfg.Events == nil {
		return nil
	}
	for _, f := range effects {
		if f.Kind == Emit && view != nil {
			next.Outbox = append(next.Outbox, PendingEvent{
				ID: "evt_" + uuid.Must(uuid.NewV7()).String(), Type: f.Event, CreatedAt: now, Domain: view,
			})
		}
	}
	if n := len(next.Outbox) - MaxOutbox; n > 0 {
		dropped, next.Outbox = next.Outbox[:n], slices.Clone(next.Outbox[n:])
	}
	// New events are due after the lease even when older ones wait
	// longer (their hand-off kept failing, so it is tried less often):
	// should this process end before it hands them over, the others do
	// then, not at the older events' next try.
	if due := now.Add(OutboxLease); len(next.Outbox) > 0 && (next.OutboxDueAt.IsZero() || view != nil && next.OutboxDueAt.After(due)) {
		next.OutboxDueAt = due
	}
	return dropped
}

// logDropped says at warn which events a stored write of en dropped from
// its Outbox (see record): Events never gets them.
func (e *Engine) logDropped(en Entry, dropped []PendingEvent) {
	if len(dropped) == 0 {
		return
	}
	ids := make([]string, len(dropped))
	for i, ev := range dropped {
		ids[i] = ev.ID + " " + ev.Type
	}
	e.cfg.Logger.Warn("domain events dropped: Events has not taken the domain's events for so long that its outbox keeps only the newest",
		"domain", en.Name, "kept", MaxOutbox, "dropped", len(dropped), "events", ids)
}

// eventView is what the view a change's events carry needs that takes
// I/O: the project's plan, the edge's addresses, the certificate layer's
// status of the name, and what the Diagnosers find (they are asked about
// the view itself). change looks it up before it reads the entry it
// writes, so that none runs between that read and the write.
type eventView struct {
	projectID, name string
	suspended       string
	edge            []netip.Addr
	shows           bool // showsCert of the entry it was looked up for
	cert            CertStatus
	diagnosed       Domain    // the view the Diagnosers were asked about
	theirs          []Finding // what they found
}

// lookUpView looks up, with I/O, what the view of next needs.
func (e *Engine) lookUpView(ctx context.Context, next Entry) *eventView {
	v := &eventView{
		projectID: next.ProjectID, name: next.Name, suspended: e.suspension(ctx, next.ProjectID),
		edge: e.edgeList(ctx), shows: e.showsCert(next), cert: e.certOf(ctx, next),
	}
	v.diagnosed = e.render(next, v.suspended, v.edge, v.cert)
	v.theirs = e.diagnose(ctx, v.diagnosed)
	return v
}

// eventDomain renders from v, with no I/O, the domain next's events
// carry, encoded; nil when there are none to keep (no Emit effect, or no
// Events). ok is false when v does not hold what that view needs: it was
// looked up for another entry than next (nil, or before the entry
// changed), so the Diagnosers were not asked about this view.
func (e *Engine) eventDomain(v *eventView, next Entry, effects []Effect) (view json.RawMessage, ok bool) {
	if e.cfg.Events == nil || !slices.ContainsFunc(effects, func(f Effect) bool { return f.Kind == Emit }) {
		return nil, true
	}
	if v == nil || v.projectID != next.ProjectID || v.name != next.Name || v.shows != e.showsCert(next) {
		return nil, false
	}
	d := e.render(next, v.suspended, v.edge, v.cert)
	if !reflect.DeepEqual(d, v.diagnosed) {
		return nil, false
	}
	d.Diagnosis = e.diagnosisWith(d, next.Observed, next.Findings, next.CheckedAt, v.theirs)
	b, err := json.Marshal(d)
	if err != nil { // a Domain always encodes; never lose the event for it
		b = []byte("null")
	}
	return b, true
}

// eventDomainNow is eventDomain with what it needs looked up now, for a
// write that is not version-checked (a new entry).
func (e *Engine) eventDomainNow(ctx context.Context, en Entry, effects []Effect) json.RawMessage {
	view, ok := e.eventDomain(nil, en, effects)
	if !ok {
		view, _ = e.eventDomain(e.lookUpView(ctx, en), en, effects)
	}
	return view
}

// round is one round of the engine's work that may hand events to
// Events: one RunDue, or one call of the engine (a request), which may
// change several domains. Its hand-offs run one after another.
type round struct {
	// hung is set once a hand-off of the round ran out of
	// EngineConfig.HandOffTimeout: Events most likely hangs (its
	// database paused), and each later hand-off would wait as long, so
	// the round tries none, and waits for Events about one timeout in
	// all. Their events wait in their entries, where they were stored
	// with their changes, oldest first: RunDue hands them over from
	// there once due, as after a refusal. A hand-off that answered, but
	// slowly (see slowHandOff), sets it too: the next would most likely
	// take as long.
	hung bool
	// background is set for RunDue's round, which hands events over
	// even while Events is slow (Engine.eventsSlow), and clears that once
	// a hand-off is quick again.
	background bool
}

// slowHandOff reports whether a hand-off that lasted took was slow: it
// answered, or not, after more than half of EngineConfig.HandOffTimeout.
// An Events that answers just inside its timeout would otherwise cost
// every hand-off nearly the whole timeout, never counted as hanging.
func (e *Engine) slowHandOff(took time.Duration) bool {
	return took > e.cfg.HandOffTimeout/2
}

// handOff tells Events the events in stored's Outbox, oldest first, and
// removes those it took from the stored entry. When one is refused, it and
// those after it stay, to be told again by RunDue at the entry's
// OutboxDueAt, which retryAt, when set, moves on. Failures are logged,
// not returned: the change they tell of stands. Once a hand-off of r has
// run out of time, it tells none (see round), and OutboxDueAt stays.
func (e *Engine) handOff(ctx context.Context, r *round, stored Entry, retryAt time.Time) {
	if e.cfg.Events == nil {
		return
	}
	if len(stored.Outbox) == 0 {
		if !stored.OutboxDueAt.IsZero() { // nothing left to tell: never due again
			e.settleOutbox(ctx, stored, nil, time.Time{})
		}
		return
	}
	if r.hung || !r.background && e.eventsSlow.Load() {
		// Events is slow: this request does not wait for it, and the
		// events wait in the entry, due after the lease, for RunDue.
		return
	}
	taken := map[string]bool{}
	for _, ev := range stored.Outbox {
		began := time.Now()
		timedOut, err := e.tell(ctx, stored.ProjectID, ev)
		slow := ctx.Err() == nil && (timedOut || e.slowHandOff(time.Since(began)))
		switch {
		case slow:
			// Remembered: the engine's requests stop waiting for Events.
			e.eventsSlow.Store(true)
		case err == nil && r.background:
			e.eventsSlow.Store(false)
		}
		if err == nil {
			taken[ev.ID] = true
		}
		if slow {
			r.hung = true
			e.cfg.Logger.Warn("domain event handed over slowly or not in time; the engine's requests leave events to the background loop until it is quick again",
				"domain", stored.Name, "type", ev.Type, "event", ev.ID, "timeout", e.cfg.HandOffTimeout, "err", err)
			break
		}
		if err != nil {
			e.cfg.Logger.Warn("domain event not handed over; will retry", "domain", stored.Name, "type", ev.Type, "event", ev.ID, "err", err)
			break
		}
	}
	if len(taken) > 0 || !retryAt.IsZero() {
		e.settleOutbox(ctx, stored, taken, retryAt)
	}
}

// tell hands ev to Events within EngineConfig.HandOffTimeout, and reports
// whether that time ran out.
func (e *Engine) tell(ctx context.Context, projectID string, ev PendingEvent) (timedOut bool, err error) {
	tctx, cancel := context.WithTimeout(ctx, e.cfg.HandOffTimeout)
	defer cancel()
	err = e.cfg.Events.DomainEvent(tctx, projectID, ev)
	return err != nil && ctx.Err() == nil && tctx.Err() != nil, err
}

// settleOutbox removes the events taken from en's stored Outbox, and sets
// its OutboxDueAt to retryAt (when set) while events remain, unless
// events stored since en was read are due earlier, with a
// version-checked write: an entry changed meanwhile is read again (its
// Outbox may have grown, or another engine may have handed them over). A
// write that fails leaves the events to be told again, which Events
// ignores.
func (e *Engine) settleOutbox(ctx context.Context, en Entry, taken map[string]bool, retryAt time.Time) {
	told := map[string]bool{}
	for _, ev := range en.Outbox {
		told[ev.ID] = true
	}
	for range 3 {
		next := en.Canonical()
		next.Outbox = slices.DeleteFunc(next.Outbox, func(ev PendingEvent) bool { return taken[ev.ID] })
		// Events a change stored meanwhile were not told yet: they keep
		// their due time when it is earlier.
		newer := slices.ContainsFunc(next.Outbox, func(ev PendingEvent) bool { return !told[ev.ID] })
		switch {
		case len(next.Outbox) == 0:
			next.Outbox, next.OutboxDueAt = nil, time.Time{}
		case !retryAt.IsZero() && (!newer || next.OutboxDueAt.IsZero() || next.OutboxDueAt.After(retryAt)):
			next.OutboxDueAt = retryAt
		}
		if next.OutboxDueAt.Equal(en.OutboxDueAt) && len(next.Outbox) == len(en.Outbox) {
			return
		}
		_, err := e.cfg.Store.UpdateDomain(ctx, next)
		if err == nil {
			return
		}
		if !isConflict(err) {
			e.cfg.Logger.Warn("domain events handed over but not cleared; they will be handed over again", "domain", en.Name, "err", err)
			return
		}
		cur, ok, err := e.reread(ctx, en)
		if err != nil || !ok {
			return
		}
		en = cur
	}
}

// reread reads en again by its ID, whatever its status now.
func (e *Engine) reread(ctx context.Context, en Entry) (Entry, bool, error) {
	cur, err := e.cfg.Store.DomainByName(ctx, en.Name)
	switch {
	case err == nil && cur.ID == en.ID:
		return cur, true, nil
	case err != nil && petstore.ErrorCode(err) != petstore.CodeNotFound:
		return Entry{}, false, err
	}
	return e.freedEntry(ctx, en)
}

// retryOutboxes hands over the events still in the Outbox of the entries
// DueOutboxes returns at now: their hand-off failed, or the process that
// stored them ended first. Every engine on the store does it, so the
// events of a change one process stored are told even if it never runs
// again. A hand-off refused again is tried later, as the background
// checks are: every minute in the first hour, then less often. Once a
// hand-off of r ran out of time (in this call or before it in the round),
// the others would most likely wait as long: they stay due for the next
// round.
func (e *Engine) retryOutboxes(ctx context.Context, r *round, now time.Time) error {
	if e.cfg.Events == nil {
		return nil
	}
	// As RunDue's batches: an entry whose hand-off failed is still due.
	ran := map[string]bool{}
	for !r.hung {
		limit := len(ran) + 100
		due, err := e.cfg.Store.DueOutboxes(ctx, now, limit)
		if err != nil {
			return err
		}
		fresh := 0
		for _, en := range due {
			if err := ctx.Err(); err != nil {
				return err
			}
			if r.hung {
				return nil
			}
			if ran[en.ID] {
				continue
			}
			ran[en.ID], fresh = true, fresh+1
			oldest := en.OutboxDueAt
			if len(en.Outbox) > 0 {
				oldest = en.Outbox[0].CreatedAt
			}
			e.handOff(ctx, r, en, now.Add(recheckInterval(now.Sub(oldest))))
		}
		if len(due) < limit || fresh == 0 {
			return nil
		}
	}
	return nil
}
