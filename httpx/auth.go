package httpx

import (
	"context"
	"net/http"
	"net/netip"
	"strings"

	"github.com/petstorekit/petstore"
)

// authenticate reads the bearer key of a request to a non-public path
// (KeyFromContext). A missing or wrong one is 401 once attempt charged
// the try to the client's address (or answered 429 or 503 itself). A key
// store that cannot answer is 503 at once, charged to nobody (attempt
// with charge false reports the address's figures). client is for an
// Authenticator that paces a refused client (clientAuthenticator).
func authenticate(auth petstore.Authenticator, public func(*http.Request) bool, client func(*http.Request) netip.Addr, attempt func(w http.ResponseWriter, r *http.Request, charge bool) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if public(r) {
				next.ServeHTTP(w, r)
				return
			}
			key, err := bearerKey(auth, client, r)
			switch {
			case err == nil:
				st := stateOf(r.Context())
				st.key, st.hasKey = key, true
				next.ServeHTTP(w, r)
			case attempt(w, r, petstore.ErrorCode(err) == petstore.CodeUnauthorized):
				WriteError(w, r, err)
			}
		})
	}
}

// bearerKey reads the bearer token (a case-insensitive scheme, RFC 7235)
// and authenticates it. Two Authorization headers are unauthorized: which
// one a proxy or the server reads is not defined, so none is.
func bearerKey(auth petstore.Authenticator, client func(*http.Request) netip.Addr, r *http.Request) (petstore.APIKey, error) {
	if len(r.Header.Values("Authorization")) > 1 {
		return petstore.APIKey{}, &bearerError{code: "invalid_request", err: petstore.Errorf(petstore.CodeUnauthorized, "send exactly one Authorization header")}
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return petstore.APIKey{}, petstore.UnauthorizedError()
	}
	var key petstore.APIKey
	var err error
	if ca, ok := auth.(clientAuthenticator); ok {
		key, err = ca.AuthenticateClient(r.Context(), token, client(r))
	} else {
		key, err = auth.Authenticate(r.Context(), token)
	}
	if petstore.ErrorCode(err) == petstore.CodeUnauthorized {
		return petstore.APIKey{}, &bearerError{code: "invalid_token", err: petstore.UnauthorizedError()}
	}
	return key, err
}

// clientAuthenticator is an Authenticator that also takes the client's
// address, to pace the key lookups of a client the rate limiter refuses
// (keycache.Cache).
type clientAuthenticator interface {
	AuthenticateClient(ctx context.Context, token string, client netip.Addr) (petstore.APIKey, error)
}

// bearerError is a 401 whose challenge names RFC 6750's error code:
// invalid_token for a presented token refused, invalid_request for a
// request that sends more than one. A request with no bearer token gets
// no code, as the RFC says.
type bearerError struct {
	code string
	err  *petstore.Error
}

func (e *bearerError) Error() string { return e.err.Error() }
func (e *bearerError) Unwrap() error { return e.err }
