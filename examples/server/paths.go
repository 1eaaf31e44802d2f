package main

import (
	"net/http"
	"path"
	"strings"
)

// apiPaths hands the API the paths around its base that http.ServeMux
// would otherwise redirect with an HTML body: /v1 itself, and any path
// that is not clean ("//v1/pets", "/v1/./pets", "/v1/../x") and is, or
// was meant to be, under /v1. The API answers them as it answers any
// path it does not serve, after authentication: a JSON 404 naming the
// path to write, with a request id and a log line. API clients read
// JSON, and a redirect they may not follow tells them less. Everything
// else goes to next.
func apiPaths(api, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		c := path.Clean(p)
		unclean := c != p && c+"/" != p
		if p == "/v1" || unclean && (strings.HasPrefix(p, "/v1") || strings.HasPrefix(c, "/v1")) {
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
