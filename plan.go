package petstore

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"
)

// Plan is a customer's subscription plan. It sets the rate limits of the
// plan's keys and gates features such as custom domains.
type Plan string

// The four plans of the spec, in ascending order.
const (
	PlanFree       Plan = "free"
	PlanPro        Plan = "pro"
	PlanBusiness   Plan = "business"
	PlanEnterprise Plan = "enterprise"
)

// Limits are the request allowances of a key: per minute and per day.
type Limits struct {
	PerMinute int64 `json:"perMinute"`
	PerDay    int64 `json:"perDay"`
}

// Valid reports whether both allowances are positive and the day allows at
// least as much as the minute.
func (l Limits) Valid() bool { return l.PerMinute > 0 && l.PerDay >= l.PerMinute }

var planLimits = map[Plan]Limits{
	PlanFree:     {PerMinute: 60, PerDay: 1_000},
	PlanPro:      {PerMinute: 300, PerDay: 10_000},
	PlanBusiness: {PerMinute: 1_000, PerDay: 100_000},
}

var planRank = map[Plan]int{PlanFree: 0, PlanPro: 1, PlanBusiness: 2, PlanEnterprise: 3}

// Plans lists every plan in ascending order.
func Plans() []Plan { return []Plan{PlanFree, PlanPro, PlanBusiness, PlanEnterprise} }

// Valid reports whether p is one of the four plans.
func (p Plan) Valid() bool { _, ok := planRank[p]; return ok }

// AtLeast reports whether p is min or a higher plan.
func (p Plan) AtLeast(min Plan) bool { return p.Valid() && planRank[p] >= planRank[min] }

// Limits returns the plan's published limits. Enterprise limits are agreed
// per customer, so for Enterprise ok is false and the key's own Limits apply.
func (p Plan) Limits() (l Limits, ok bool) {
	l, ok = planLimits[p]
	return l, ok
}

// ParsePlan parses a plan name, case-insensitively.
func ParsePlan(s string) (Plan, error) {
	p := Plan(strings.ToLower(strings.TrimSpace(s)))
	if !p.Valid() {
		return "", PlanError()
	}
	return p, nil
}

// APIKey is a stored API key: never the secret itself, which exists only
// in the caller's hands and, hashed, in the store. A key acts for its
// project, the tenant that owns custom domains.
type APIKey struct {
	ID        string    `json:"id"`
	ProjectID string    `json:"projectId"`
	Plan      Plan      `json:"plan"`
	Limits    Limits    `json:"limits"` // custom limits; used by Enterprise only
	CreatedAt time.Time `json:"createdAt"`
}

// EffectiveLimits returns the limits that apply to the key: its plan's, or
// its own for Enterprise.
func (k APIKey) EffectiveLimits() Limits {
	if l, ok := k.Plan.Limits(); ok {
		return l
	}
	return k.Limits
}

// Validate checks that the key names a project, a valid plan and, for
// Enterprise, valid custom limits.
func (k APIKey) Validate() error {
	switch {
	case k.ID == "":
		return Errorf(CodeInvalidRequest, "key id is required")
	case k.ProjectID == "":
		return Errorf(CodeInvalidRequest, "key project is required")
	case !k.Plan.Valid():
		return PlanError()
	case k.Plan == PlanEnterprise && !k.Limits.Valid():
		return Errorf(CodeInvalidRequest, "enterprise limits must be positive, with per day >= per minute")
	}
	return nil
}

// APIKeyPrefix starts every generated key, so leaked keys are easy to find
// with secret scanners.
const APIKeyPrefix = "psk_"

// GenerateAPIKey returns a new random secret key: the prefix and 256 bits
// of randomness, base64url encoded.
func GenerateAPIKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+).
	return APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashAPIKey returns the hex SHA-256 of a secret key, the form in which
// stores keep and look up keys; the secret itself is never stored. The
// hash is unsalted and fast on purpose, as GitHub's and Stripe's token
// hashes are: a lookup by hash needs the same hash for the same secret
// (a salt would force comparing against every key), and salting and
// stretching only slow down guessing a secret from a stolen hash, which is
// hopeless anyway for generated keys carrying 256 random bits (2^255
// tries on average). The argument holds only for secrets that cannot be
// guessed, so operator-chosen secrets must pass CheckSecretStrength
// (Keys.Ensure checks) before they are hashed.
func HashAPIKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// HashesEqual compares two key hashes in constant time.
func HashesEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
