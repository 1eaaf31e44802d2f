package customdomain

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestStep is the lifecycle as one table: (status, event) → (status,
// effects, next check). Step does no I/O, so no DNS server, store or
// issuer is needed.
func TestStep(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	p := Policy{Window: 48 * time.Hour, Issuer: true, Recheck: time.Hour, Grace: 72 * time.Hour}
	noIssuer := p
	noIssuer.Issuer = false
	ok := CheckResult{OK: true, Findings: []Finding{}}
	wrong := CheckResult{Observed: Observed{CNAME: "elsewhere.example.net"}, Findings: []Finding{{Code: FindingCNAMEMismatch, Message: "shop.example.com points to elsewhere.example.net"}}}
	lost := CheckResult{LookupFailed: true, Findings: []Finding{{Code: FindingLookupFailed}}}
	delegated := wrong
	delegated.Delegated = true
	none, issuing, issued, refused := CertStatus{State: CertNone}, CertStatus{State: CertIssuing}, CertStatus{State: CertIssued}, CertStatus{State: CertFailed, Reason: "CAA forbids it"}
	// Renewal of a 90-day certificate is due 30 days before its end: 5
	// days before it, it has kept failing.
	day := 24 * time.Hour
	expiring := CertStatus{State: CertIssued, NotBefore: t0.Add(-85 * day), NotAfter: t0.Add(5 * day)}
	renewed := CertStatus{State: CertIssued, NotBefore: t0, NotAfter: t0.Add(90 * day)}
	shortLived := CertStatus{State: CertIssued, NotBefore: t0.Add(-4 * day), NotAfter: t0.Add(2 * day)} // 6 days: warned 36 hours before
	checked := func(r CheckResult, c CertStatus) Checked { return Checked{DNS: r, Cert: c} }
	verify := func(r CheckResult, c CertStatus) Checked { return Checked{DNS: r, Cert: c, Manual: true} }
	// kept says an event does not reschedule the domain: its next check
	// stays the one it had (scheduled, a minute ago, when the background
	// loop found it due).
	const kept = -1
	scheduled := t0.Add(-time.Minute)

	tests := []struct {
		name    string
		from    Status
		since   time.Duration // how long ago PendingSince / DriftedAt was
		ev      Event
		p       Policy
		want    Status
		effects string        // effect kinds and events, in order
		next    time.Duration // the next check, from t0 (removed and released: when their cleanup is retried); 0: none; kept: unchanged
		prior   Status        // the status before from, when it matters: "" for none
		cert    CertState     // the entry's Cert before; "": CertNone (CertIssued for a live domain checked with an issued certificate)
	}{
		// pending
		{"pending, right, no issuer", StatusPending, 0, verify(ok, none), noIssuer, StatusActive, "Emit(domain.verified) Reroute Emit(domain.active)", time.Hour, "", ""},
		{"pending, right", StatusPending, 0, verify(ok, none), p, StatusIssuing, "Emit(domain.verified) Reroute RequestCert", time.Minute, "", ""},
		{"pending, right, background", StatusPending, time.Hour, checked(ok, none), p, StatusIssuing, "Emit(domain.verified) Reroute RequestCert", time.Minute, "", ""},
		{"pending, right, certificate already issued by DCV", StatusPending, 0, verify(ok, issued), p, StatusActive, "Emit(domain.certificate.issued) Reroute Emit(domain.verified) Reroute Emit(domain.active)", time.Hour, "", ""},
		{"pending, right, certificate being issued by DCV", StatusPending, 0, checked(ok, issuing), p, StatusIssuing, "Emit(domain.verified) Reroute", time.Minute, "", ""},
		{"pending, wrong, first hour", StatusPending, 10 * time.Minute, checked(wrong, none), p, StatusPending, "", time.Minute, "", ""},
		{"pending, wrong, after 2 h", StatusPending, 2 * time.Hour, checked(wrong, none), p, StatusPending, "", 5 * time.Minute, "", ""},
		{"pending, wrong, window over", StatusPending, 48 * time.Hour, checked(wrong, none), p, StatusFailed, "", 0, "", ""},
		{"pending, lookup failed, window over", StatusPending, 48 * time.Hour, checked(lost, none), p, StatusPending, "", 30 * time.Minute, "", ""},
		{"pending, wrong, DCV delegated: certificate before the cutover", StatusPending, 0, verify(delegated, none), p, StatusPending, "RequestCert", time.Minute, "", ""},
		{"pending, DCV delegated, certificate already issuing", StatusPending, 0, checked(delegated, issuing), p, StatusPending, "", time.Minute, "", ""},
		{"pending, DCV delegated, certificate issued", StatusPending, 0, checked(delegated, issued), p, StatusPending, "Emit(domain.certificate.issued) Reroute", time.Minute, "", ""},
		{"pending, its DCV certificate issued", StatusPending, 0, CertReported{issued}, p, StatusPending, "Emit(domain.certificate.issued) Reroute", kept, "", CertIssuing},
		{"pending, the name's last holder's certificate issued", StatusPending, 0, CertReported{issued}, p, StatusPending, "", kept, "", ""},
		{"pending, the name's last holder's certificate failed", StatusPending, 0, CertReported{refused}, p, StatusPending, "", kept, "", ""},
		{"pending, wrong, not delegated: the name's last holder's certificate failed", StatusPending, 0, checked(wrong, refused), p, StatusPending, "", time.Minute, "", ""},
		{"pending, wrong, not delegated: the name's last holder's certificate, its removal pending, is not this domain's", StatusPending, 0, checked(wrong, issued), p, StatusPending, "", time.Minute, "", ""},
		{"pending, removed", StatusPending, 0, Removed{}, p, StatusRemoved, "Unroute RemoveCert UnconfigureDNS Emit(domain.removed)", time.Minute, "", ""},
		{"pending, suspended", StatusPending, 0, PlanChanged{Suspended: true}, p, StatusPending, "", time.Minute, "", ""},
		{"active, suspended: waits at its drift interval", StatusActive, 0, PlanChanged{Suspended: true}, p, StatusActive, "", time.Hour, "", ""},
		// issuing
		{"issuing, Re-verify", StatusIssuing, 0, verify(ok, issuing), p, StatusIssuing, "RequestCert", time.Minute, "", ""},
		{"issuing, background check", StatusIssuing, 0, checked(ok, issuing), p, StatusIssuing, "", kept, "", ""},
		{"issuing, certificate issued", StatusIssuing, 0, CertReported{issued}, p, StatusActive, "Emit(domain.certificate.issued) Reroute Emit(domain.active)", time.Hour, "", ""},
		// Failed for lack of a certificate: looked at again hourly (see
		// "failed by a refused certificate" below).
		{"issuing, certificate refused", StatusIssuing, 0, CertReported{refused}, p, StatusFailed, "Emit(domain.certificate.failed)", time.Hour, "", ""},
		{"issuing, issuer knows nothing", StatusIssuing, 0, CertReported{none}, p, StatusIssuing, "RequestCert", time.Minute, "", ""},
		{"issuing, still issuing", StatusIssuing, 0, CertReported{issuing}, p, StatusIssuing, "", time.Minute, "", ""},
		{"issuing, no issuer any more", StatusIssuing, 0, CertReported{none}, noIssuer, StatusActive, "Reroute Emit(domain.active)", time.Hour, "", ""},
		// active
		{"active, right", StatusActive, 0, checked(ok, issued), p, StatusActive, "", time.Hour, "", ""},
		{"active, drifted", StatusActive, 0, checked(wrong, issued), p, StatusMisconfigured, "Reroute Emit(domain.misconfigured)", time.Minute, "", ""},
		{"active, lookup failed", StatusActive, 0, checked(lost, issued), p, StatusActive, "", time.Minute, "", ""},
		{"active, certificate failed, Re-verify", StatusActive, 0, verify(ok, refused), p, StatusActive, "Emit(domain.certificate.failed) RequestCert", time.Hour, "", ""},
		{"active, certificate failed, background", StatusActive, 0, checked(ok, refused), p, StatusActive, "Emit(domain.certificate.failed)", time.Hour, "", ""},
		{"active, certificate failed, drifted, Re-verify", StatusActive, 0, verify(wrong, refused), p, StatusMisconfigured, "Emit(domain.certificate.failed) Reroute Emit(domain.misconfigured)", time.Minute, "", ""},
		{"active, certificate expiring unrenewed", StatusActive, 0, checked(ok, expiring), p, StatusActive, "Emit(domain.certificate.failed)", time.Hour, "", ""},
		{"active, certificate expiring unrenewed, told already", StatusActive, 0, checked(ok, expiring), p, StatusActive, "", time.Hour, "", CertExpiring},
		{"active, expiring certificate renewed", StatusActive, 0, CertReported{renewed}, p, StatusActive, "Emit(domain.certificate.issued)", kept, "", CertExpiring},
		{"active, expiring certificate expired", StatusActive, 0, checked(ok, refused), p, StatusActive, "Emit(domain.certificate.failed)", time.Hour, "", CertExpiring},
		{"active, short-lived certificate with a quarter of its life left", StatusActive, 0, checked(ok, shortLived), p, StatusActive, "", time.Hour, "", ""},
		{"misconfigured, certificate expiring (not renewed while drifted)", StatusMisconfigured, time.Hour, checked(wrong, expiring), p, StatusMisconfigured, "Emit(domain.certificate.failed)", 5 * time.Minute, "", ""},
		{"active, removed", StatusActive, 0, Removed{}, p, StatusRemoved, "Unroute RemoveCert UnconfigureDNS Emit(domain.removed)", time.Minute, "", ""},
		{"active, removed, no issuer", StatusActive, 0, Removed{}, noIssuer, StatusRemoved, "Unroute UnconfigureDNS Emit(domain.removed)", 0, "", ""},
		// misconfigured
		{"misconfigured, record back", StatusMisconfigured, time.Hour, checked(ok, issued), p, StatusActive, "Reroute Emit(domain.active)", time.Hour, "", ""},
		{"misconfigured, still wrong", StatusMisconfigured, 2 * time.Hour, checked(wrong, issued), p, StatusMisconfigured, "", 5 * time.Minute, "", ""},
		{"misconfigured, still wrong near the end", StatusMisconfigured, 72*time.Hour - 10*time.Minute, checked(wrong, issued), p, StatusMisconfigured, "", 10 * time.Minute, "", ""},
		{"misconfigured, grace over", StatusMisconfigured, 72 * time.Hour, checked(wrong, issued), p, StatusReleased, "Unroute RemoveCert UnconfigureDNS Emit(domain.removed)", time.Minute, "", ""},
		{"misconfigured, grace over, lookup failed", StatusMisconfigured, 72 * time.Hour, checked(lost, issued), p, StatusMisconfigured, "", 30 * time.Minute, "", ""},
		{"misconfigured, removed", StatusMisconfigured, 0, Removed{}, p, StatusRemoved, "Unroute RemoveCert UnconfigureDNS Emit(domain.removed)", time.Minute, "", ""},
		// failed
		{"failed, right", StatusFailed, 0, verify(ok, none), p, StatusIssuing, "Emit(domain.verified) Reroute RequestCert", time.Minute, "", ""},
		{"failed, still wrong, Re-verify", StatusFailed, 0, verify(wrong, none), p, StatusPending, "", time.Minute, "", ""},
		{"failed, still wrong, background", StatusFailed, 0, checked(wrong, none), p, StatusFailed, "", 0, "", ""},
		// Another process obtained the certificate this one's refusal
		// failed the domain for: its records are checked within a minute
		// (below: it goes live if they still verify).
		{"failed by a refused certificate, certificate issued", StatusFailed, 0, CertReported{issued}, p, StatusFailed, "Emit(domain.certificate.issued)", time.Minute, StatusIssuing, ""},
		{"failed by the window, the name's last holder's certificate issued", StatusFailed, 48 * time.Hour, CertReported{issued}, p, StatusFailed, "", kept, StatusPending, ""},
		// The background loop looks at a domain failed only for lack of a
		// certificate every hour: once one is there (another process got
		// it, or its report came while the project was held) and its
		// records still verify, it goes live with no Re-verify.
		{"failed by a refused certificate, background, right, certificate issued", StatusFailed, 0, checked(ok, issued), p, StatusActive, "Emit(domain.certificate.issued) Reroute Emit(domain.active)", time.Hour, StatusIssuing, CertFailed},
		{"failed by a refused certificate, background, right, still no certificate", StatusFailed, 0, checked(ok, refused), p, StatusFailed, "", time.Hour, StatusIssuing, CertFailed},
		{"failed by a refused certificate, background, wrong, certificate issued", StatusFailed, 0, checked(wrong, issued), p, StatusFailed, "Emit(domain.certificate.issued)", time.Hour, StatusIssuing, CertFailed},
		{"failed by a refused certificate, background, lookup failed", StatusFailed, 0, checked(lost, issued), p, StatusFailed, "Emit(domain.certificate.issued)", time.Hour, StatusIssuing, CertFailed},
		{"failed by a refused certificate, Re-verify, right", StatusFailed, 0, verify(ok, refused), p, StatusIssuing, "Emit(domain.verified) Reroute RequestCert", time.Minute, StatusIssuing, CertFailed},
		// released and removed: nothing moves them but a dismissal
		{"released, checked", StatusReleased, 0, verify(ok, none), p, StatusReleased, "", kept, "", ""},
		{"released, dismissed: a cleanup still pending is retried when it was due", StatusReleased, 0, Removed{}, p, StatusRemoved, "", kept, "", ""},
		{"removed, removed again", StatusRemoved, 0, Removed{}, p, StatusRemoved, "", kept, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Entry{Name: "shop.example.com", Status: tt.from, PendingSince: t0.Add(-tt.since), Cert: CertNone, NextCheckAt: scheduled}
			if tt.cert != "" {
				e.Cert = tt.cert
			}
			if tt.prior != "" {
				e.History = []Transition{{Status: tt.prior, At: t0.Add(-time.Minute)}, {Status: tt.from, At: t0.Add(-time.Minute)}}
			}
			if tt.prior == StatusIssuing || tt.from == StatusIssuing || tt.from.live() {
				e.VerifiedAt = t0.Add(-time.Hour)
			}
			if tt.from.live() {
				e.DriftedAt = time.Time{}
				if tt.from == StatusMisconfigured {
					e.DriftedAt = t0.Add(-tt.since)
				}
			}
			if c, ok := tt.ev.(Checked); ok && c.Cert.State == CertIssued && tt.from.live() && tt.cert == "" {
				e.Cert = CertIssued
			}
			got, effects := Step(e, tt.ev, t0, tt.p)
			if got.Status != tt.want || describe(effects) != tt.effects {
				t.Fatalf("%s → %s [%s], want %s [%s]", tt.from, got.Status, describe(effects), tt.want, tt.effects)
			}
			want := t0.Add(tt.next)
			switch tt.next {
			case 0:
				want = time.Time{}
			case kept:
				want = scheduled
			}
			if !got.NextCheckAt.Equal(want) {
				t.Errorf("next check at %v, want %v (%v from now, or none if zero)", got.NextCheckAt, want, tt.next)
			}
			if _, ok := tt.ev.(Checked); ok && !tt.from.FreesName() && (got.CheckedAt != t0 || got.Attempts != 1) {
				t.Errorf("the check is not recorded: checked %v, attempts %d", got.CheckedAt, got.Attempts)
			}
			if tt.want != tt.from && got.History[len(got.History)-1].Status != tt.want {
				t.Errorf("history %v does not end in %s", got.History, tt.want)
			}
			if tt.want == StatusMisconfigured && tt.from == StatusActive && !got.DriftedAt.Equal(t0) {
				t.Errorf("drift not recorded: since %v", got.DriftedAt)
			}
			if c, ok := tt.ev.(Checked); ok && tt.want == StatusMisconfigured && !c.DNS.LookupFailed &&
				!strings.Contains(got.Reason, "points to elsewhere.example.net") {
				t.Errorf("the reason %q does not say what the record points to now", got.Reason)
			}
			// The certificate's removal is pending in the write that asks
			// for it, so that any process can retry it from the store.
			if want := strings.Contains(tt.effects, RemoveCert.String()); got.CertRemovalPending != want {
				t.Errorf("certificate removal pending: %v, want %v", got.CertRemovalPending, want)
			}
			if tt.want == StatusActive && !got.DriftedAt.IsZero() {
				t.Errorf("active with a drift time %v", got.DriftedAt)
			}
		})
	}
}

