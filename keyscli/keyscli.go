// Package keyscli is the logic of a server's "keys" subcommand: create,
// list, revoke and re-plan API keys in whatever petstore.KeyStore the
// server is configured with. A server only dispatches to Run; this package
// owns the flags, the output and the rule that a secret is printed once and
// never listed.
package keyscli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/petstorekit/petstore"
)

// Usage describes the subcommands, for a server's help text.
const Usage = `usage:
  keys create [-plan free|pro|business|enterprise] [-project ID] [-per-minute N -per-day N]
  keys list
  keys revoke ID
  keys unrevoke ID
  keys set-plan ID PLAN [-per-minute N -per-day N]
-per-minute and -per-day set the custom limits of the enterprise plan
(and are refused with another plan).
A revoked key stays revoked, even when a server's -keys still lists it,
until "keys unrevoke ID" reinstates it with its id, project and plan.`

// ErrUsage is wrapped by the errors Run returns for a malformed command
// line, a wrong plan or custom limits included (those keep their
// invalid_request *petstore.Error too); a server prints Usage and exits
// with status 2 for them.
var ErrUsage = errors.New("keys: bad usage")

func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUsage}, args...)...)
}

// badValue makes err, a plan or limits the command line got wrong, a
// usage error that keeps err's code and message.
func badValue(err error) error {
	return fmt.Errorf("%w: %w", ErrUsage, err)
}

// Run executes the keys subcommand in args (args[0] is create, list,
// revoke, unrevoke or set-plan) against store, writing its output to w. Secrets appear in
// the output of create only. opts configure the key manager; running
// servers that cache keys (keycache) learn of a revoke or a plan change
// through the hook of petstore.WithKeyChangeHook.
func Run(ctx context.Context, store petstore.KeyStore, args []string, w io.Writer, opts ...petstore.KeysOption) error {
	if len(args) == 0 {
		return usagef("missing subcommand")
	}
	keys := petstore.NewKeys(store, opts...)
	cmd, rest := args[0], args[1:]
	fs := flag.NewFlagSet("keys "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		plan      = "free"
		project   string
		perMinute int64
		perDay    int64
	)
	switch cmd {
	case "create":
		fs.StringVar(&plan, "plan", plan, "plan of the new key")
		fs.StringVar(&project, "project", "", "project the key acts for (default: a new project)")
		fallthrough
	case "set-plan":
		fs.Int64Var(&perMinute, "per-minute", 0, "enterprise requests per minute")
		fs.Int64Var(&perDay, "per-day", 0, "enterprise requests per day")
	case "list", "revoke", "unrevoke":
	default:
		// Not quoted, as no argument error quotes what was typed: it may
		// be a secret pasted in the wrong place.
		return usagef("unknown subcommand: use create, list, revoke, unrevoke or set-plan")
	}
	pos, err := parseInterleaved(fs, rest)
	if err != nil {
		return usagef("%v", err)
	}
	limits := petstore.Limits{PerMinute: perMinute, PerDay: perDay}
	// Custom limits belong to the enterprise plan; given with another,
	// they are refused rather than dropped, as -keys refuses KEY:pro:5/50.
	// Like an unknown plan, that is a wrong value on the command line:
	// refused before the store is asked.
	customLimits := false
	fs.Visit(func(f *flag.Flag) { customLimits = customLimits || f.Name == "per-minute" || f.Name == "per-day" })
	parsePlan := func(s string) (petstore.Plan, error) {
		p, err := petstore.ParsePlan(s)
		switch {
		case err != nil:
			return "", badValue(err)
		case customLimits && p != petstore.PlanEnterprise:
			return "", badValue(petstore.Errorf(petstore.CodeInvalidRequest, "-per-minute and -per-day set the custom limits of the enterprise plan only, not of %s", p))
		case p == petstore.PlanEnterprise && !limits.Valid():
			return "", badValue(petstore.Errorf(petstore.CodeInvalidRequest, "enterprise limits must be positive, with per day >= per minute"))
		}
		return p, nil
	}

	switch cmd {
	case "create":
		if len(pos) != 0 {
			return usagef("create takes no arguments, only flags (got %d)", len(pos))
		}
		if strings.HasPrefix(project, petstore.APIKeyPrefix) {
			return usagef("-project takes a project id (prj_…, as `keys list` shows), not a key")
		}
		p, err := parsePlan(plan)
		if err != nil {
			return err
		}
		key, secret, err := keys.Create(ctx, project, p, limits)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "id:      %s\nproject: %s\nplan:    %s\nkey:     %s\n", key.ID, key.ProjectID, key.Plan, secret)
		fmt.Fprintln(w, "The key is shown once and cannot be shown again: store it now.")
		return nil
	case "list":
		if len(pos) != 0 {
			return usagef("list takes no arguments")
		}
		all, err := keys.List(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tPROJECT\tPLAN\tPER MINUTE\tPER DAY\tCREATED")
		for _, k := range all {
			l := k.EffectiveLimits()
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", k.ID, k.ProjectID, k.Plan, l.PerMinute, l.PerDay, created(k.CreatedAt))
		}
		return tw.Flush()
	case "revoke":
		if len(pos) != 1 {
			return usagef("revoke takes one key id")
		}
		if err := keys.Revoke(ctx, pos[0]); err != nil {
			return unknownID(err, "no key has the id given")
		}
		fmt.Fprintf(w, "revoked %s: it stays revoked, even where -keys lists its secret, until \"keys unrevoke %s\"\n", pos[0], pos[0])
		return nil
	case "unrevoke":
		if len(pos) != 1 {
			return usagef("unrevoke takes one key id")
		}
		k, err := keys.Unrevoke(ctx, pos[0])
		if err != nil {
			return unknownID(err, "no revoked key has the id given")
		}
		fmt.Fprintf(w, "reinstated %s (project %s, plan %s)\n", k.ID, k.ProjectID, k.Plan)
		return nil
	default: // set-plan
		if len(pos) != 2 {
			return usagef("set-plan takes a key id and a plan")
		}
		p, err := parsePlan(pos[1])
		if err != nil {
			return err
		}
		k, err := keys.SetPlan(ctx, pos[0], p, limits)
		if err != nil {
			return unknownID(err, "no key has the id given")
		}
		l := k.EffectiveLimits()
		fmt.Fprintf(w, "%s is now on plan %s (%d per minute, %d per day)\n",
			k.ID, k.Plan, l.PerMinute, l.PerDay)
		return nil
	}
}

