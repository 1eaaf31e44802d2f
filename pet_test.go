package petstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
)

func TestNewPetValidate(t *testing.T) {
	tests := []struct {
		name string
		pet  petstore.NewPet
		want string // "" for valid, else the message
	}{
		{"minimal", petstore.NewPet{Name: "Rex", CategoryID: 1}, ""},
		{"every status", petstore.NewPet{Name: "Rex", CategoryID: 1, Status: petstore.StatusSold}, ""},
		{"max int64 category", petstore.NewPet{Name: "Rex", CategoryID: 1<<63 - 1}, ""},
		{"255 code points of 4 bytes", petstore.NewPet{Name: strings.Repeat("🐈", 255), CategoryID: 1}, ""},
		{"inner spaces", petstore.NewPet{Name: " Mr  Whiskers ", CategoryID: 1}, ""},
		{"missing name", petstore.NewPet{CategoryID: 1}, "name is required"},
		{"blank name", petstore.NewPet{Name: " \t\u00a0 ", CategoryID: 1}, "name must not be blank"},
		{"256 code points", petstore.NewPet{Name: strings.Repeat("a", 256), CategoryID: 1}, "name must be at most 255 characters"},
		{"control character", petstore.NewPet{Name: "Re\x00x", CategoryID: 1}, "name must not contain control characters"},
		{"newline", petstore.NewPet{Name: "Re\nx", CategoryID: 1}, "name must not contain control characters"},
		{"invalid UTF-8", petstore.NewPet{Name: "Re\xffx", CategoryID: 1}, "name must be valid UTF-8"},
		{"zero category", petstore.NewPet{Name: "Rex"}, "categoryId must be an integer >= 1"},
		{"negative category", petstore.NewPet{Name: "Rex", CategoryID: -5}, "categoryId must be an integer >= 1"},
		{"unknown status", petstore.NewPet{Name: "Rex", CategoryID: 1, Status: "lost"}, "status must be one of available, pending, sold"},
		{"wrong-case status", petstore.NewPet{Name: "Rex", CategoryID: 1, Status: "Sold"}, "status must be one of available, pending, sold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.pet.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want valid", err)
				}
				return
			}
			var e *petstore.Error
			if !errors.As(err, &e) {
				t.Fatalf("Validate() = %v, want *petstore.Error", err)
			}
			if e.Code != petstore.CodeInvalidRequest || e.Message != tt.want {
				t.Fatalf("Validate() = %+v, want invalid_request %q", e, tt.want)
			}
		})
	}
}

func TestCursorRoundTrip(t *testing.T) {
	for _, id := range []int64{0, 1, 42, 1<<63 - 1} {
		got, err := petstore.DecodeCursor(petstore.EncodeCursor(id))
		if err != nil || got != id {
			t.Fatalf("DecodeCursor(EncodeCursor(%d)) = %d, %v", id, got, err)
		}
	}
	for _, bad := range []string{"", "!!!", "djE6", "djI6MQ", "djE6LTE", "djE6MDE", "djE6YWJj", "djE6OTIyMzM3MjAzNjg1NDc3NTgwOA", strings.Repeat("A", 100), "djE6MQ\n", "djE6\nMQ", "djE6MQ\r"} {
		if _, err := petstore.DecodeCursor(bad); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
			t.Errorf("DecodeCursor(%q) = %v, want invalid_request", bad, err)
		}
	}
}

// FuzzDecodeCursor checks that any string either decodes to an id that
// encodes back to exactly that string, or is an invalid_request error.
func FuzzDecodeCursor(f *testing.F) {
	for _, s := range []string{petstore.EncodeCursor(1), petstore.EncodeCursor(1<<63 - 1), "", "djE6", "djE6LTE", "====", "v1:5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := petstore.DecodeCursor(s)
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("DecodeCursor(%q) error %v is not invalid_request", s, err)
			}
			return
		}
		if id < 0 || petstore.EncodeCursor(id) != s {
			t.Fatalf("DecodeCursor(%q) = %d, which encodes to %q", s, id, petstore.EncodeCursor(id))
		}
	})
}

