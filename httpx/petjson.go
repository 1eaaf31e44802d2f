package httpx

import (
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/petstorekit/petstore"
)

// Pets are the bodies of the hot path: every list, fetch and create
// answers one or a page of them. They are encoded by hand into a pooled
// buffer rather than through encoding/json's reflection, which was a
// third of a list request's CPU and most of its allocations. The output
// is byte for byte what encoding/json writes with HTML escaping off
// (FuzzAppendPetJSON holds the two together).

// bodyBufs recycles response buffers. A buffer that grew past 64 KiB (a
// page of 100 pets with very long names) is left to the collector so one
// large answer does not pin its memory for ever.
var bodyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxPooledBody = 64 << 10

// writePets writes pets as a JSON array, "[]" when there are none.
func writePets(w http.ResponseWriter, r *http.Request, status int, pets []petstore.Pet) {
	bp := bodyBufs.Get().(*[]byte)
	b := append((*bp)[:0], '[')
	for i := range pets {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPetJSON(b, &pets[i])
	}
	b = append(b, ']', '\n')
	writeBody(w, r, status, b)
	putBody(bp, b)
}

// writePet writes one pet as a JSON object.
func writePet(w http.ResponseWriter, r *http.Request, status int, p petstore.Pet) {
	bp := bodyBufs.Get().(*[]byte)
	b := appendPetJSON((*bp)[:0], &p)
	b = append(b, '\n')
	writeBody(w, r, status, b)
	putBody(bp, b)
}

func putBody(bp *[]byte, b []byte) {
	if cap(b) > maxPooledBody {
		return
	}
	*bp = b[:0]
	bodyBufs.Put(bp)
}

// autoLengthMax is the largest body whose Content-Length net/http sets on
// its own: a handler that wrote at most this much and returned without
// flushing has its whole body in the server's buffer (2048 bytes over
// HTTP/1, 4096 over HTTP/2), which is then sent with its length rather
// than chunked. A larger body is sent with the length writeBody sets, so
// that it is not chunked either.
const autoLengthMax = 2048

// writeBody writes a JSON body b (ending in a newline) with the headers
// WriteJSON sets; the Content-Length is net/http's for a body of at most
// autoLengthMax bytes, and writeBody's for a larger one or a HEAD.
func writeBody(w http.ResponseWriter, r *http.Request, status int, b []byte) {
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["X-Content-Type-Options"] = nosniff
	// Up to autoLengthMax, net/http writes the Content-Length itself, out
	// of the header map, which it copies, sorts and writes on every
	// response. A HEAD answer's body never reaches it (headWriter), so
	// HEAD announces the length here.
	if len(b) > autoLengthMax || r.Method == http.MethodHead {
		h["Content-Length"] = headerValue(infoFrom(r.Context()), slotContentLength, strconv.Itoa(len(b)))
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// Shared, never-modified header values: net/http only reads them.
var (
	contentTypeJSON = []string{"application/json"}
	nosniff         = []string{"nosniff"}
)

// appendPetJSON appends p as encoding/json would encode petstore.Pet.
func appendPetJSON(b []byte, p *petstore.Pet) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, p.ID, 10)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, p.Name)
	b = append(b, `,"categoryId":`...)
	b = strconv.AppendInt(b, p.CategoryID, 10)
	switch p.Status {
	case "":
		return append(b, '}')
	case petstore.StatusAvailable:
		return append(b, `,"status":"available"}`...)
	case petstore.StatusPending:
		return append(b, `,"status":"pending"}`...)
	case petstore.StatusSold:
		return append(b, `,"status":"sold"}`...)
	}
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(p.Status))
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// jsonSafe marks the bytes that stand for themselves inside a JSON
// string: printable ASCII but the quote and the backslash.
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendJSONString appends s as a JSON string the way encoding/json does
// with HTML escaping off: see appendJSONEscaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendJSONEscaped(b, s, true)
	return append(b, '"')
}

// appendJSONEscaped appends s escaped for the inside of a JSON string:
// quote, backslash and control characters are escaped, invalid UTF-8
// becomes U+FFFD, and U+2028/U+2029 are escaped so the output is also
// valid JavaScript. shortBF escapes backspace and form feed as \b and \f,
// as encoding/json does; without it they are \u0008 and \u000c, as
// log/slog's JSON handler writes them.
func appendJSONEscaped(b []byte, s string, shortBF bool) []byte {
	// Most strings (a pet's name, a path) need no escape: find the first
	// byte that might, and copy everything before it at once.
	i := 0
	for i < len(s) && jsonSafe[s[i]] {
		i++
	}
	if i == len(s) {
		return append(b, s...)
	}
	start := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\b' && shortBF:
				b = append(b, '\\', 'b')
			case c == '\f' && shortBF:
				b = append(b, '\\', 'f')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(b, s[start:]...)
}
