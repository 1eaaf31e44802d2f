package keyscli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/keyscli"
)

// Secrets strong enough for petstore.CheckSecretStrength.
const (
	keyA = "psk_Alpha3kW9xQ2mT7vB4nZrE"
	keyB = "psk_Bravo8jR2pZ6cY1wN5xHq4"
	keyC = "psk_Charlie4gH7tL9qD2fSVm8"
)

func TestParseSpecs(t *testing.T) {
	none := petstore.Limits{}
	tests := []struct {
		in   string
		want []keyscli.Spec
		bad  string // a part of the error; "" means no error
	}{
		{in: "", want: nil},
		{in: keyA + ":free, " + keyB + ":PRO," + keyC + ":business", want: []keyscli.Spec{{keyA, petstore.PlanFree, none}, {keyB, petstore.PlanPro, none}, {keyC, petstore.PlanBusiness, none}}},
		{in: keyA + ":y:pro", bad: "key #1 is too guessable"}, // a colon is in no documented alphabet
		{in: keyA + ":enterprise:100/5000", want: []keyscli.Spec{{keyA, petstore.PlanEnterprise, petstore.Limits{PerMinute: 100, PerDay: 5000}}}},
		{in: keyA + ":b:enterprise:1/2", bad: "key #1 is too guessable"},
		{in: "nokey", bad: "KEY:PLAN"},
		{in: ":pro", bad: "empty"},
		{in: keyA + ":gold", bad: "unknown plan"},
		{in: keyA + ":enterprise", bad: "unknown plan"},
		{in: "pro:" + keyA, bad: "unknown plan"}, // the wrong order: the secret is where the plan goes
		{in: keyA + ":pro:1/2", bad: "enterprise"},
		{in: keyA + ":enterprise:10/5", bad: "enterprise limits"},
		{in: keyA + ":enterprise:0/5", bad: "enterprise limits"},
		{in: keyA + ":enterprise:x/5", bad: "enterprise limits"},
		// Weak and repeated secrets: stored as unsalted hashes, they must
		// not be guessable.
		{in: "a:pro", bad: "key #1 is too guessable"},
		{in: keyA + ":free,KEY:enterprise:1/100", bad: "key #2 is too guessable"},
		{in: "correcthorsebatterystaple:free", bad: "too guessable"},
		{in: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:free", bad: "too guessable"},
		{in: "password1234567890abcdefgh:free", bad: "too guessable"},
		{in: "abcdefghijklmnopqrstuvwxyz:free", bad: "too guessable"},
		{in: keyA + ":free," + keyB + ":pro," + keyA + ":business", bad: "key #3 is the same secret as key #1"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := keyscli.ParseSpecs(tt.in)
			if tt.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tt.bad) {
					t.Fatalf("err = %v, want one saying %q", err, tt.bad)
				}
				if strings.Contains(err.Error(), "psk_") || strings.Contains(err.Error(), "aaaa") {
					t.Fatalf("error %q shows the secret", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Fatalf("got %+v, want %+v", got[i], tt.want[i])
				}
			}
		})
	}
}

// TestEnsureRefusesWeakAndDuplicateSecrets: specs built in code are held
// to the flag's rules, and nothing is stored when one fails.
func TestEnsureRefusesWeakAndDuplicateSecrets(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	keys := petstore.NewKeys(store)
	for _, specs := range [][]keyscli.Spec{
		{{Secret: keyA, Plan: petstore.PlanFree}, {Secret: "short", Plan: petstore.PlanPro}},
		{{Secret: keyA, Plan: petstore.PlanFree}, {Secret: keyA, Plan: petstore.PlanPro}},
	} {
		if err := keyscli.Ensure(ctx, keys, specs, nil); err == nil {
			t.Fatalf("Ensure(%d specs) accepted a weak or repeated secret", len(specs))
		}
	}
	if list, _ := keys.List(ctx); len(list) != 0 {
		t.Fatalf("%d keys stored", len(list))
	}
	if _, err := keys.Ensure(ctx, "tooweak", petstore.PlanFree, petstore.Limits{}); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
		t.Fatalf("Keys.Ensure of a weak secret: %v, want invalid_request", err)
	}
	if err := keyscli.Ensure(ctx, keys, []keyscli.Spec{{Secret: keyA, Plan: petstore.PlanFree}, {Secret: keyB, Plan: petstore.PlanPro}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Authenticate(ctx, keyB); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseSpecs checks that whatever ParseSpecs accepts is a key the
// store would accept too.
func FuzzParseSpecs(f *testing.F) {
	for _, s := range []string{
		keyA + ":free", keyA + ":enterprise:1/2," + keyB + ":pro", "x:y:z", ":::", keyA + ":enterprise:9999999999999999999/1",
		"a:pro", "KEY:enterprise:1/100", keyA + ":free," + keyA + ":pro",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		specs, err := keyscli.ParseSpecs(s)
		if err != nil {
			return
		}
		for _, k := range specs {
			key := petstore.APIKey{ID: "id", ProjectID: "p", Plan: k.Plan, Limits: k.Limits}
			if k.Secret == "" || key.Validate() != nil || petstore.CheckSecretStrength(k.Secret) != nil {
				t.Fatalf("%q accepted as %+v", s, k)
			}
		}
	})
}
