package petstoretest

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/statuswriter"
)

// Request is one request the fake received, as logged for assertions.
type Request struct {
	Method string
	// Path is the URL path, decoded, such as /v1/pets: /v1/pets/1%2F2
	// and /v1/pets/1/2 both have the Path /v1/pets/1/2.
	Path string
	// EscapedPath is the URL path as sent, its escapes kept: the API
	// routes by it, so /v1/pets/1%2F2 asks for the pet id "1/2" (a 400)
	// where /v1/pets/1/2 is no route at all (a 404).
	EscapedPath string
	// Query holds the query parameters that parse: a pair that does not
	// (limit=%, or one with a ";"), which the API answers with a 400, is
	// not there. RawQuery has them all.
	Query url.Values
	// RawQuery is the query string as sent, without the "?".
	RawQuery string
	// Header holds the request headers without Authorization, so keys
	// stay out of test output. Without a listener (WithoutListener) they
	// are the headers the client set: those Go's transport adds on the
	// wire (User-Agent, Accept-Encoding, Content-Length) are not there.
	Header http.Header
	// Body is the request body, at most 1 MiB of it. Of a request with
	// Expect: 100-continue it is what the API read: nothing when it
	// answered first (a 401, a 429, a Fault's answer), which a client
	// waiting for 100 Continue never sends.
	Body   []byte
	Status int // response status; 0 when the connection was dropped, the client gave up, or the request is still being handled
}

// Requests returns a copy of the request log, oldest first: in the order
// the requests arrived, each logged as it arrives. The copy is deep: a
// test may change its headers, queries and bodies.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.log))
	for i, r := range s.log {
		out[i] = *r
		out[i].Header = r.Header.Clone()
		out[i].Query = make(url.Values, len(r.Query))
		for k, vs := range r.Query {
			out[i].Query[k] = slices.Clone(vs)
		}
		out[i].Body = bytes.Clone(r.Body)
	}
	return out
}

// Fault describes requests the fake fails on purpose. A request matching
// several faults gets the oldest one that still has requests to fail.
type Fault struct {
	// Route limits the fault to one operation, as a ServeMux pattern
	// relative to the API base: "POST /pets", "GET /pets/{petId}",
	// "/pets" (any method). Empty matches every request. Its path starts
	// with a slash and leaves BasePath out: Inject fails the test on
	// "pets" or "/v1/pets", which would match nothing, as on a method
	// not in upper case ("post /pets") or a query ("/pets?status=sold":
	// a Route matches the path alone). It matches a request as the API
	// routes it, which redirects nothing: a path that is not clean
	// ("/v1//pets", "/v1/./pets"), which the API answers with a 404,
	// matches no Route, and "/pets/" does not match "/v1/pets".
	Route string
	// Times is how many matching requests fail; 0 means all of them until
	// ClearFaults or Reset. Inject fails the test on a negative Times.
	Times int
	// Status answers the request with this status and an Error body whose
	// code fits it (a 429 also gets Retry-After: 1 and a 401 the API's
	// WWW-Authenticate challenge of a refused key, unless Header sets one;
	// a 405 needs an Allow in Header, which Inject checks).
	// A 503 gets no Retry-After, so that a client's retry of it waits only
	// its own back-off; the real server's 503 says Retry-After: 2, which
	// Header can add. The answer is the fake's, not the API's: it has
	// none of the API's other headers (X-RateLimit-*, X-Request-Id,
	// getPet's deprecation headers) unless Header adds them.
	Status int
	// Error answers with this body instead; its Status (or its code's)
	// is the response status unless Status is set. An empty Code or
	// Message is filled in as for a Status alone: the status's code, and
	// a message saying the fault was injected.
	Error *petstore.Error
	// Header sets response headers, such as Retry-After, replacing the
	// answer's own of the same name: on the fault's answer, or, for a
	// Latency alone, on the API's answer it lets through.
	Header http.Header
	// Latency delays the request, answered or not, while the client waits;
	// a client that gives up first ends the wait, and so does Close. Over
	// a loopback port the wait also lasts until the client has sent its
	// whole body: a body over the API's 1 MiB is read on, and dropped, so
	// that a client leaving during the upload is noticed. With no Status,
	// Error or Drop, the request then proceeds normally.
	Latency time.Duration
	// Drop closes the connection without any response (in no-listener
	// mode the round trip fails with an error wrapping io.ErrUnexpectedEOF),
	// so it takes no Status, Error or Header.
	// Over a loopback port, Go's http.Transport itself sends a GET, a HEAD
	// or a request with an Idempotency-Key (every create of the client)
	// again, on another connection, when one it had used before drops it
	// unanswered: a drop with Times 1 then shows only as one more request
	// in the log, and the caller gets the resent request's answer. A drop
	// with Times 0 (until ClearFaults) reaches the caller in both modes.
	Drop bool
	// After applies the fault once the API has handled the request: the
	// pet is created, say, but the client gets the fault instead of the
	// answer, as when a response is lost on the way. It is how a test
	// proves that retries are safe.
	After bool
}