// TestStepVerifiedIsAMilestone: verified is in the history, never the
// status Step leaves a domain in.
func TestStepVerifiedIsAMilestone(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, p := range []Policy{{Window: time.Hour, Issuer: true}, {Window: time.Hour}} {
		e := Entry{Status: StatusPending, History: []Transition{{Status: StatusPending, At: t0}}}
		got, _ := Step(e, Checked{DNS: CheckResult{OK: true}, Cert: CertStatus{State: CertNone}, Manual: true}, t0, p)
		var h []Status
		for _, tr := range got.History {
			h = append(h, tr.Status)
		}
		if got.Status == StatusVerified || !slices.Contains(h, StatusVerified) || !got.VerifiedAt.Equal(t0) {
			t.Errorf("issuer %v: status %s, history %v, verified at %v", p.Issuer, got.Status, h, got.VerifiedAt)
		}
	}
}

// TestStepKeepsTheNewestHistory: a domain whose record flapped until its
// history holds MaxHistory changes drops the oldest at its next change,
// so its entry stops growing; what reads the last changes still works:
// a domain failed while issuing at the bound goes active once its
// certificate is issued after all.
func TestStepKeepsTheNewestHistory(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	p := Policy{Window: 48 * time.Hour, Issuer: true, Recheck: time.Hour, Grace: 72 * time.Hour}
	wrong := CheckResult{Observed: Observed{CNAME: "elsewhere.example.net"}, Findings: []Finding{{Code: FindingCNAMEMismatch, Message: "elsewhere"}}}
	// full is a history at the bound, its last change to last, each an
	// hour apart, ending a minute before t0.
	full := func(last ...Status) []Transition {
		h := make([]Transition, MaxHistory)
		for i := range h {
			h[i] = Transition{Status: []Status{StatusActive, StatusMisconfigured}[i%2], At: t0.Add(-time.Duration(MaxHistory-i)*time.Hour - time.Minute)}
		}
		for i, s := range last {
			h[MaxHistory-len(last)+i].Status = s
		}
		return h
	}
	statuses := func(h []Transition) []Status {
		var out []Status
		for _, tr := range h {
			out = append(out, tr.Status)
		}
		return out
	}

	t.Run("a flap at the bound", func(t *testing.T) {
		was := full(StatusActive)
		e := Entry{Name: "shop.example.com", Status: StatusActive, Cert: CertIssued, VerifiedAt: t0.Add(-1000 * time.Hour), History: was}
		got, _ := Step(e, Checked{DNS: wrong, Cert: CertStatus{State: CertIssued}}, t0, p)
		want := append(slices.Clone(was[1:]), Transition{Status: StatusMisconfigured, At: t0, Reason: got.Reason})
		if got.Status != StatusMisconfigured || !reflect.DeepEqual(got.History, want) {
			t.Fatalf("%s with %d changes %v…%v, want misconfigured with the %d newest, the oldest (%v) dropped",
				got.Status, len(got.History), statuses(got.History[:2]), statuses(got.History[len(got.History)-2:]), MaxHistory, was[0].At)
		}
	})
	t.Run("failed while issuing at the bound, certificate issued", func(t *testing.T) {
		e := Entry{Name: "shop.example.com", Status: StatusFailed, Reason: "CAA forbids it", Cert: CertFailed,
			VerifiedAt: t0.Add(-time.Hour), History: full(StatusIssuing, StatusFailed)}
		got, effects := Step(e, Checked{DNS: CheckResult{OK: true}, Cert: CertStatus{State: CertIssued}}, t0, p)
		if got.Status != StatusActive || len(got.History) != MaxHistory || describe(effects) != "Emit(domain.certificate.issued) Reroute Emit(domain.active)" {
			t.Fatalf("%s with %d changes [%s], want active with %d", got.Status, len(got.History), describe(effects), MaxHistory)
		}
		if h := statuses(got.History[MaxHistory-3:]); !slices.Equal(h, []Status{StatusIssuing, StatusFailed, StatusActive}) {
			t.Fatalf("history ends %v, want issuing failed active", h)
		}
	})
}

