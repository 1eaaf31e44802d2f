package httpx

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/petstorekit/petstore"
)

// recoverPanics logs a panic's stack and answers 500 (in the log only,
// when the response has started).
func recoverPanics(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler {
					panic(v)
				}
				st := stateOf(r.Context())
				logger.LogAttrs(r.Context(), slog.LevelError, "panic",
					slog.String("request_id", st.id),
					slog.String("panic", fmt.Sprint(v)),
					slog.String("stack", string(debug.Stack())))
				if st.w.Status == 0 {
					WriteError(w, r, petstore.Errorf(petstore.CodeInternal, "Internal error."))
				} else {
					st.w.Status = http.StatusInternalServerError // what the log should say
				}
				st.cause = causePanic
			}()
			next.ServeHTTP(w, r)
		})
	}
}
