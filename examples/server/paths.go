package main

import (
	"net/http"
	"path"
	"strings"
)

// apiPaths hands the API its paths, everything under /v1/, and those
// around its base that http.ServeMux would otherwise redirect with an HTML
// body: /v1 itself, and any path that is not clean and was meant to be
// under it ("//v1/pets", "/x/../v1"). The API answers a path it does
// not serve as any other, after authentication: a JSON 404 naming the path
// to write, with a request id and a log line. API clients read JSON, and a
// redirect they may not follow tells them less. Everything else goes to
// next.
func apiPaths(api, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if c := path.Clean(p); strings.HasPrefix(p, "/v1/") || c == "/v1" || strings.HasPrefix(c, "/v1/") {
			api.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// clip bounds a client's path quoted in a message.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
