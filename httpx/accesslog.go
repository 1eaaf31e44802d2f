package httpx

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// RequestLog is what the access log says of one request: who asked (the
// client address, as the rate limiter counted it, and the key's public
// id), what (method, route pattern and path; never the query, which may
// hold secrets), the answer (status, body bytes, duration) and how to
// find it again (request id, user agent).
type RequestLog struct {
	Time       time.Time     // when the answer was complete
	Client     netip.Addr    // the client address the limiter counted
	Method     string        // the request method
	Route      string        // the route pattern it matched; "" for none
	Path       string        // the URL path, without the query
	Status     int           // the answer's status
	Bytes      int64         // the answer's body bytes
	Duration   time.Duration // from the chain getting the request to the answer's end
	UserAgent  string        // the User-Agent header
	RequestID  string        // the X-Request-Id of the answer
	KeyID      string        // the API key's public id; "" when no key authenticated it
	StoreError string        // why a dependency failed it ("timeout", "unavailable", "internal", "panic"); "" when none did
}

// The access log line's message and attribute keys, in the order they are
// written. They are the line's contract with whoever reads the logs.
const (
	accessMsg        = "request"
	accessClient     = "client"
	accessMethod     = "method"
	accessRoute      = "route"
	accessPath       = "path"
	accessStatus     = "status"
	accessBytes      = "bytes"
	accessDuration   = "duration"
	accessUserAgent  = "user_agent"
	accessRequestID  = "request_id"
	accessKeyID      = "key_id"
	accessStoreError = "store_error"
)

// An AccessLogger writes the access log, one line per request; see
// Config.AccessLog. LogRequest is called on the request's goroutine once
// its answer is complete; it must be safe for concurrent use and must not
// keep e after it returns.
type AccessLogger interface {
	LogRequest(ctx context.Context, e *RequestLog)
}

// slogAccessLog is the access log of a Config without AccessLog: Logger's
// "request" line at Info.
type slogAccessLog struct{ logger *slog.Logger }

func (l slogAccessLog) LogRequest(ctx context.Context, e *RequestLog) {
	attrs := [11]slog.Attr{
		slog.String(accessClient, e.Client.String()),
		slog.String(accessMethod, e.Method),
		slog.String(accessRoute, e.Route),
		slog.String(accessPath, e.Path),
		slog.Int(accessStatus, e.Status),
		slog.Int64(accessBytes, e.Bytes),
		slog.Duration(accessDuration, e.Duration),
		slog.String(accessUserAgent, e.UserAgent),
		slog.String(accessRequestID, e.RequestID),
	}
	n := 9
	if e.KeyID != "" {
		attrs[n] = slog.String(accessKeyID, e.KeyID) // the public id, never the secret
		n++
	}
	if e.StoreError != "" {
		attrs[n] = slog.String(accessStoreError, e.StoreError)
		n++
	}
	// The record is handed to the handler directly: Logger.LogAttrs
	// would walk the stack for the caller's PC on every request, for a
	// source location nobody asked for.
	rec := slog.NewRecord(e.Time, slog.LevelInfo, accessMsg, 0)
	rec.AddAttrs(attrs[:n]...)
	_ = l.logger.Handler().Handle(ctx, rec)
}

// NewJSONAccessLog returns an AccessLogger that writes each request's line
// to w as one JSON object, byte for byte what slog.NewJSONHandler(w, nil)
// writes for the line Logger gets without AccessLog, in one Write call.
// It formats the line by hand into a reused buffer: no slog.Record, no
// allocation, a fraction of slog's cost (BenchmarkAccessLog). Give it a
// buffered writer, so that a line costs a memory copy rather than a system
// call (examples/server writes its logs through one).
func NewJSONAccessLog(w io.Writer) AccessLogger { return &lineLog{w: w, json: true} }

// NewTextAccessLog is NewJSONAccessLog for logfmt: byte for byte what
// slog.NewTextHandler(w, nil) writes for the line.
func NewTextAccessLog(w io.Writer) AccessLogger { return &lineLog{w: w} }

// lineLog formats access log lines by hand, as slog's built-in handlers
// with default options would.
type lineLog struct {
	w    io.Writer
	json bool
}

// lineBufs are the buffers lines are formatted in; most lines are under
// 400 bytes.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (l *lineLog) LogRequest(_ context.Context, e *RequestLog) {
	bp := lineBufs.Get().(*[]byte)
	b := l.appendLine((*bp)[:0], e)
	_, _ = l.w.Write(b)
	if cap(b) <= 4<<10 { // a huge user agent's buffer is not kept
		*bp = b
		lineBufs.Put(bp)
	}
}

