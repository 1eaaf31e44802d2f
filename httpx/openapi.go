package httpx

import (
	"cmp"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
)

// openAPIJSON is the API's OpenAPI 3.0.3 document as written.
//
//go:embed openapi.json
var openAPIJSON []byte

// OpenAPI returns the embedded OpenAPI document as written; the handler
// serves it with its own base path added as the first server.
func OpenAPI() []byte { return append([]byte(nil), openAPIJSON...) }

// openAPIDocument returns the document served under base, with the base
// path as its first server and, without orders, no store orders paths.
func openAPIDocument(base string, orders bool) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIJSON, &doc); err != nil {
		return nil, fmt.Errorf("httpx: embedded openapi.json: %w", err)
	}
	if !orders {
		paths, _ := doc["paths"].(map[string]any)
		maps.DeleteFunc(paths, func(p string, _ any) bool { return strings.HasPrefix(p, ordersPath) })
	}
	servers, _ := doc["servers"].([]any)
	here := map[string]any{"url": cmp.Or(base, "/"), "description": "This server"}
	doc["servers"] = append([]any{here}, servers...)
	return MarshalDocument(doc)
}

// ETag is a strong ETag for a fixed body: the first 8 bytes of its
// SHA-256, quoted.
func ETag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}

// ServeDocument serves a fixed JSON document (the API's and the
// dashboard's OpenAPI documents), cacheable for five minutes and
// revalidated by its etag (304 Not Modified), whole: Range and the other
// preconditions are ignored, so every answer is one the document lists.
func ServeDocument(w http.ResponseWriter, r *http.Request, doc []byte, etag string) {
	w.Header().Set("Cache-Control", "public, max-age=300")
	writeEncoded(w, r, http.StatusOK, &encoded{body: doc, etag: etag})
}
