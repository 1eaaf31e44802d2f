package httpx

import (
	"cmp"
	"log/slog"
	"net/http"
	"net/netip"
	"time"
)

// logRequests writes a "request" line at Info per answered request; see
// docs/operating.md#logs. Never the query (it may hold secrets), never
// the key's secret.
func logRequests(logger *slog.Logger, client func(*http.Request) netip.Addr, find func(*http.Request) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			ctx := r.Context()
			if !logger.Enabled(ctx, slog.LevelInfo) {
				return
			}
			st := stateOf(ctx)
			attrs := append(make([]slog.Attr, 0, 11),
				slog.String("client", client(r).String()),
				slog.String("method", r.Method),
				slog.String("route", routeOf(r, st, find)),
				slog.String("path", r.URL.Path),
				slog.Int("status", statusOf(st)),
				slog.Int64("bytes", st.w.Bytes),
				slog.Duration("duration", time.Since(st.start)),
				slog.String("user_agent", r.UserAgent()),
				slog.String("request_id", st.id))
			if st.hasKey {
				attrs = append(attrs, slog.String("key_id", st.key.ID))
			}
			if st.cause != "" {
				attrs = append(attrs, slog.String("store_error", st.cause))
			}
			logger.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
		})
	}
}

// statusOf is the status the client got (200 when nothing was written).
func statusOf(st *state) int { return cmp.Or(st.w.Status, http.StatusOK) }
