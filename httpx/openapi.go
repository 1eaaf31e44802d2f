package httpx

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// openAPIJSON is the API's OpenAPI 3.0.3 document as written, with the
// production and staging servers.
//
//go:embed openapi.json
var openAPIJSON []byte

// OpenAPI returns the embedded OpenAPI document as written: servers list
// production and staging. The handler serves it with its own base path
// added as the first server.
func OpenAPI() []byte { return append([]byte(nil), openAPIJSON...) }

// openAPIDocument returns the document served under base: the same, with
// a first server whose URL is the base path, so tools pointed at
// <base>/openapi.json call this server.
func openAPIDocument(base string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIJSON, &doc); err != nil {
		return nil, fmt.Errorf("httpx: embedded openapi.json: %w", err)
	}
	servers, _ := doc["servers"].([]any)
	url := base
	if url == "" {
		url = "/"
	}
	here := map[string]any{"url": url, "description": "This server"}
	doc["servers"] = append([]any{here}, servers...)
	return json.MarshalIndent(doc, "", "  ")
}
