package customdomain

import (
	"context"
	"testing"
	"time"
)

// nopIssuer is only present: apply never calls it (requests are the
// caller's effect, after the write).
type nopIssuer struct{}

func (nopIssuer) Request(context.Context, string) error              { panic("apply made a request") }
func (nopIssuer) Status(context.Context, string) (CertStatus, error) { panic("apply asked a status") }
func (nopIssuer) Remove(context.Context, string) error               { panic("apply removed a certificate") }

// TestApplyTable is the state machine of a check as a table: (state,
// outcome of the DNS check, who asked) → (state, whether a certificate is
// to be requested, when the domain is checked next). apply does no I/O.
func TestApplyTable(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	window := 48 * time.Hour
	ok := checkResult{ok: true, findings: []Finding{}}
	wrong := checkResult{findings: []Finding{{Code: FindingNoRecords, Message: "no records"}}}
	failedLookup := checkResult{lookupFailed: true, findings: []Finding{{Code: FindingLookupFailed}}}
	tests := []struct {
		name        string
		issuer      bool
		from        Status
		pendingFor  time.Duration // how long it has been pending
		res         checkResult
		manual      bool
		want        Status
		wantRequest bool
		wantNext    time.Duration // from now; -1: none
	}{
		{"pending, right, no issuer", false, StatusPending, 0, ok, true, StatusActive, false, -1},
		{"pending, right", true, StatusPending, 0, ok, true, StatusIssuing, true, time.Minute},
		{"pending, right, background", true, StatusPending, time.Hour, ok, false, StatusIssuing, true, time.Minute},
		{"failed, right", true, StatusFailed, 0, ok, true, StatusIssuing, true, time.Minute},
		{"verified, right", true, StatusVerified, 0, ok, false, StatusIssuing, true, time.Minute},
		{"issuing, Re-verify", true, StatusIssuing, 0, ok, true, StatusIssuing, true, time.Minute},
		{"issuing, background", true, StatusIssuing, 0, ok, false, StatusIssuing, false, 0},
		{"active, right", true, StatusActive, 0, ok, true, StatusActive, false, 0},
		{"failed, still wrong, Re-verify", true, StatusFailed, 0, wrong, true, StatusPending, false, time.Minute},
		{"failed, still wrong, background", true, StatusFailed, 0, wrong, false, StatusFailed, false, 0},
		{"pending, wrong, first hour", true, StatusPending, 10 * time.Minute, wrong, false, StatusPending, false, time.Minute},
		{"pending, wrong, after 2 h", true, StatusPending, 2 * time.Hour, wrong, false, StatusPending, false, 5 * time.Minute},
		{"pending, wrong, window over", true, StatusPending, window, wrong, false, StatusFailed, false, -1},
		{"pending, lookup failed, window over", true, StatusPending, window, failedLookup, false, StatusPending, false, 30 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Engine{cfg: EngineConfig{PropagationWindow: window}}
			if tt.issuer {
				e.cfg.CertIssuer = nopIssuer{}
			}
			entry := Entry{Name: "shop.example.com", Status: tt.from, PendingSince: t0.Add(-tt.pendingFor)}
			request := e.apply(&entry, tt.res, t0, tt.manual)
			if entry.Status != tt.want || request != tt.wantRequest {
				t.Fatalf("%s → %s (request %v), want %s (request %v)", tt.from, entry.Status, request, tt.want, tt.wantRequest)
			}
			switch {
			case tt.wantNext < 0 && !entry.NextCheckAt.IsZero():
				t.Errorf("next check at %v, want none", entry.NextCheckAt)
			case tt.wantNext > 0 && !entry.NextCheckAt.Equal(t0.Add(tt.wantNext)):
				t.Errorf("next check at %v, want %v", entry.NextCheckAt, t0.Add(tt.wantNext))
			}
			if entry.CheckedAt != t0 || entry.Attempts != 1 {
				t.Errorf("the check is not recorded: checked %v, attempts %d", entry.CheckedAt, entry.Attempts)
			}
		})
	}
}
