package httpx

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
)

// tokenAuth accepts one token, and records what it was asked.
type tokenAuth struct{ asked []string }

func (a *tokenAuth) Authenticate(_ context.Context, token string) (petstore.APIKey, error) {
	a.asked = append(a.asked, token)
	if token == "psk_good" {
		return petstore.APIKey{ID: "key_1", ProjectID: "prj_1", Plan: petstore.PlanFree}, nil
	}
	return petstore.APIKey{}, petstore.UnauthorizedError()
}

// FuzzBearerKey: whatever Authorization headers a client sends, the
// store is asked for at most one token, the header's own after a
// case-insensitive "Bearer", without surrounding spaces; every refusal is
// unauthorized, and only the one good token is accepted.
func FuzzBearerKey(f *testing.F) {
	for _, s := range []string{"Bearer psk_good", "bearer   psk_good  ", "Basic psk_good", "Bearer", "Bearer ", "BEARER psk_good x", " Bearer psk_good", "Bearer\tpsk_good"} {
		f.Add(s, "")
	}
	f.Add("Bearer psk_good", "Bearer psk_good")
	f.Fuzz(func(t *testing.T, h1, h2 string) {
		r := &http.Request{Header: http.Header{"Authorization": {h1}}}
		if h2 != "" {
			r.Header.Add("Authorization", h2)
		}
		auth := &tokenAuth{}
		key, err := bearerKey(auth, func(*http.Request) netip.Addr { return netip.Addr{} }, r.WithContext(context.Background()))
		if len(auth.asked) > 1 || (len(auth.asked) == 1 && (h2 != "" || auth.asked[0] == "" || auth.asked[0] != strings.TrimSpace(auth.asked[0]) || !strings.Contains(h1, auth.asked[0]))) {
			t.Fatalf("Authorization %q, %q asked the store for %q", h1, h2, auth.asked)
		}
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeUnauthorized || key != (petstore.APIKey{}) {
				t.Fatalf("Authorization %q, %q = %+v, %v", h1, h2, key, err)
			}
			return
		}
		if h2 != "" || len(auth.asked) != 1 || auth.asked[0] != "psk_good" || key.ID != "key_1" {
			t.Fatalf("Authorization %q, %q accepted as %+v", h1, h2, key)
		}
	})
}
