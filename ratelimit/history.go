package ratelimit

import (
	"container/list"
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	petstore "github.com/petstorekit/petstore"
)

// HistoryMinutes is how far back a History reaches: one bucket a minute.
const HistoryMinutes = 60

// DefaultHistorySubjects is how many subjects a History keeps when
// HistoryConfig.MaxSubjects is zero.
const DefaultHistorySubjects = 10_000

// HistoryConfig configures NewHistory.
type HistoryConfig struct {
	// MaxSubjects caps the subjects kept; the one written to least
	// recently goes first. DefaultHistorySubjects when zero.
	MaxSubjects int
	// KeepPrefix says which subjects are recorded: those starting with
	// it; all when empty. A platform that shows keys their history keeps
	// "key:" subjects only, so that a flood from new addresses cannot push
	// the keys out. (A prefix rather than a func: a call through a func
	// value would make every request's subject escape to the heap.)
	KeepPrefix string
}

// History counts, per subject, the requests admitted and refused in each
// of the last HistoryMinutes minutes: what a customer's usage chart
// shows. A Limiter given one (Config.History) records every decision in
// it. Memory is bounded: HistoryMinutes buckets a subject, at most
// MaxSubjects subjects. It is kept in this process only: with several
// processes sharing a Redis store each one's History counts the requests
// it decided. It is safe for concurrent use.
type History struct {
	mu       sync.Mutex
	prefix   string
	max      int
	subjects map[string]*list.Element // of *series, most recent first
	lru      list.List
}

// series is one subject's ring of minute buckets.
type series struct {
	subject string
	minute  [HistoryMinutes]int64 // the Unix minute a bucket counts; stale when older than an hour
	allowed [HistoryMinutes]int64
	refused [HistoryMinutes]int64
}

// NewHistory returns an empty History.
func NewHistory(cfg HistoryConfig) *History {
	h := &History{prefix: cfg.KeepPrefix, max: cfg.MaxSubjects, subjects: map[string]*list.Element{}}
	if h.max <= 0 {
		h.max = DefaultHistorySubjects
	}
	return h
}

// Record counts one request of subject at at, admitted or refused.
func (h *History) Record(subject string, at time.Time, admitted bool) {
	if h == nil || !strings.HasPrefix(subject, h.prefix) {
		return
	}
	m := at.Unix() / 60
	i := int(m % HistoryMinutes)
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.subjects[subject]
	if ok {
		h.lru.MoveToFront(e)
	} else {
		if h.lru.Len() >= h.max {
			old := h.lru.Back()
			delete(h.subjects, old.Value.(*series).subject)
			h.lru.Remove(old)
		}
		// A copy: the caller's subject stays its own, so a request's
		// subject string need not escape to the heap for the history.
		key := strings.Clone(subject)
		e = h.lru.PushFront(&series{subject: key})
		h.subjects[key] = e
	}
	s := e.Value.(*series)
	if s.minute[i] != m {
		s.minute[i], s.allowed[i], s.refused[i] = m, 0, 0
	}
	if admitted {
		s.allowed[i]++
	} else {
		s.refused[i]++
	}
}

// Minute is one minute of a subject's history.
type Minute struct {
	Start    time.Time `json:"start"`    // the minute's first second
	Admitted int64     `json:"admitted"` // requests let through
	Refused  int64     `json:"refused"`  // requests answered 429
}

// Minutes returns subject's last HistoryMinutes minutes up to the one
// holding now, oldest first; minutes without requests are zero.
func (h *History) Minutes(subject string, now time.Time) []Minute {
	out := make([]Minute, HistoryMinutes)
	last := now.Unix() / 60
	for k := range out {
		m := last - HistoryMinutes + 1 + int64(k)
		out[k].Start = time.Unix(m*60, 0).UTC()
	}
	if h == nil {
		return out
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.subjects[subject]
	if !ok {
		return out
	}
	s := e.Value.(*series)
	for k := range out {
		m := last - HistoryMinutes + 1 + int64(k)
		if i := int(m % HistoryMinutes); s.minute[i] == m {
			out[k].Admitted, out[k].Refused = s.allowed[i], s.refused[i]
		}
	}
	return out
}

// Len returns how many subjects are kept.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lru.Len()
}

// Report is a subject's usage at one moment: its windows against their
// quotas, its last hour minute by minute, and its ban.
type Report struct {
	At      time.Time `json:"at"`      // when the report was made, by the limiter's clock
	Windows []Window  `json:"-"`       // in Rates order: minute, then day
	Minutes []Minute  `json:"minutes"` // oldest first; empty without a History
	// BannedUntil is when the subject's ban ends; zero when not banned.
	// A ban comes from sending after being rate limited (BanPolicy).
	BannedUntil time.Time `json:"bannedUntil,omitzero"`
}

// ErrNoUsage is returned by Report when the limiter's store cannot say
// what a subject has used (it does not implement Admin).
var ErrNoUsage = errors.New("ratelimit: the store does not report usage")

// Report returns subject's usage under limits now, without counting
// anything: the windows and ban from the store (an Admin), the minutes
// from Config.History. A store call that fails returns unavailable,
// except over a shared store that does not lease while the breaker has
// taken it for down: the local fallback's figures are reported then.
func (l *Limiter) Report(ctx context.Context, subject string, limits petstore.Limits) (Report, error) {
	if !limits.Valid() {
		return Report{}, invalidLimits()
	}
	now := l.now()
	var admin Admin
	if l.local != nil {
		admin = l.local
	}
	if a, ok := l.store.(Admin); ok && (l.local == nil || !l.open.Load()) {
		admin = a
	}
	if admin == nil {
		return Report{}, ErrNoUsage
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	wins, err := admin.Usage(ctx, subject, Rates(limits), now)
	var bans []Ban
	if err == nil {
		bans, err = admin.Bans(ctx, now)
	}
	if err != nil {
		return Report{}, petstore.Errorf(petstore.CodeUnavailable, "usage is unavailable; try again later")
	}
	r := Report{At: now, Windows: wins, Minutes: []Minute{}}
	if l.history != nil {
		r.Minutes = l.history.Minutes(subject, now)
	}
	for _, b := range bans {
		if b.Subject == subject {
			r.BannedUntil = b.Until
		}
	}
	return r, nil
}