type fault struct {
	Fault
	mux  *http.ServeMux // matches Route: routeMatch where it does
	left int            // requests still to fail; -1 for unlimited
}

// routeMatch is the handler of a fault's Route in its ServeMux. The mux
// hands out other handlers for requests the pattern does not match as
// the API routes them: a redirect for a path that is not clean or one
// slash short of the pattern (the API answers those with a 404, or with
// another operation), a 404 or a 405.
type routeMatch struct{}

func (routeMatch) ServeHTTP(http.ResponseWriter, *http.Request) {}

// Inject adds a fault. An invalid Route fails the test, as does a
// status (Status, or the Error's Status when Status is 0) outside 200 to
// 999, which no server answers with: net/http panics on it, a 405
// without an Allow in Header, which every 405 must carry (RFC 9110
// §15.5.6) and only the test knows the methods for, a negative Times or
// Latency, and a Drop with a Status, an Error or a Header, none of which
// a dropped connection sends. It keeps a copy of f's Header and Error:
// changing them afterwards changes nothing injected.
func (s *Server) Inject(f Fault) {
	s.tb.Helper()
	// The fault is the caller's as given: a Header or Error it changes
	// later, for another fault, must not change this one.
	f.Header = f.Header.Clone()
	if f.Error != nil {
		e := *f.Error
		f.Error = &e
	}
	if f.Drop && len(f.Header) > 0 {
		s.tb.Fatalf("petstoretest: fault Drop with a Header: a dropped connection sends no answer for the Header to go on")
	}
	if f.Drop && (f.Status != 0 || f.Error != nil) {
		s.tb.Fatalf("petstoretest: fault Drop with a Status or an Error: a dropped connection sends no answer; use one or the other")
	}
	if f.Latency < 0 {
		s.tb.Fatalf("petstoretest: fault Latency %v: a latency cannot be negative", f.Latency)
	}
	if f.Times < 0 {
		s.tb.Fatalf("petstoretest: fault Times %d: Times counts the requests to fail; 0 fails every matching request until ClearFaults", f.Times)
	}
	status := answerStatus(&f)
	if status != 0 && (status < 200 || status > 999) {
		s.tb.Fatalf("petstoretest: fault status %d: a fault answers with a status from 200 to 999", status)
	}
	sent := http.Header{}
	setHeader(sent, f.Header) // with the names canonical, as the answer carries them
	if status == http.StatusMethodNotAllowed && sent.Values("Allow") == nil {
		s.tb.Fatalf(`petstoretest: fault status 405 without an Allow header: every 405 names the methods the route takes (RFC 9110), which the fake cannot know; set them in the Fault's Header (with Inject), such as http.Header{"Allow": {"GET, HEAD"}}`)
	}
	ft := &fault{Fault: f, left: f.Times}
	if f.Times == 0 {
		ft.left = -1
	}
	if f.Route != "" {
		// Split as ServeMux does: a method, then spaces or tabs.
		method, path := "", f.Route
		if i := strings.IndexAny(f.Route, " \t"); i >= 0 {
			method, path = f.Route[:i], strings.TrimLeft(f.Route[i+1:], " \t")
		}
		// Prefixed with BasePath, a path without its slash or one that
		// repeats BasePath is a valid pattern that no request matches.
		if !strings.HasPrefix(path, "/") {
			s.tb.Fatalf("petstoretest: fault route %q: the path must start with /, relative to %s, such as \"GET /pets\"", f.Route, BasePath)
		}
		// Methods are case-sensitive: "post" is a method of its own,
		// which no client of the API sends.
		if method != strings.ToUpper(method) {
			s.tb.Fatalf("petstoretest: fault route %q: the method is case-sensitive; write it in upper case, as in \"%s %s\"", f.Route, strings.ToUpper(method), path)
		}
		// A pattern matches the path alone; "?" and "#" in it would be
		// literal characters that no request's path holds.
		if i := strings.IndexAny(path, "?#"); i >= 0 {
			s.tb.Fatalf("petstoretest: fault route %q: a route matches the path only; leave %q out", f.Route, path[i:])
		}
		if path == BasePath || strings.HasPrefix(path, BasePath+"/") {
			s.tb.Fatalf("petstoretest: fault route %q: the path is relative to %s; leave %s out, as in \"GET /pets\"", f.Route, BasePath, BasePath)
		}
		pattern := strings.TrimSpace(method + " " + BasePath + path)
		ft.mux = http.NewServeMux()
		var perr error
		func() {
			defer func() {
				if p := recover(); p != nil {
					perr = fmt.Errorf("%v", p)
				}
			}()
			ft.mux.Handle(pattern, routeMatch{})
		}()
		if perr != nil {
			s.tb.Fatalf("petstoretest: fault route %q: %v", f.Route, perr)
		}
	}
	s.mu.Lock()
	s.faults = append(s.faults, ft)
	s.mu.Unlock()
}

