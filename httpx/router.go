package httpx

import (
	"net/http"
	"path"
	"strings"

	"github.com/petstorekit/petstore"
)

// Router is an http.ServeMux whose every answer is a JSON Error, paths it
// would redirect with HTML ("//", ".", "..") included. A handled request's
// route is its pattern; a refused one has none.
type Router struct {
	mux       *http.ServeMux
	fallbacks map[string]bool // the method-less patterns that refuse
}

// NewRouter returns an empty Router.
func NewRouter() *Router {
	return &Router{mux: http.NewServeMux(), fallbacks: map[string]bool{}}
}

// Handle registers an operation under a ServeMux pattern.
func (rt *Router) Handle(pattern string, h http.HandlerFunc) {
	rt.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if st := stateOf(r.Context()); st != nil {
			st.route = pattern
		}
		h(w, r)
	})
}

// Refuse registers a pattern that answers 405 with Allow, or, with allow
// "", 404; before, if set, runs first.
func (rt *Router) Refuse(pattern, allow string, before func(http.ResponseWriter)) {
	rt.fallbacks[pattern] = true
	rt.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if before != nil {
			before(w)
		}
		rt.unrouted(w, r, allow)
	})
}

// unrouted answers a request no operation takes: 404, or 405 with Allow.
// A 404 names the path as sent, escapes kept (the router reads "%2F" as
// part of a segment, so "/v1/pets%2F1" is not "/v1/pets/1"), and says
// what to write instead where it can tell: the clean path, or, for a path
// one slash short of a subtree ("/v1"), the subtree.
func (rt *Router) unrouted(w http.ResponseWriter, r *http.Request, allow string) {
	if st := stateOf(r.Context()); st != nil {
		st.unrouted = true
	}
	if allow == "" {
		p, hint := r.URL.Path, ""
		switch {
		case !isCleanPath(p):
			hint = "; paths are not cleaned: write it as " + cleanPath(p)
		case rt.fallbacks[p+"/"]:
			hint = "; the paths here start with " + p + "/"
		}
		WriteError(w, r, petstore.Errorf(petstore.CodeNotFound, "no such path: %s%s", r.URL.EscapedPath(), hint))
		return
	}
	w.Header().Set("Allow", allow)
	WriteError(w, r, petstore.Errorf(petstore.CodeMethodNotAllowed, "method %s is not allowed here; use %s", r.Method, allow))
}

// Route returns the pattern of the operation that would answer r, or "":
// the route of a request answered before routing (401, 429).
func (rt *Router) Route(r *http.Request) string {
	if !isCleanPath(r.URL.Path) {
		return ""
	}
	_, pattern := rt.mux.Handler(r)
	if rt.fallbacks[pattern] {
		return ""
	}
	return pattern
}

// ServeHTTP routes r.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isCleanPath(r.URL.Path) {
		rt.unrouted(w, r, "")
		return
	}
	rt.mux.ServeHTTP(w, r)
}

// isCleanPath reports whether p has no "//", "." or ".." segments.
func isCleanPath(p string) bool {
	return p != "" && p[0] == '/' && cleanPath(p) == p
}

// cleanPath is path.Clean keeping a trailing slash, as http.ServeMux
// cleans: what it would redirect p to.
func cleanPath(p string) string {
	c := path.Clean("/" + strings.TrimPrefix(p, "/"))
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}
