// Package statuswriter wraps an http.ResponseWriter to remember the status
// of the response written through it: httpx's chain logs it and decides
// whether recovery can still answer, httpx's Idempotency-Key middleware
// stores it, and petstoretest's fake server records it. It is internal so
// that neither httpx nor petstoretest has to export a writer type.
package statuswriter

import "net/http"

// Writer passes a response through to ResponseWriter and remembers its
// status: 0 until the handler starts the response, then the first final
// status written (200 when Write comes first, as net/http sends). An
// informational status (1xx, such as 103 Early Hints) starts nothing.
type Writer struct {
	http.ResponseWriter
	Status int
	Bytes  int64 // body bytes written, for the access log
}

// WriteHeader remembers the first final status and passes every one on.
func (w *Writer) WriteHeader(code int) {
	if w.Status == 0 && code >= 200 {
		w.Status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write starts the response with 200 if nothing else started it.
func (w *Writer) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.Bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
