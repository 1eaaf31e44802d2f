package keyscli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/petstorekit/petstore"
)

// Spec is one operator-chosen key, as a server's -keys flag gives it.
// Printed (fmt's verbs, slog, encoding/json), it shows its plan and limits but never its
// Secret.
type Spec struct {
	Secret string
	Plan   petstore.Plan
	Limits petstore.Limits // Enterprise only
}

// String describes s with its Secret redacted, so that specs printed in a
// log line or a test failure do not leak the keys, as fmt would print
// every field otherwise.
func (s Spec) String() string {
	if s.Plan == petstore.PlanEnterprise {
		return fmt.Sprintf("{Secret:<redacted> Plan:%s Limits:%d/%d}", s.Plan, s.Limits.PerMinute, s.Limits.PerDay)
	}
	return fmt.Sprintf("{Secret:<redacted> Plan:%s}", s.Plan)
}

// GoString is String, for %#v.
func (s Spec) GoString() string { return "keyscli.Spec" + s.String() }

// LogValue is String, for slog handlers (JSON among them) that would
// otherwise log the fields.
func (s Spec) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON encodes String, a JSON string: slog's JSON handler encodes
// a slice of specs, or a struct holding one, with encoding/json, which
// would write the Secret field otherwise.
func (s Spec) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// ParseSpecs reads the -keys flag: a comma-separated list of KEY:PLAN
// (free, pro or business) or KEY:enterprise:PERMIN/PERDAY. The plan is read
// from the end. Every KEY must pass
// petstore.CheckSecretStrength (128 random bits in hex or base64, or a
// generated key) and appear once: keys are stored as unsalted
// hashes, safe only for secrets too random to guess, and a secret given
// twice would silently keep only one plan. Errors name the key by its
// position, never by its text.
func ParseSpecs(s string) ([]Spec, error) {
	var out []Spec
	seen := map[string]int{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		rest, last, ok := cutLast(item)
		if !ok {
			return nil, errors.New("each key must be KEY:PLAN or KEY:enterprise:PERMIN/PERDAY")
		}
		var spec Spec
		if strings.Contains(last, "/") {
			secret, plan, ok := cutLast(rest)
			if !ok || !strings.EqualFold(plan, "enterprise") {
				return nil, errors.New("custom limits PERMIN/PERDAY need the enterprise plan: KEY:enterprise:PERMIN/PERDAY")
			}
			perMin, perDay, _ := strings.Cut(last, "/")
			m, err1 := strconv.ParseInt(perMin, 10, 64)
			d, err2 := strconv.ParseInt(perDay, 10, 64)
			spec.Limits = petstore.Limits{PerMinute: m, PerDay: d}
			if err1 != nil || err2 != nil || !spec.Limits.Valid() {
				return nil, errors.New("enterprise limits must be positive integers PERMIN/PERDAY with PERDAY >= PERMIN")
			}
			spec.Secret, spec.Plan = secret, petstore.PlanEnterprise
		} else {
			plan, err := petstore.ParsePlan(last)
			if err != nil || plan == petstore.PlanEnterprise {
				// Not quoted: a key and plan given in the wrong order would
				// put the secret here.
				return nil, errors.New("unknown plan after the last colon: use free, pro, business or enterprise:PERMIN/PERDAY")
			}
			spec.Secret, spec.Plan = rest, plan
		}
		if spec.Secret == "" {
			return nil, errors.New("a key must not be empty")
		}
		if err := checkSecret(spec.Secret, len(out)+1, seen); err != nil {
			return nil, err
		}
		out = append(out, spec)
	}
	return out, nil
}

// Ensure stores every spec's key, or updates its plan when it is stored
// already: each new key becomes its own project. It refuses, before
// storing any, a weak secret or one given twice, as ParseSpecs does. A
// spec whose key was revoked is not stored again: Ensure says so on
// logger, once, by the spec's position and the key's id (never the
// secret), and goes on with the others.
func Ensure(ctx context.Context, keys *petstore.Keys, specs []Spec, logger *slog.Logger) error {
	seen := map[string]int{}
	for i, s := range specs {
		if err := checkSecret(s.Secret, i+1, seen); err != nil {
			return err
		}
	}
	for i, s := range specs {
		if _, _, err := EnsureOne(ctx, keys, s, i+1, logger); err != nil {
			return err
		}
	}
	return nil
}

// EnsureOne stores the n-th spec's key (1-based) as Ensure does. It
// returns the key, and stored false when the key was revoked and is left
// so, which it logs.
func EnsureOne(ctx context.Context, keys *petstore.Keys, s Spec, n int, logger *slog.Logger) (key petstore.APIKey, stored bool, err error) {
	k, err := keys.Ensure(ctx, s.Secret, s.Plan, s.Limits)
	if errors.Is(err, petstore.ErrKeyRevoked) {
		if logger != nil {
			logger.Warn("a key listed in -keys was revoked and is not added again; \"keys unrevoke ID\" reinstates it",
				"key", fmt.Sprintf("#%d", n), "id", k.ID, "project", k.ProjectID)
		}
		return k, false, nil
	}
	if err != nil {
		return petstore.APIKey{}, false, fmt.Errorf("store key: %w", err)
	}
	return k, true, nil
}

// checkSecret refuses the n-th key (1-based) when it is weak or when an
// earlier one had the same secret, recording it in seen.
func checkSecret(secret string, n int, seen map[string]int) error {
	if err := petstore.CheckSecretStrength(secret); err != nil {
		// "key is too guessable…" becomes "key #2 is too guessable…".
		return fmt.Errorf("key #%d %s", n, strings.TrimPrefix(petstore.ErrorMessage(err), "key "))
	}
	if first, dup := seen[secret]; dup {
		return fmt.Errorf("key #%d is the same secret as key #%d: give each secret once", n, first)
	}
	seen[secret] = n
	return nil
}

// cutLast splits at the last colon.
func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}