// TestStepMarksCleanup: the write that removes or releases a domain says,
// in the store, what is left to clean up: its certificate's removal, when
// there is a CertIssuer (CertRemovalPending), and the deletion of the
// records ConfigureDNS wrote (DNSRecords), both pending until the engine
// records them done, and to be retried a minute later (NextCheckAt)
// should it not, so no process's memory is needed to retry them; a
// domain with nothing left is never looked at again. A dismissal of a
// released domain, which removes nothing, starts nothing, and keeps what
// is still pending.
func TestStepMarksCleanup(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	p := Policy{Window: 48 * time.Hour, Issuer: true, Recheck: time.Hour, Grace: 72 * time.Hour}
	noIssuer := p
	noIssuer.Issuer = false
	recs := []Record{{Type: "CNAME", Name: "shop", Value: "edge.petstore.example.", TTL: 3600}}
	wrong := Checked{DNS: CheckResult{Findings: []Finding{{Code: FindingCNAMEMismatch, Message: "elsewhere"}}}, Cert: CertStatus{State: CertIssued}}
	for _, tc := range []struct {
		name        string
		from        Status
		next        time.Time // NextCheckAt before
		recs        []Record
		certPending bool // CertRemovalPending before
		ev          Event
		p           Policy
		want        time.Time // NextCheckAt after
		wantCert    bool      // CertRemovalPending after
	}{
		{"removed with records", StatusActive, t0.Add(time.Hour), recs, false, Removed{}, p, t0.Add(time.Minute), true},
		{"removed without records", StatusActive, t0.Add(time.Hour), nil, false, Removed{}, p, t0.Add(time.Minute), true},
		{"removed with records, no issuer", StatusActive, t0.Add(time.Hour), recs, false, Removed{}, noIssuer, t0.Add(time.Minute), false},
		{"removed without records, no issuer", StatusActive, t0.Add(time.Hour), nil, false, Removed{}, noIssuer, time.Time{}, false},
		{"released with records", StatusMisconfigured, t0, recs, false, wrong, p, t0.Add(time.Minute), true},
		{"released without records", StatusMisconfigured, t0, nil, false, wrong, p, t0.Add(time.Minute), true},
		{"released without records, no issuer", StatusMisconfigured, t0, nil, false, wrong, noIssuer, time.Time{}, false},
		{"released domain dismissed", StatusReleased, time.Time{}, recs, false, Removed{}, p, time.Time{}, false},
		{"released domain with a deletion pending dismissed", StatusReleased, t0.Add(5 * time.Minute), recs, false, Removed{}, p, t0.Add(5 * time.Minute), false},
		{"released domain with a certificate removal pending dismissed", StatusReleased, t0.Add(5 * time.Minute), nil, true, Removed{}, p, t0.Add(5 * time.Minute), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := Entry{Name: "shop.example.com", Status: tc.from, NextCheckAt: tc.next, DNSRecords: tc.recs, CertRemovalPending: tc.certPending, DriftedAt: t0.Add(-72 * time.Hour)}
			got, _ := Step(e, tc.ev, t0, tc.p)
			if !got.Status.FreesName() || !got.NextCheckAt.Equal(tc.want) || got.CertRemovalPending != tc.wantCert {
				t.Fatalf("%s → %s with next check at %v, certificate removal pending %v; want it freed, looked at next at %v, pending %v",
					tc.from, got.Status, got.NextCheckAt, got.CertRemovalPending, tc.want, tc.wantCert)
			}
		})
	}
}

