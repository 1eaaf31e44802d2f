package httpx

import (
	"net/http"
	"strings"

	"github.com/petstorekit/petstore"
)

// authenticate reads the bearer key of a request to a non-public path
// (KeyFromContext). A missing or wrong one is 401 once attempt charged
// the try to the client's address (or answered 429 or 503 itself). A key
// store that cannot answer is 503 at once, charged to nobody.
func authenticate(auth petstore.Authenticator, public func(*http.Request) bool, attempt func(http.ResponseWriter, *http.Request) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if public(r) {
				next.ServeHTTP(w, r)
				return
			}
			key, err := bearerKey(auth, r)
			switch {
			case err == nil:
				st := stateOf(r.Context())
				st.key, st.hasKey = key, true
				next.ServeHTTP(w, r)
			case petstore.ErrorCode(err) != petstore.CodeUnauthorized:
				WriteError(w, r, err)
			case attempt(w, r):
				WriteError(w, r, err)
			}
		})
	}
}

// bearerKey reads the bearer token (a case-insensitive scheme, RFC 7235)
// and authenticates it. Two Authorization headers are unauthorized: which
// one a proxy or the server reads is not defined, so none is.
func bearerKey(auth petstore.Authenticator, r *http.Request) (petstore.APIKey, error) {
	if len(r.Header.Values("Authorization")) > 1 {
		return petstore.APIKey{}, petstore.Errorf(petstore.CodeUnauthorized, "send exactly one Authorization header")
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return petstore.APIKey{}, petstore.UnauthorizedError()
	}
	key, err := auth.Authenticate(r.Context(), token)
	if petstore.ErrorCode(err) == petstore.CodeUnauthorized {
		return petstore.APIKey{}, &invalidToken{err: petstore.UnauthorizedError()}
	}
	return key, err
}

// invalidToken marks a presented token's 401, whose challenge says so.
type invalidToken struct{ err *petstore.Error }

func (e *invalidToken) Error() string { return e.err.Error() }
func (e *invalidToken) Unwrap() error { return e.err }
