package dashboard

import (
	"context"
	"net/http"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/ratelimit"
)

// UsageReporter reports a rate-limit subject's usage for the dashboard's
// Usage panel, without counting anything. *ratelimit.Limiter implements
// it (its Config.History supplies the last hour minute by minute).
type UsageReporter interface {
	Report(ctx context.Context, subject string, limits petstore.Limits) (ratelimit.Report, error)
}

var _ UsageReporter = (*ratelimit.Limiter)(nil)

// usageBody is the body of GET <base>/api/usage.
type usageBody struct {
	KeyID   string             `json:"keyId"`
	Plan    petstore.Plan      `json:"plan"`
	At      time.Time          `json:"at"`
	Windows []usageWindow      `json:"windows"`
	Minutes []ratelimit.Minute `json:"minutes"`
	Ban     *usageBan          `json:"ban,omitempty"`
}

type usageWindow struct {
	Name      string    `json:"name"` // "minute" or "day"
	Quota     int64     `json:"quota"`
	Used      int64     `json:"used"`
	Remaining int64     `json:"remaining"`
	Reset     time.Time `json:"resetsAt,omitzero"` // zero: the window has not started
}

type usageBan struct {
	Until  time.Time `json:"until"`
	Reason string    `json:"reason"`
}

// banReason is why a key is banned: the only way a ban starts.
const banReason = "requests kept coming after the rate limit answered 429; wait for the ban to end, then honour Retry-After"

// handleUsage answers the Usage panel: the signed-in key's windows
// against its plan's limits, its last hour and its ban.
func (d *dashboard) handleUsage(w http.ResponseWriter, r *http.Request, key petstore.APIKey, _ string) error {
	if d.Usage == nil {
		return petstore.Errorf(petstore.CodeNotFound, "usage is not reported on this platform")
	}
	rep, err := d.Usage.Report(r.Context(), httpx.KeySubject(key.ID), key.EffectiveLimits())
	if err != nil {
		return err
	}
	out := usageBody{KeyID: key.ID, Plan: key.Plan, At: rep.At.UTC(), Windows: make([]usageWindow, 0, len(rep.Windows)), Minutes: orEmpty(rep.Minutes)}
	for _, win := range rep.Windows {
		uw := usageWindow{Name: win.Name, Quota: win.Quota, Remaining: win.Remaining, Used: win.Quota - win.Remaining}
		if win.Reset.After(rep.At) && win.Remaining < win.Quota {
			// A store tells a window nothing has used as one that would
			// start now; it has not started.
			uw.Reset = win.Reset.UTC()
		}
		out.Windows = append(out.Windows, uw)
	}
	if !rep.BannedUntil.IsZero() {
		out.Ban = &usageBan{Until: rep.BannedUntil.UTC(), Reason: banReason}
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}