// TestStepLeavesFreedEntries: a removed or released entry whose cleanup
// is pending is due (NextCheckAt) like a live one, but nothing
// of the lifecycle applies to it any more: no event but a released
// entry's dismissal changes it, nor has an effect.
func TestStepLeavesFreedEntries(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	p := Policy{Window: 48 * time.Hour, Issuer: true, Recheck: time.Hour, Grace: 72 * time.Hour}
	ok := CheckResult{OK: true, Findings: []Finding{}}
	wrong := CheckResult{Findings: []Finding{{Code: FindingCNAMEMismatch, Message: "elsewhere"}}}
	events := []Event{
		Checked{DNS: ok, Cert: CertStatus{State: CertIssued}},
		Checked{DNS: ok, Cert: CertStatus{State: CertNone}, Manual: true},
		Checked{DNS: wrong, Cert: CertStatus{State: CertFailed}},
		CertReported{Cert: CertStatus{State: CertIssued}},
		CertReported{Cert: CertStatus{State: CertNone}},
		PlanChanged{Suspended: true},
		PlanChanged{},
	}
	for _, from := range []Status{StatusRemoved, StatusReleased} {
		e := Entry{Name: "shop.example.com", Status: from, NextCheckAt: t0.Add(-time.Minute),
			DNSRecords:         []Record{{Type: "CNAME", Name: "shop", Value: "edge.petstore.example.", TTL: 3600}},
			CertRemovalPending: true,
			VerifiedAt:         t0.Add(-100 * time.Hour),
			DriftedAt:          t0.Add(-72 * time.Hour),
			History:            []Transition{{Status: from, At: t0.Add(-time.Hour)}},
			Findings:           []Finding{},
			Observed:           Observed{Addresses: []string{}},
		}.Canonical()
		evs := events
		if from == StatusRemoved { // a released one's is its dismissal
			evs = append(slices.Clip(events), Removed{})
		}
		for _, ev := range evs {
			got, fx := Step(e, ev, t0, p)
			if !reflect.DeepEqual(got, e) || len(fx) != 0 {
				t.Errorf("%s entry, %T%+v: became %+v with effects %s; want it unchanged, no effects", from, ev, ev, got, describe(fx))
			}
		}
	}
}

