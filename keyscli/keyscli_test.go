package keyscli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/keyscli"
)

func newStore(t *testing.T) *bunstore.Store {
	t.Helper()
	db, err := bunstore.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := bunstore.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return bunstore.New(db)
}

func run(t *testing.T, s petstore.KeyStore, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := keyscli.Run(context.Background(), s, args, &out)
	return out.String(), err
}

// TestLifecycle walks one key through every subcommand, as an operator
// would, and checks what each prints and what the key then does.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	keys := petstore.NewKeys(s)

	out, err := run(t, s, "create", "-plan", "pro", "-project", "prj_demo")
	if err != nil {
		t.Fatal(err)
	}
	secret := regexp.MustCompile(`key:\s+(psk_\S+)`).FindStringSubmatch(out)
	id := regexp.MustCompile(`id:\s+(key_\S+)`).FindStringSubmatch(out)
	if secret == nil || id == nil {
		t.Fatalf("create printed %q; want the id and the key", out)
	}
	k, err := keys.Authenticate(ctx, secret[1])
	if err != nil || k.ID != id[1] || k.Plan != petstore.PlanPro || k.ProjectID != "prj_demo" {
		t.Fatalf("created key authenticates as %+v, %v", k, err)
	}

	out, err = run(t, s, "list")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, id[1]) || !strings.Contains(out, "prj_demo") || !strings.Contains(out, "pro") {
		t.Fatalf("list printed %q; want the key's id, project and plan", out)
	}
	if strings.Contains(out, secret[1]) || strings.Contains(out, petstore.HashAPIKey(secret[1])) {
		t.Fatalf("list printed a secret or its hash: %q", out)
	}

	if _, err := run(t, s, "set-plan", id[1], "enterprise", "-per-minute", "5", "-per-day", "50"); err != nil {
		t.Fatal(err)
	}
	if k, _ := keys.Authenticate(ctx, secret[1]); k.EffectiveLimits() != (petstore.Limits{PerMinute: 5, PerDay: 50}) {
		t.Fatalf("after set-plan the key has limits %+v", k.EffectiveLimits())
	}

	if _, err := run(t, s, "revoke", id[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Authenticate(ctx, secret[1]); petstore.ErrorCode(err) != petstore.CodeUnauthorized {
		t.Fatalf("revoked key authenticates: %v", err)
	}
}

func TestErrors(t *testing.T) {
	s := newStore(t)
	for _, tc := range []struct {
		name  string
		args  []string
		usage bool
		code  string
	}{
		{"no subcommand", nil, true, ""},
		{"unknown subcommand", []string{"rotate"}, true, ""},
		{"unknown flag", []string{"create", "-colour", "red"}, true, ""},
		{"revoke without id", []string{"revoke"}, true, ""},
		{"set-plan without plan", []string{"set-plan", "key_x"}, true, ""},
		// A wrong flag value or argument is a malformed command line too
		// (status 2, docs/operating.md), keeping its code; keyscli refuses
		// it before asking the store anything.
		{"bad plan", []string{"create", "-plan", "gold"}, true, petstore.CodeInvalidRequest},
		{"set-plan bad plan", []string{"set-plan", "key_x", "gold"}, true, petstore.CodeInvalidRequest},
		{"enterprise without limits", []string{"create", "-plan", "enterprise"}, true, petstore.CodeInvalidRequest},
		{"set-plan enterprise day under minute", []string{"set-plan", "key_x", "enterprise", "-per-minute", "5", "-per-day", "1"}, true, petstore.CodeInvalidRequest},
		{"revoke unknown", []string{"revoke", "key_missing"}, false, petstore.CodeNotFound},
		{"set-plan unknown", []string{"set-plan", "key_missing", "pro"}, false, petstore.CodeNotFound},
		{"create limits without enterprise", []string{"create", "-plan", "pro", "-per-minute", "5", "-per-day", "50"}, true, petstore.CodeInvalidRequest},
		{"set-plan limits without enterprise", []string{"set-plan", "key_x", "business", "-per-day", "50"}, true, petstore.CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, s, tc.args...)
			if err == nil {
				t.Fatal("succeeded, want an error")
			}
			if got := errors.Is(err, keyscli.ErrUsage); got != tc.usage {
				t.Fatalf("usage error = %v (%v), want %v", got, err, tc.usage)
			}
			if tc.code != "" && petstore.ErrorCode(err) != tc.code {
				t.Fatalf("code = %q (%v), want %q", petstore.ErrorCode(err), err, tc.code)
			}
		})
	}
}

