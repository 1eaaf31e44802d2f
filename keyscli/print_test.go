package keyscli_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/keyscli"
)

// TestPrintingSpecsHidesSecrets: the specs of the -keys flag, printed in
// a log line or a test failure (fmt's verbs, slog, the JSON handler's
// encoding of a slice of them included), show each key's plan but never
// its secret.
func TestPrintingSpecsHidesSecrets(t *testing.T) {
	t.Parallel()
	const secret = "psk_PLANTEDa3f09c1d2e4b5a6978c0d1e2f3a4b5c6"
	specs := []keyscli.Spec{{Secret: secret, Plan: petstore.PlanPro}}
	var v any = specs
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("keys", "specs", specs, "spec", specs[0])
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("keys", "specs", specs, "spec", specs[0])
	for _, s := range []string{
		fmt.Sprintf("%v", v), fmt.Sprintf("%+v", v), fmt.Sprintf("%#v", v), fmt.Sprintf("%s", v),
		fmt.Sprintf("%q", v), fmt.Sprintf("%x", v), fmt.Sprint(specs[0]), logged.String(),
	} {
		if strings.Contains(s, "PLANTED") || strings.Contains(s, fmt.Sprintf("%x", "PLANTED")) {
			t.Fatalf("the secret shows in %q", s)
		}
	}
	if got, want := fmt.Sprint(specs[0]), "{Secret:<redacted> Plan:pro}"; got != want {
		t.Fatalf("Sprint(spec) = %q, want %q", got, want)
	}
	ent := keyscli.Spec{Secret: secret, Plan: petstore.PlanEnterprise, Limits: petstore.Limits{PerMinute: 60, PerDay: 1000}}
	if got, want := fmt.Sprint(ent), "{Secret:<redacted> Plan:enterprise Limits:60/1000}"; got != want {
		t.Fatalf("Sprint(enterprise spec) = %q, want %q", got, want)
	}
}