// unknownID replaces a store's not_found error, which quotes the id it
// was given, by one saying msg: an operator who pastes a key's secret
// where its id goes would see it printed back, on a terminal or in a CI
// log. Other errors pass unchanged.
func unknownID(err error, msg string) error {
	if petstore.ErrorCode(err) != petstore.CodeNotFound {
		return err
	}
	return petstore.Errorf(petstore.CodeNotFound, "%s (ids begin key_, and `keys list` shows them)", msg)
}

// parseInterleaved parses flags wherever they appear among the positional
// arguments ("set-plan ID enterprise -per-minute 5"), which the flag
// package alone stops at. Its errors name the flag when fs defines it and
// never quote what was typed, as the flag package's do ("flag provided
// but not defined: -psk_…", "invalid value \"psk_…\""): a secret pasted
// in the wrong place would be printed back.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return append(pos, args[i+1:]...), nil
		}
		if len(arg) < 2 || arg[0] != '-' {
			pos = append(pos, arg)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(arg[1:], "-"), "=")
		f := fs.Lookup(name)
		if f == nil {
			if name == "h" || name == "help" {
				return nil, flag.ErrHelp
			}
			return nil, fmt.Errorf("unknown flag: %s", flagsOf(fs))
		}
		if !hasValue {
			if i+1 == len(args) {
				return nil, fmt.Errorf("-%s needs a value", name)
			}
			i++
			value = args[i]
		}
		// Only the integer flags can refuse a value.
		if err := fs.Set(name, value); err != nil {
			return nil, fmt.Errorf("-%s takes a whole number", name)
		}
	}
	return pos, nil
}

// flagsOf says which flags fs takes.
func flagsOf(fs *flag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "-"+f.Name) })
	if len(names) == 0 {
		return fs.Name() + " takes no flags"
	}
	return fs.Name() + " takes " + strings.Join(names, ", ")
}

func created(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
