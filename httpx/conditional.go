package httpx

import (
	"maps"
	"net/http"
	"time"

	"github.com/petstorekit/petstore"
)

// ConditionalLimits are the allowance of a key's conditional requests
// (If-None-Match), ten times its plan's: a 304 spends only this.
func ConditionalLimits(plan petstore.Limits) petstore.Limits {
	return petstore.Limits{PerMinute: 10 * plan.PerMinute, PerDay: 10 * plan.PerDay}
}

// isConditional reports whether r may be answered 304 Not Modified.
func isConditional(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.Header.Get("If-None-Match") != ""
}

// chargeUnlessNotModified spends the plan's quota of a conditional
// request whose answer is not 304, or drops that answer for the 429.
type chargeUnlessNotModified struct {
	http.ResponseWriter
	r                         *http.Request
	l                         *limits
	decided, refused, charged bool
	chargedAt                 time.Time // the plan's decision, when charged
}

func (c *chargeUnlessNotModified) WriteHeader(status int) {
	if !c.decided {
		c.decided = true
		if status != http.StatusNotModified {
			c.charge()
		}
	}
	if !c.refused {
		c.ResponseWriter.WriteHeader(status)
	}
}

func (c *chargeUnlessNotModified) Write(b []byte) (int, error) {
	if !c.decided {
		c.WriteHeader(http.StatusOK)
	}
	if c.refused {
		return len(b), nil
	}
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (c *chargeUnlessNotModified) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func (c *chargeUnlessNotModified) charge() {
	st := stateOf(c.r.Context())
	h := c.ResponseWriter.Header()
	saved := h.Clone()
	// A 429 carries the chain's headers, none of the handler's.
	maps.DeleteFunc(h, func(k string, _ []string) bool { return k != "X-Request-Id" && k != "X-Api-Stability" })
	if at, ok := c.l.decide(c.ResponseWriter, c.r, KeySubject(st.key.ID), st.key.EffectiveLimits()); ok {
		c.charged, c.chargedAt = true, at
		for k, v := range saved {
			if _, set := h[k]; !set {
				h[k] = v
			}
		}
		return
	}
	c.refused = true
}