func ExampleRun() {
	db, err := bunstore.OpenMemory()
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := bunstore.Migrate(ctx, db); err != nil {
		panic(err)
	}
	store := bunstore.New(db)
	// An operator's key, as the server's -keys flag would store it.
	if _, err := petstore.NewKeys(store).Ensure(ctx, "psk_Operator7kW2xQ9mB4vTJd6", petstore.PlanBusiness, petstore.Limits{}); err != nil {
		panic(err)
	}

	// What "server keys list" prints: ids, projects, plans; no secrets.
	var out bytes.Buffer
	if err := keyscli.Run(ctx, store, []string{"list"}, &out); err != nil {
		panic(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	fmt.Println(strings.Fields(lines[0]))
	fmt.Println(len(lines)-1, "key on plan", strings.Fields(lines[1])[2])
	// Output:
	// [ID PROJECT PLAN PER MINUTE PER DAY CREATED]
	// 1 key on plan business
}

// TestRevokeSticksUntilUnrevoke: a key listed by an operator and revoked
// is not added again by Ensure (what a restart runs); unrevoke brings it
// back with its id, and its usage errors are usage errors.
func TestRevokeSticksUntilUnrevoke(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	keys := petstore.NewKeys(s)
	spec := keyscli.Spec{Secret: keyA, Plan: petstore.PlanPro}
	if err := keyscli.Ensure(ctx, keys, []keyscli.Spec{spec}, nil); err != nil {
		t.Fatal(err)
	}
	k, err := keys.Authenticate(ctx, keyA)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, s, "revoke", k.ID); err != nil || !strings.Contains(out, "keys unrevoke "+k.ID) {
		t.Fatalf("revoke: %v %q", err, out)
	}
	if err := keyscli.Ensure(ctx, keys, []keyscli.Spec{spec}, nil); err != nil {
		t.Fatalf("Ensure of a revoked key must go on without it: %v", err)
	}
	if _, err := keys.Authenticate(ctx, keyA); petstore.ErrorCode(err) != petstore.CodeUnauthorized {
		t.Fatalf("revoked key after Ensure: %v, want unauthorized", err)
	}
	for _, args := range [][]string{{"unrevoke"}, {"unrevoke", "a", "b"}} {
		if _, err := run(t, s, args...); !errors.Is(err, keyscli.ErrUsage) {
			t.Fatalf("%v: %v, want a usage error", args, err)
		}
	}
	if out, err := run(t, s, "unrevoke", k.ID); err != nil || !strings.Contains(out, "reinstated "+k.ID) {
		t.Fatalf("unrevoke: %v %q", err, out)
	}
	if got, err := keys.Authenticate(ctx, keyA); err != nil || got.ID != k.ID || got.ProjectID != k.ProjectID {
		t.Fatalf("after unrevoke: %+v, %v; want %+v", got, err, k)
	}
}

// TestLimitsNeedTheEnterprisePlan: -per-minute and -per-day with another
// plan are refused, as -keys refuses KEY:pro:5/50, rather than dropped
// while the command reports success; nothing is stored or changed.
func TestLimitsNeedTheEnterprisePlan(t *testing.T) {
	s := newStore(t)
	if out, err := run(t, s, "create", "-plan", "free", "-per-minute", "1000", "-per-day", "100000"); err == nil {
		t.Fatalf("create -plan free with limits succeeded:\n%s", out)
	}
	if all, _ := petstore.NewKeys(s).List(context.Background()); len(all) != 0 {
		t.Fatalf("a refused create stored %+v", all)
	}
	out, err := run(t, s, "create", "-plan", "free")
	if err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`id:\s+(key_\S+)`).FindStringSubmatch(out)[1]
	if out, err := run(t, s, "set-plan", id, "pro", "-per-minute", "5", "-per-day", "50"); err == nil {
		t.Fatalf("set-plan pro with limits succeeded:\n%s", out)
	}
	if all, _ := petstore.NewKeys(s).List(context.Background()); len(all) != 1 || all[0].Plan != petstore.PlanFree {
		t.Fatalf("a refused set-plan changed the key: %+v", all)
	}
}