// FailNext makes the next n requests, whatever their route, fail with
// status and an Error body; n <= 0 fails none. A 405 fails the test, as
// it does with Inject: it needs an Allow, which only Inject's Fault can
// set.
func (s *Server) FailNext(n, status int) {
	s.tb.Helper()
	if n > 0 {
		s.Inject(Fault{Times: n, Status: status})
	}
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// takeFault returns the fault for r, counting r against it, or nil.
func (s *Server) takeFault(r *http.Request) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.mux != nil {
			if h, _ := f.mux.Handler(r); h != (routeMatch{}) {
				continue
			}
		}
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				s.faults = slices.Delete(s.faults, i, i+1)
			}
		}
		return &f.Fault
	}
	return nil
}

// front logs every request and applies faults before next sees it.
func (s *Server) front(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		var unread io.Reader
		var read *bodyLog
		if expectsContinue(r.Header) {
			// The client sends the body only once asked to (100
			// Continue), which a server does as the handler first reads
			// it: the API refuses some requests (a 401, a 429) unread,
			// so the fake reads nothing ahead and logs what the API read.
			// The body is replaced on a copy of r: net/http judges the
			// connection by its own request's body, which must stay the
			// one that knows whether 100 Continue went out.
			read = &bodyLog{ReadCloser: r.Body}
			r = r.WithContext(r.Context())
			r.Body = read
		} else {
			body, _ = io.ReadAll(io.LimitReader(r.Body, httpx.MaxBodyBytes+1))
			// The API reads the same bytes (and answers 413 beyond the
			// limit, reading no further: the rest of a longer body stays
			// unread).
			if len(body) > httpx.MaxBodyBytes {
				unread = r.Body
				r.Body = io.NopCloser(bytes.NewReader(body))
			} else {
				r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
			}
		}
		entry := &Request{Method: r.Method, Path: r.URL.Path, EscapedPath: r.URL.EscapedPath(), Query: r.URL.Query(), RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body[:min(len(body), httpx.MaxBodyBytes)]}
		entry.Header.Del("Authorization")
		// Logged now, so that a request held by a fault keeps its place
		// before those that arrive while it waits.
		s.mu.Lock()
		s.log = append(s.log, entry)
		s.mu.Unlock()
		sw := &statuswriter.Writer{ResponseWriter: w}
		if s.cfg.clock {
			// A server dates its answers by its clock: net/http adds a
			// Date of the real one only where the handler set none.
			sw.Header().Set("Date", s.cfg.now().UTC().Format(http.TimeFormat))
		}
		defer func() {
			s.mu.Lock()
			entry.Status = sw.Status
			if read != nil {
				entry.Body = read.buf
			}
			s.mu.Unlock()
		}()
		f := s.takeFault(r)
		switch {
		case f == nil:
			next.ServeHTTP(sw, r)
		case f.After:
			// The API's answer is held back; the fault replaces it, or,
			// for a latency alone, it is sent late.
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			if !s.applyFault(sw, r, f, unread) {
				for k, vs := range rec.Header() {
					sw.Header()[k] = vs
				}
				setHeader(sw.Header(), f.Header)
				sw.WriteHeader(rec.Code)
				_, _ = sw.Write(rec.Body.Bytes())
			}
		case !s.applyFault(sw, r, f, unread):
			hw := &headerSetter{ResponseWriter: sw, h: f.Header}
			next.ServeHTTP(hw, r)
			hw.set() // nothing written: net/http sends the header as it is now
		}
		if sw.Status == 0 && r.Context().Err() == nil { // nothing written: net/http sends 200
			sw.Status = http.StatusOK
		}
	})
}

