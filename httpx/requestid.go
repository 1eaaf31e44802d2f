package httpx

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/petstorekit/petstore/internal/statuswriter"
)

// withState is the first step: the request's state and X-Request-Id.
func withState(logger *slog.Logger) func(http.Handler) http.Handler {
	outages := new(sync.Map)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			st := &state{start: time.Now(), id: requestID(r.Header.Get("X-Request-Id")), logger: logger, outages: outages}
			st.w = &statuswriter.Writer{ResponseWriter: w}
			w.Header().Set("X-Request-Id", st.id)
			next.ServeHTTP(st.w, r.WithContext(context.WithValue(r.Context(), stateKey{}, st)))
		})
	}
}

// requestID keeps a client's own id when it is a sane token, so a caller
// can correlate its logs with ours, and otherwise makes a UUID v7.
func requestID(client string) string {
	notToken := func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
	}
	if n := len(client); n > 0 && n <= 128 && !strings.ContainsFunc(client, notToken) {
		return client
	}
	return uuid.Must(uuid.NewV7()).String() // fails only if the system has no randomness
}
