package main

import (
	"net/http"
	"path"
	"strings"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/httpx"
)

// apiPaths answers, with a JSON Error, the paths around the API base that
// http.ServeMux would otherwise redirect with an HTML body: /v1 itself,
// and any path that is not clean ("//v1/pets", "/v1/./pets", "/v1/../x")
// and is, or was meant to be, under /v1. API clients read JSON; a 404
// naming the path to use tells them more than a redirect they may not
// follow. Everything else goes to next.
func apiPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		clean := cleanPath(p)
		switch {
		case p == "/v1":
			httpx.WriteError(w, r, petstore.Errorf(petstore.CodeNotFound, "no such path: /v1; the API's paths start with /v1/, such as /v1/pets"))
		case clean != p && (strings.HasPrefix(p, "/v1") || strings.HasPrefix(clean, "/v1")):
			httpx.WriteError(w, r, petstore.Errorf(petstore.CodeNotFound,
				"no such path: %s; paths are not cleaned by the server: write it as %s", clip(p), clip(clean)))
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// cleanPath is path.Clean keeping a trailing slash, as http.ServeMux
// cleans.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// clip bounds a client's path quoted in a message.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