func describe(effects []Effect) string {
	var out []string
	for _, f := range effects {
		s := f.Kind.String()
		if f.Kind == Emit {
			s += "(" + f.Event + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestRecheckInterval(t *testing.T) {
	for _, tc := range []struct{ pending, want time.Duration }{
		{0, time.Minute}, {59 * time.Minute, time.Minute}, {time.Hour, 5 * time.Minute},
		{3 * time.Hour, 15 * time.Minute}, {12 * time.Hour, 30 * time.Minute}, {100 * time.Hour, 30 * time.Minute},
	} {
		if got := recheckInterval(tc.pending); got != tc.want {
			t.Errorf("recheckInterval(%s) = %s, want %s", tc.pending, got, tc.want)
		}
	}
}

// TestStepLooksDailyAtALongFailedDomain: a domain failed for lack of a
// certificate is looked at every hour for its first day failed, then
// every day, so that one abandoned costs a look a day, not 24.
func TestStepLooksDailyAtALongFailedDomain(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	p := Policy{Window: 48 * time.Hour, Issuer: true, Recheck: time.Hour, Grace: 72 * time.Hour}
	for _, tt := range []struct {
		failed time.Duration // how long ago it failed
		next   time.Duration
	}{
		{time.Hour, time.Hour},
		{23 * time.Hour, time.Hour},
		{24 * time.Hour, 24 * time.Hour},
		{30 * 24 * time.Hour, 24 * time.Hour},
	} {
		e := Entry{Name: "shop.example.com", Status: StatusFailed, Reason: "CAA forbids it", Cert: CertFailed, VerifiedAt: t0.Add(-tt.failed - time.Hour),
			History: []Transition{{Status: StatusIssuing, At: t0.Add(-tt.failed - time.Hour)}, {Status: StatusFailed, At: t0.Add(-tt.failed)}}}
		got, effects := Step(e, Checked{DNS: CheckResult{OK: true}, Cert: CertStatus{State: CertFailed}}, t0, p)
		if got.Status != StatusFailed || len(effects) != 0 || !got.NextCheckAt.Equal(t0.Add(tt.next)) {
			t.Errorf("failed %v ago: %s [%s], next check in %v; want failed [], in %v", tt.failed, got.Status, describe(effects), got.NextCheckAt.Sub(t0), tt.next)
		}
	}
}
