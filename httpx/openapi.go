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
	"slices"
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
// path as its first server; without idempotency, no Idempotency-Key
// (withoutIdempotency), and without orders, no word of store orders.
func openAPIDocument(base string, orders, idempotency bool) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIJSON, &doc); err != nil {
		return nil, fmt.Errorf("httpx: embedded openapi.json: %w", err)
	}
	if !idempotency {
		withoutIdempotency(doc)
	}
	if !orders {
		maps.DeleteFunc(doc["paths"].(map[string]any), func(p string, _ any) bool { return strings.HasPrefix(p, ordersPath) })
		info := doc["info"].(map[string]any)
		paras := slices.DeleteFunc(strings.Split(info["description"].(string), "\n\n"), func(p string) bool { return strings.HasPrefix(p, "Store orders") })
		info["description"] = strings.Replace(strings.Join(paras, "\n\n"), " and createOrder", "", 1)
	}
	servers, _ := doc["servers"].([]any)
	here := map[string]any{"url": cmp.Or(base, "/"), "description": "This server"}
	doc["servers"] = append([]any{here}, servers...)
	return MarshalDocument(doc)
}

// withoutIdempotency takes Idempotency-Key out of doc, for a handler that
// ignores it (Config.Idempotency nil): a client must not read that its
// retried creates are safe. Gone are the parameter, the Idempotent-Replayed
// header, the 409 and 422 that only a key brings, and the sentences that
// offer it.
func withoutIdempotency(doc map[string]any) {
	obj := func(m any, key string) map[string]any { v, _ := m.(map[string]any)[key].(map[string]any); return v }
	cut := func(m map[string]any, from string) {
		if d, ok := m["description"].(string); ok {
			if i := strings.Index(d, from); i >= 0 {
				m["description"] = d[:i]
			}
		}
	}
	for _, item := range obj(doc, "paths") {
		post, _ := item.(map[string]any)["post"].(map[string]any)
		if post == nil {
			continue
		}
		params, _ := post["parameters"].([]any)
		post["parameters"] = slices.DeleteFunc(params, func(p any) bool {
			return strings.HasSuffix(fmt.Sprint(p.(map[string]any)["$ref"]), "/Idempotency-Key")
		})
		if len(post["parameters"].([]any)) == 0 {
			delete(post, "parameters")
		}
		cut(post, "\n\nWith an `Idempotency-Key`")
		responses := obj(post, "responses")
		delete(responses, "409")
		delete(responses, "422")
		if created := obj(responses, "201"); created != nil {
			delete(obj(created, "headers"), "Idempotent-Replayed")
		}
	}
	components := obj(doc, "components")
	delete(obj(components, "parameters"), "Idempotency-Key")
	delete(obj(components, "headers"), "Idempotent-Replayed")
	for name, r := range obj(components, "responses") {
		if strings.HasPrefix(name, "CreateBadRequest") {
			delete(obj(r, "headers"), "Idempotent-Replayed")
			cut(r.(map[string]any), " With an `Idempotency-Key`")
		}
	}
	info := obj(doc, "info")
	info["description"] = strings.Replace(info["description"].(string), " `Idempotency-Key` on createPet and createOrder;", "", 1)
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