// expectsContinue reports whether h asks for 100 Continue before the
// body is sent, as net/http's server reads it.
func expectsContinue(h http.Header) bool {
	for _, v := range strings.Split(h.Get("Expect"), ",") {
		if strings.EqualFold(strings.TrimSpace(v), "100-continue") {
			return true
		}
	}
	return false
}

// bodyLog keeps the first httpx.MaxBodyBytes of what is read of a body.
type bodyLog struct {
	io.ReadCloser
	buf []byte
}

func (b *bodyLog) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.buf = append(b.buf, p[:min(n, max(0, httpx.MaxBodyBytes-len(b.buf)))]...)
	return n, err
}

// applyFault carries out f and reports whether it answered the request.
// unread is the rest of a body the API does not read, or nil.
func (s *Server) applyFault(w *statuswriter.Writer, r *http.Request, f *Fault, unread io.Reader) bool {
	if f.Latency > 0 {
		t := time.NewTimer(f.Latency)
		defer t.Stop()
		// A net/http server notices a client leave (and cancels the
		// request's context) only once the body is read to its end, so
		// the rest of a body too large for the API is read, and dropped,
		// during the wait; the wait lasts until the client has sent it.
		// In no-listener mode the context is the client's own: no
		// goroutine is needed.
		var read chan error
		if unread != nil && r.Context().Value(http.ServerContextKey) != nil {
			read = make(chan error, 1)
			go func() {
				_, err := io.Copy(io.Discard, unread)
				read <- err
			}()
		}
		for waiting := true; waiting || read != nil; {
			select {
			case <-t.C:
				waiting = false
			case err := <-read:
				if err != nil {
					// The body broke off: the client left, or sent a
					// malformed one, and the connection is done.
					panic(http.ErrAbortHandler)
				}
				read = nil
			case <-r.Context().Done():
				s.logFault(r, f, 0)
				return true // the client left: nobody reads an answer
			case <-s.closed:
				// Close would otherwise wait the latency out for this
				// connection: it is cut, as a server shutting down does.
				panic(http.ErrAbortHandler)
			}
		}
	}
	if f.Drop {
		// The server closes the connection without answering; the
		// logging defer in front runs first, with status 0.
		s.logFault(r, f, 0)
		panic(http.ErrAbortHandler)
	}
	status := answerStatus(f)
	if status == 0 {
		return false
	}
	e := cmp.Or(f.Error, &petstore.Error{})
	// Every Error of the API has a code and a message: those of the
	// status stand in for what the fault leaves out.
	body := *e
	body.Status = status
	body.Code = cmp.Or(body.Code, httpx.CodeOf(status))
	body.Message = cmp.Or(body.Message, fmt.Sprintf("fault injected by petstoretest: %d %s", status, http.StatusText(status)))
	setHeader(w.Header(), f.Header)
	if status == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	if status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		// Every 401 of the API carries the challenge; this one, of a key
		// sent and refused (revoked, say), as the API words it.
		w.Header().Set("WWW-Authenticate", `Bearer realm="petstore", error="invalid_token"`)
	}
	httpx.WriteJSON(w, status, body)
	s.logFault(r, f, status)
	return true
}

// answerStatus is the status of f's own answer: Status, else its Error's
// Status, else its Error's code's; 0 when f sends none (a Latency alone,
// a Drop).
func answerStatus(f *Fault) int {
	switch {
	case f.Status != 0:
		return f.Status
	case f.Error == nil:
		return 0
	case f.Error.Status != 0:
		return f.Error.Status
	}
	return httpx.ErrorStatus(f.Error)
}

// logFault writes the "fault injected" line of r, failed by f with
// status (0: no answer) to WithLogger's logger: the API, which logs every
// request it handles, never saw r, or its answer was not sent (After).
func (s *Server) logFault(r *http.Request, f *Fault, status int) {
	if s.cfg.logger == nil {
		return
	}
	attrs := []slog.Attr{slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status)}
	if f.After {
		attrs = append(attrs, slog.Bool("after", true))
	}
	s.cfg.logger.LogAttrs(r.Context(), slog.LevelInfo, "fault injected", attrs...)
}

