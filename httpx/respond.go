package httpx

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/petstorekit/petstore"
)

// WriteJSON writes v as a JSON body with the given status. Encoding
// errors after the header is sent cannot be reported to the client, so
// they are dropped; v is always one of the API's own types.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"code":"internal","message":"Internal error.","status":500}`)
		status = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// WriteError writes err as an Error body with its status. Application
// errors (*petstore.Error) are written as they are and not logged; any
// other error is logged with its cause and the request id, and the client
// sees only "internal" with a generic message. An unauthorized error also
// carries the WWW-Authenticate challenge of RFC 6750.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	e := petstore.AsError(err)
	if e == nil {
		e = petstore.Errorf(petstore.CodeInternal, "Internal error.")
	}
	if petstore.ErrorCode(err) == petstore.CodeInternal {
		logger := slog.Default()
		id := ""
		if info := infoFrom(r.Context()); info != nil {
			logger, id = info.logger, info.id
		}
		logger.LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("method", r.Method),
			slog.String("request_id", id),
			slog.String("error", err.Error()))
	}
	if e.Code == petstore.CodeUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		challenge := `Bearer realm="petstore"`
		var it *invalidToken
		if errors.As(err, &it) {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
	}
	WriteJSON(w, e.Status, e)
}
