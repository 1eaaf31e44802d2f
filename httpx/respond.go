package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/httpcode"
)

// WriteJSON writes v as a JSON body with the given status, not
// HTML-escaped ("a>b" stays "a>b"), as application/json with nosniff.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshalJSON(v, "")
	if err != nil {
		b = []byte(`{"code":"internal","message":"Internal error.","status":500}` + "\n")
		status = http.StatusInternalServerError
	}
	writeBody(w, status, b)
}

// writeBody writes a JSON body. net/http sets the Content-Length of a
// body it holds whole (2 KiB) when the handler returns; a longer one, not
// to be chunked, and a HEAD answer, whose body headWriter drops, get it
// here.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if _, head := w.(headWriter); head || len(b) > 2048 {
		h.Set("Content-Length", strconv.Itoa(len(b)))
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// MarshalDocument encodes a JSON document as the API's OpenAPI document is
// served: indented by two spaces, not HTML-escaped, with a final newline.
func MarshalDocument(v any) ([]byte, error) { return marshalJSON(v, "  ") }

// marshalJSON is json.Marshal (indented when indent is set) plus a
// newline, without escaping <, > and &: this JSON is never HTML.
func marshalJSON(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent) // "" indents nothing
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteError writes err as an Error body with its status. Application
// errors are written as they are; an expired deadline or the request's
// own cancellation is 503; any other error is logged and the client sees
// only "internal". A 401 carries RFC 6750's challenge, a 503 Retry-After.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	if err == nil { // a caller's bug; still answer something
		err = errors.New("httpx: WriteError called with a nil error")
	}
	e := petstore.AsError(err)
	if e.Code == petstore.CodeInternal {
		level, msg := slog.LevelError, "internal error"
		switch {
		case errors.As(err, new(*petstore.Error)):
			// An application error that says internal itself.
		case errors.Is(err, context.DeadlineExceeded):
			level, msg = slog.LevelWarn, "deadline exceeded"
			e = petstore.Errorf(petstore.CodeUnavailable, "the request timed out; try again later")
		case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
			// Only the request's own cancellation: a Canceled error while
			// the request is still alive is a bug inside the server.
			level, msg = slog.LevelDebug, "request canceled"
			e = petstore.Errorf(petstore.CodeUnavailable, "the request was canceled")
		}
		if level == slog.LevelWarn {
			logOutage(r, msg, err) // one line per interval, not one per request
		} else {
			logger := slog.Default()
			id := ""
			if st := stateOf(r.Context()); st != nil {
				logger, id = st.logger, st.id
			}
			logger.LogAttrs(r.Context(), level, msg,
				slog.String("method", r.Method),
				slog.String("request_id", id),
				slog.String("error", err.Error()))
		}
	} else if e.Code == petstore.CodeUnavailable && err != error(e) {
		// A dependency failed the request (a store's error wraps its
		// cause): the operator must hear of the outage and why.
		logOutage(r, e.Message, err)
	}
	noteCause(r, err, e)
	if e.Code == petstore.CodeUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		challenge := `Bearer realm="petstore"`
		if be, ok := errors.AsType[*bearerError](err); ok {
			challenge += `, error="` + be.code + `"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
	}
	body := *e
	body.Status = StatusOf(e.Code) // never what a caller put there: the code decides
	if body.Status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", unavailableRetryAfter)
	}
	WriteJSON(w, body.Status, &body)
}

// StatusOf returns the HTTP status of an error code (400 for
// invalid_request, ...), or 500 for an unknown code: the one table from
// codes to statuses, which every Error body's status follows.
func StatusOf(code string) int { return httpcode.Status(code) }

// CodeOf returns the general code of an HTTP status ("conflict" for 409,
// "internal" for another 5xx, "invalid_request" for another 4xx), for
// answers that carry no Error body.
func CodeOf(status int) string { return httpcode.Code(status) }

// ErrorStatus returns the HTTP status WriteError answers err with: StatusOf
// its code, 500 for an error that is not an application error, 200 for nil.
func ErrorStatus(err error) int {
	if err == nil {
		return http.StatusOK
	}
	return StatusOf(petstore.ErrorCode(err))
}

// outageLogEvery is how often each cause of 503s is logged at most.
const outageLogEvery = 10 * time.Second

// outageSlot keeps, for one cause of 503s (state.outages), when it was
// last logged and how many lines were left out since, so one cause never
// hides another.
type outageSlot struct {
	last    atomic.Int64 // unix nanoseconds of the last line
	skipped atomic.Int64 // lines left out since
}

// logOutage logs err under cause, unless cause was logged less than
// outageLogEvery ago.
func logOutage(r *http.Request, cause string, err error) {
	st := stateOf(r.Context())
	if st == nil {
		slog.Default().Warn(cause, "error", err.Error())
		return
	}
	v, _ := st.outages.LoadOrStore(cause, new(outageSlot))
	slot := v.(*outageSlot)
	now := time.Now().UnixNano()
	last := slot.last.Load()
	if last != 0 && now-last < int64(outageLogEvery) || !slot.last.CompareAndSwap(last, now) {
		slot.skipped.Add(1)
		return
	}
	st.logger.LogAttrs(r.Context(), slog.LevelWarn, cause,
		slog.String("method", r.Method),
		slog.String("request_id", st.id),
		slog.String("error", err.Error()),
		slog.Int64("not_logged_since", slot.skipped.Swap(0)))
}

// noteCause records, for the metrics and the access log, why a store or
// the server failed the request answered with e; client errors and the
// client's own cancellation record nothing.
func noteCause(r *http.Request, err error, e *petstore.Error) {
	st := stateOf(r.Context())
	if st == nil {
		return
	}
	switch {
	case e.Code == petstore.CodeUnavailable && errors.Is(err, context.DeadlineExceeded):
		st.cause = causeTimeout
	case e.Code == petstore.CodeUnavailable && errors.Is(err, context.Canceled):
	case e.Code == petstore.CodeUnavailable:
		st.cause = causeUnavailable
	case e.Code == petstore.CodeInternal:
		st.cause = causeInternal
	}
}
