package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/petstorekit/petstore"
)

// config is the server's configuration. Every flag can also be set by its
// environment variable; a flag on the command line wins.
type config struct {
	addr string
	keys []keySpec
}

// keySpec is one operator-chosen key from -keys.
type keySpec struct {
	secret string
	plan   petstore.Plan
	limits petstore.Limits
}

// parseConfig reads flags, defaulting each to its environment variable.
// Later features add their flags here (see the README's table).
func parseConfig(args []string, getenv func(string) string, out io.Writer) (config, error) {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(out)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	addr := fs.String("addr", env("PETSTORE_ADDR", ":8080"), "listen address (PETSTORE_ADDR)")
	keys := fs.String("keys", env("PETSTORE_API_KEYS", ""), "comma-separated KEY:PLAN (free|pro|business) or KEY:enterprise:PERMIN/PERDAY; none: a Pro demo key (PETSTORE_API_KEYS)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	specs, err := parseKeys(*keys)
	if err != nil {
		return config{}, fmt.Errorf("-keys: %w", err)
	}
	return config{addr: *addr, keys: specs}, nil
}

// parseKeys reads "KEY:PLAN,KEY:enterprise:PERMIN/PERDAY". The plan is
// read from the end, so a key may itself contain colons.
func parseKeys(s string) ([]keySpec, error) {
	var out []keySpec
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		rest, last, ok := cut(item)
		if !ok {
			return nil, errors.New("each key must be KEY:PLAN or KEY:enterprise:PERMIN/PERDAY")
		}
		spec := keySpec{}
		if strings.Contains(last, "/") {
			secret, plan, ok := cut(rest)
			if !ok || !strings.EqualFold(plan, "enterprise") {
				return nil, errors.New("custom limits PERMIN/PERDAY need the enterprise plan: KEY:enterprise:PERMIN/PERDAY")
			}
			perMin, perDay, _ := strings.Cut(last, "/")
			m, err1 := strconv.ParseInt(perMin, 10, 64)
			d, err2 := strconv.ParseInt(perDay, 10, 64)
			spec.limits = petstore.Limits{PerMinute: m, PerDay: d}
			if err1 != nil || err2 != nil || !spec.limits.Valid() {
				return nil, errors.New("enterprise limits must be positive integers PERMIN/PERDAY with PERDAY >= PERMIN")
			}
			spec.secret, spec.plan = secret, petstore.PlanEnterprise
		} else {
			plan, err := petstore.ParsePlan(last)
			if err != nil || plan == petstore.PlanEnterprise {
				return nil, fmt.Errorf("unknown plan %q: use free, pro, business or enterprise:PERMIN/PERDAY", last)
			}
			spec.secret, spec.plan = rest, plan
		}
		if spec.secret == "" {
			return nil, errors.New("a key must not be empty")
		}
		out = append(out, spec)
	}
	return out, nil
}

// cut splits at the last colon.
func cut(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}