// TestASecretGivenForAnIDIsNotEchoed: an operator who pastes a key's
// secret where its id goes (`keys revoke psk_…`, the leaked key at hand)
// is told no key has that id, without the secret printed back on the
// terminal or in a CI log.
func TestASecretGivenForAnIDIsNotEchoed(t *testing.T) {
	s := newStore(t)
	_, secret, err := petstore.NewKeys(s).Create(context.Background(), "", petstore.PlanPro, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"revoke", secret},
		{"unrevoke", secret},
		{"set-plan", secret, "business"},
	} {
		t.Run(args[0], func(t *testing.T) {
			_, err := run(t, s, args...)
			if petstore.ErrorCode(err) != petstore.CodeNotFound {
				t.Fatalf("err = %v, want not_found", err)
			}
			if strings.Contains(err.Error(), secret[4:12]) {
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}
}

// TestArgumentErrorsDoNotEchoWhatWasTyped: a secret typed or pasted in
// the wrong place on a keys command line (as the subcommand, an argument,
// a flag or a flag's value) is refused as a usage error that says what was
// wrong without printing the secret back on the terminal or in a CI log;
// nothing is stored.
func TestArgumentErrorsDoNotEchoWhatWasTyped(t *testing.T) {
	const secret = "psk_PLANTEDa3f09c1d2e4b5a6978c0d1e2f3a4b5c6"
	s := newStore(t)
	for _, tc := range []struct {
		name string
		args []string
		says string // what the error says was wrong
	}{
		{"as the subcommand", []string{secret}, "unknown subcommand"},
		{"after create", []string{"create", secret}, "create takes no arguments"},
		{"after list", []string{"list", secret}, "list takes no arguments"},
		{"after a revoke's id", []string{"revoke", "key_x", secret}, "revoke takes one key id"},
		{"as a flag", []string{"create", "-" + secret}, "unknown flag"},
		{"as a flag with a value", []string{"set-plan", "key_x", "pro", "--" + secret + "=1"}, "unknown flag"},
		{"as a limit", []string{"create", "-plan", "enterprise", "-per-minute", secret, "-per-day", "5"}, "-per-minute takes a whole number"},
		{"as a limit after =", []string{"set-plan", "key_x", "enterprise", "-per-day=" + secret}, "-per-day takes a whole number"},
		{"as the plan", []string{"create", "-plan", secret}, "plan must be one of"},
		{"as set-plan's plan", []string{"set-plan", "key_x", secret}, "plan must be one of"},
		{"as the project", []string{"create", "-project", secret}, "-project takes a project id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, s, tc.args...)
			if !errors.Is(err, keyscli.ErrUsage) {
				t.Fatalf("err = %v, want a usage error (output %q)", err, out)
			}
			if strings.Contains(err.Error(), "PLANTED") {
				t.Fatalf("the error shows the secret: %v", err)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want it to say %q", err, tc.says)
			}
		})
	}
	if all, _ := petstore.NewKeys(s).List(context.Background()); len(all) != 0 {
		t.Fatalf("a refused command stored %+v", all)
	}
}