func TestErrorHelpers(t *testing.T) {
	app := petstore.Errorf(petstore.CodeNotFound, "pet %d not found", 7)
	wrapped := fmt.Errorf("get: %w", app)
	internal := errors.New("pq: connection reset by peer at 10.0.0.5")
	tests := []struct {
		err     error
		code    string
		message string
	}{
		{nil, "", ""},
		{app, petstore.CodeNotFound, "pet 7 not found"},
		{wrapped, petstore.CodeNotFound, "pet 7 not found"},
		{internal, petstore.CodeInternal, "Internal error."},
		{&petstore.Error{Code: petstore.CodeRateLimited, Message: "slow down"}, petstore.CodeRateLimited, "slow down"},
	}
	for _, tt := range tests {
		if got := petstore.ErrorCode(tt.err); got != tt.code {
			t.Errorf("ErrorCode(%v) = %q, want %q", tt.err, got, tt.code)
		}
		if got := petstore.ErrorMessage(tt.err); got != tt.message {
			t.Errorf("ErrorMessage(%v) = %q, want %q", tt.err, got, tt.message)
		}
		if tt.err != nil {
			e := petstore.AsError(tt.err)
			if e.Code != tt.code || e.Message != tt.message {
				t.Errorf("AsError(%v) = %+v", tt.err, e)
			}
		}
	}
	if !errors.Is(wrapped, &petstore.Error{Code: petstore.CodeNotFound}) {
		t.Error("errors.Is does not match by code")
	}
}

func TestPlans(t *testing.T) {
	want := map[petstore.Plan]petstore.Limits{
		petstore.PlanFree:     {PerMinute: 60, PerDay: 1000},
		petstore.PlanPro:      {PerMinute: 300, PerDay: 10000},
		petstore.PlanBusiness: {PerMinute: 1000, PerDay: 100000},
	}
	for plan, limits := range want {
		if got, ok := plan.Limits(); !ok || got != limits {
			t.Errorf("%s.Limits() = %v, %v; want %v", plan, got, ok, limits)
		}
	}
	ent := petstore.APIKey{Plan: petstore.PlanEnterprise, Limits: petstore.Limits{PerMinute: 5, PerDay: 50}}
	if ent.EffectiveLimits() != ent.Limits {
		t.Errorf("enterprise key uses %v, want its own %v", ent.EffectiveLimits(), ent.Limits)
	}
	if !petstore.PlanPro.AtLeast(petstore.PlanPro) || petstore.PlanFree.AtLeast(petstore.PlanPro) || !petstore.PlanEnterprise.AtLeast(petstore.PlanPro) {
		t.Error("AtLeast orders plans wrongly")
	}
	if p, err := petstore.ParsePlan(" PRO "); err != nil || p != petstore.PlanPro {
		t.Errorf("ParsePlan(\" PRO \") = %q, %v", p, err)
	}
	if _, err := petstore.ParsePlan("gold"); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
		t.Errorf("ParsePlan(gold) = %v", err)
	}
}

func TestServiceDefaultStatus(t *testing.T) {
	ctx := context.Background()
	plain := petstore.NewService(memstore.New())
	p, err := plain.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1})
	if err != nil || p.Status != "" {
		t.Fatalf("no default configured: %+v, %v; want no status stored", p, err)
	}
	withDefault := petstore.NewService(memstore.New(), petstore.WithDefaultStatus(petstore.StatusAvailable))
	p, err = withDefault.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1})
	if err != nil || p.Status != petstore.StatusAvailable {
		t.Fatalf("default available: %+v, %v", p, err)
	}
	p, err = withDefault.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1, Status: petstore.StatusSold})
	if err != nil || p.Status != petstore.StatusSold {
		t.Fatalf("explicit status overridden by the default: %+v, %v", p, err)
	}
}

func TestServiceListPetsRejects(t *testing.T) {
	svc := petstore.NewService(memstore.New())
	for _, f := range []petstore.PetFilter{{Limit: -1}, {Limit: 101}, {Status: "lost"}, {Cursor: "garbage!"}} {
		if _, err := svc.ListPets(context.Background(), f); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
			t.Errorf("ListPets(%+v) = %v, want invalid_request", f, err)
		}
	}
	if _, err := svc.GetPet(context.Background(), 0); petstore.ErrorCode(err) != petstore.CodeNotFound {
		t.Errorf("GetPet(0) = %v, want not_found", err)
	}
}

func TestKeysNeverStoreSecrets(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	keys := petstore.NewKeys(store)
	_, secret, err := keys.Create(ctx, "", petstore.PlanFree, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(secret) < 40 || !strings.HasPrefix(secret, petstore.APIKeyPrefix) {
		t.Fatalf("secret %q is too short or unprefixed", secret)
	}
	if _, _, err := store.KeyByHash(ctx, secret); petstore.ErrorCode(err) != petstore.CodeNotFound {
		t.Fatal("the store can find a key by its raw secret")
	}
	if _, err := keys.Authenticate(ctx, strings.Repeat("x", 600)); petstore.ErrorCode(err) != petstore.CodeUnauthorized {
		t.Fatalf("oversized token: %v", err)
	}
	if _, _, err := keys.Create(ctx, "", petstore.PlanEnterprise, petstore.Limits{PerMinute: 10, PerDay: 5}); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
		t.Fatalf("enterprise key with day < minute: %v", err)
	}
}
