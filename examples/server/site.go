package main

import (
	"bytes"
	"html/template"
	"net/http"
	"strings"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/httpx"
)

// siteTemplate is the home page of a project's site in the example
// server: enough to see in a browser or with curl which project a custom
// domain serves.
var siteTemplate = template.Must(template.New("site").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#1b1f24}code{background:#f6f8fa;padding:.1rem .3rem}</style>
</head>
<body>
<h1>{{.}}</h1>
<p>This site is served by the Petstore platform for project <code>{{.}}</code>.</p>
<p>Its pets API is at <a href="/v1/pets"><code>/v1/pets</code></a> (send <code>Authorization: Bearer &lt;key&gt;</code>).</p>
</body>
</html>
`))

// projectSite returns a minimal site for a project, what the edge
// (edge.Config.Site) serves for a custom domain here: GET / answers a small
// HTML page naming the project, paths under /v1/ go to api (the pets API,
// which authenticates as usual; nil answers 404 there), and any other path
// is 404 with an Error body.
func projectSite(projectID string, api http.Handler) http.Handler {
	var page bytes.Buffer
	_ = siteTemplate.Execute(&page, projectID) // the template is fixed and cannot fail on a string
	body := page.Bytes()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/":
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				httpx.WriteError(w, r, petstore.Errorf(petstore.CodeMethodNotAllowed, "method %s is not allowed here; use GET", r.Method))
				return
			}
			h := w.Header()
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusOK)
			if r.Method == http.MethodGet {
				_, _ = w.Write(body)
			}
		case api != nil && (r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/")):
			api.ServeHTTP(w, r)
		default:
			httpx.WriteError(w, r, petstore.Errorf(petstore.CodeNotFound, "no such path: %s", r.URL.Path))
		}
	})
}
