package petstore_test

import (
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
)

// FuzzParsePlan: a plan name from a client, a -keys spec or a stored key
// either is invalid_request or is one of the four plans, the one whose
// name it is up to case and surrounding spaces; a plan's own name reads
// back as itself.
func FuzzParsePlan(f *testing.F) {
	for _, s := range []string{"free", " Pro ", "BUSINESS", "enterprise\n", "", "free1", "fr ee", "ﬁree", "\u212aey"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := petstore.ParsePlan(s)
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest || p != "" {
				t.Fatalf("ParsePlan(%q) = %q, %v", s, p, err)
			}
			return
		}
		if !p.Valid() || !strings.EqualFold(strings.TrimSpace(s), string(p)) {
			t.Fatalf("ParsePlan(%q) = %q", s, p)
		}
		if again, err := petstore.ParsePlan(string(p)); err != nil || again != p {
			t.Fatalf("ParsePlan(%q) = %q, %v", p, again, err)
		}
	})
}

// FuzzParseStatus: a pet or order status from a client is taken exactly
// as sent, and only when valid; anything else is invalid_request.
func FuzzParseStatus(f *testing.F) {
	for _, s := range []string{"available", "pending", "sold", "placed", "approved", "delivered", "Sold", " sold", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := petstore.ParsePetStatus(s)
		if (err == nil) != petstore.PetStatus(s).Valid() || (err == nil && string(ps) != s) ||
			(err != nil && (ps != "" || petstore.ErrorCode(err) != petstore.CodeInvalidRequest)) {
			t.Fatalf("ParsePetStatus(%q) = %q, %v", s, ps, err)
		}
		os, err := petstore.ParseOrderStatus(s)
		if (err == nil) != petstore.OrderStatus(s).Valid() || (err == nil && string(os) != s) ||
			(err != nil && (os != "" || petstore.ErrorCode(err) != petstore.CodeInvalidRequest)) {
			t.Fatalf("ParseOrderStatus(%q) = %q, %v", s, os, err)
		}
	})
}