// setHeader sets every header of src in dst, replacing dst's values of
// the same name.
func setHeader(dst, src http.Header) {
	for k := range src {
		dst.Del(k)
	}
	for k, vs := range src {
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}

// headerSetter sets a Latency-only fault's Header on the API's answer as
// it starts, after the API set its own.
type headerSetter struct {
	http.ResponseWriter
	h    http.Header
	done bool
}

func (w *headerSetter) set() {
	if !w.done {
		w.done = true
		setHeader(w.ResponseWriter.Header(), w.h)
	}
}

func (w *headerSetter) WriteHeader(code int) {
	w.set()
	w.ResponseWriter.WriteHeader(code)
}

func (w *headerSetter) Write(b []byte) (int, error) {
	w.set()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *headerSetter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// errDropped is what a dropped connection (a Drop fault, or a Latency
// wait cut by Close) looks like in no-listener mode.
var errDropped = fmt.Errorf("petstoretest: connection dropped: %w", io.ErrUnexpectedEOF)

// memTransport serves requests by calling the handler directly: no
// sockets, no goroutines.
type memTransport struct {
	h      http.Handler
	closed <-chan struct{} // closed by Server.Close
}

// errRefused is what a request to a closed server gets in no-listener
// mode: what a dial to a closed loopback port returns.
func errRefused() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// RoundTrip implements http.RoundTripper.
func (t memTransport) RoundTrip(req *http.Request) (resp *http.Response, err error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	select {
	case <-t.closed:
		return nil, errRefused()
	default:
	}
	r := req.Clone(req.Context())
	r.RequestURI = req.URL.RequestURI()
	// The handler sees the URL a server parses from the request line, as
	// over a socket: only a path and query, and an opaque URL's path read.
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
		r.URL = u
	}
	// A server reads header names in their canonical form, whatever the
	// client's map held: an "authorization" entry authenticates as
	// Authorization, and the request log drops it as such.
	h := make(http.Header, len(r.Header))
	for k, vs := range r.Header {
		ck := http.CanonicalHeaderKey(k)
		h[ck] = append(h[ck], vs...)
	}
	r.Header = h
	if h.Get("Expect") != "" && !expectsContinue(h) {
		return expectationFailed(req), nil
	}
	r.RemoteAddr = "127.0.0.1:1"
	r.Host = req.URL.Host
	if r.Body == nil {
		r.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				panic(p)
			}
			resp, err = nil, errDropped
		}
	}()
	t.h.ServeHTTP(rec, r)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	resp = rec.Result()
	resp.Request = req
	completeAsAServer(resp, req.Method, rec.Body.Len())
	return resp, nil
}

// expectationFailed is Go's server's answer to req, whose Expect is not
// 100-continue: 417 Expectation Failed, closing the connection, without
// calling any handler (so the request is not logged either).
func expectationFailed(req *http.Request) *http.Response {
	rec := httptest.NewRecorder()
	rec.Header().Set("Connection", "close")
	rec.WriteHeader(http.StatusExpectationFailed)
	resp := rec.Result()
	resp.Request, resp.Close = req, true
	completeAsAServer(resp, req.Method, 0)
	return resp
}

// completeAsAServer adds to resp what net/http's server adds to an
// answer whose handler left it off, as a client then reads it: a Date,
// and the Content-Length of a body the server holds whole (2 KiB; a
// longer one is chunked), for a HEAD the length of what the handler
// wrote, if anything (a fault's answer), though no body is sent. A
// client reads no body, and a length of 0, in a 1xx, 204 or 304 answer.
func completeAsAServer(resp *http.Response, method string, bodyLen int) {
	if _, ok := resp.Header["Date"]; !ok {
		resp.Header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	switch {
	case resp.StatusCode < 200 || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified:
		resp.ContentLength, resp.Body = 0, http.NoBody
		return
	case resp.Header.Get("Content-Length") != "":
		// The handler's own length stands.
	case bodyLen <= 2048 && (bodyLen > 0 || method != http.MethodHead):
		resp.ContentLength = int64(bodyLen)
		resp.Header.Set("Content-Length", strconv.Itoa(bodyLen))
	}
	if method == http.MethodHead {
		resp.Body = http.NoBody
	}
}