// appendLine appends e's line, with its newline, to b: the fields in
// slog's order, each written by str or num in the log's format.
func (l *lineLog) appendLine(b []byte, e *RequestLog) []byte {
	t := e.Time.Round(0) // as slog does: no monotonic reading
	var addr [64]byte    // the client address's text, as netip.Addr's String
	client := "invalid IP"
	if a := e.Client.AppendTo(addr[:0]); len(a) > 0 {
		client = unsafe.String(&a[0], len(a))
	}
	if l.json {
		b = append(b, `{"time":"`...)
		b = appendRFC3339Nano(b, t)
		b = append(b, `","level":"INFO","msg":"`+accessMsg+`"`...)
	} else {
		b = append(b, "time="...)
		b = appendRFC3339Millis(b, t)
		b = append(b, " level=INFO msg="+accessMsg...)
	}
	b = l.str(b, accessClient, client)
	b = l.str(b, accessMethod, e.Method)
	b = l.str(b, accessRoute, e.Route)
	b = l.str(b, accessPath, e.Path)
	b = l.num(b, accessStatus, int64(e.Status))
	b = l.num(b, accessBytes, e.Bytes)
	if l.json {
		b = l.num(b, accessDuration, int64(e.Duration)) // nanoseconds, as encoding/json
	} else {
		b = append(b, " "+accessDuration+"="...)
		b = append(b, e.Duration.String()...) // inlined: no allocation
	}
	b = l.str(b, accessUserAgent, e.UserAgent)
	b = l.str(b, accessRequestID, e.RequestID)
	if e.KeyID != "" {
		b = l.str(b, accessKeyID, e.KeyID)
	}
	if e.StoreError != "" {
		b = l.str(b, accessStoreError, e.StoreError)
	}
	if l.json {
		return append(b, "}\n"...)
	}
	return append(b, '\n')
}

// str appends a string field: ,"key":"value" escaped as slog's JSON
// handler escapes, or key=value quoted as its text handler quotes.
func (l *lineLog) str(b []byte, key, v string) []byte {
	if l.json {
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':', '"')
		b = appendJSONEscaped(b, v, false)
		return append(b, '"')
	}
	b = append(b, ' ')
	b = append(b, key...)
	b = append(b, '=')
	return appendLogfmtText(b, v)
}

// num appends an integer field.
func (l *lineLog) num(b []byte, key string, v int64) []byte {
	if l.json {
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
	} else {
		b = append(b, ' ')
		b = append(b, key...)
		b = append(b, '=')
	}
	return strconv.AppendInt(b, v, 10)
}

// A secondStamp is the text of one second in one location, as
// time.RFC3339 writes it: the date and clock, and the zone.
type secondStamp struct {
	unix  int64
	loc   *time.Location
	clock [clockLen]byte
	zone  string // Z or -07:00
}

// clockLen is the length of RFC 3339's date and clock, 2006-01-02T15:04:05.
const clockLen = len("2006-01-02T15:04:05")

// lastStamp is the second the access log last wrote: lines come many to
// a second, and the text of a time's date, clock and zone is most of what
// formatting it costs.
var lastStamp atomic.Pointer[secondStamp]

// appendRFC3339Nano appends t as t.AppendFormat(b, time.RFC3339Nano)
// does, with the text of its second formatted once a second.
func appendRFC3339Nano(b []byte, t time.Time) []byte {
	unix, loc := t.Unix(), t.Location()
	st := lastStamp.Load()
	if st == nil || st.unix != unix || st.loc != loc {
		var buf [40]byte
		text := t.AppendFormat(buf[:0], time.RFC3339)
		if len(text) <= clockLen || text[10] != 'T' { // a year past 9999 or before 0
			return t.AppendFormat(b, time.RFC3339Nano)
		}
		st = &secondStamp{unix: unix, loc: loc, zone: string(text[clockLen:])}
		copy(st.clock[:], text)
		lastStamp.Store(st)
	}
	b = append(b, st.clock[:]...)
	if ns := t.Nanosecond(); ns != 0 {
		// .999999999: nine digits, trailing zeros dropped.
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i > 0; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := len(frac)
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, st.zone...)
}

// appendRFC3339Millis appends t as slog's text handler writes times:
// RFC 3339 with exactly three fractional digits, truncated.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	// RFC3339Nano drops trailing zeros; a tenth of a millisecond added
	// after truncating keeps four digits, and the fourth is dropped.
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...)
}

// appendLogfmtText appends s as slog's text handler writes a string
// value: as it is, or Go-quoted when it is empty or holds a space, '=',
// '"', a control or non-printing character, or invalid UTF-8.
func appendLogfmtText(b []byte, s string) []byte {
	if !logfmtNeedsQuoting(s) {
		return append(b, s...)
	}
	return strconv.AppendQuote(b, s)
}

func logfmtNeedsQuoting(s string) bool {
	if len(s) == 0 {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == ' ' || c == '=' || c == '"' || c < 0x20 {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}
