// Package edge is the Host-routing front of a hosting platform (see New):
// the platform's own hosts, its projects' custom domains, and a JSON 404
// for any other Host. The domain engine is its Router.
package edge

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx"
)

// Router answers the edge's question for one request: which project, if
// any, serves this Host. The domain engine implements it from an in-memory
// table, so it is fast and reflects an add, verify, remove or config change
// at once. Implementations must be safe for concurrent use.
type Router interface {
	// Route returns RouteServe with the project for an active custom
	// domain, RouteRedirect with the target and status for a redirect
	// domain, and RouteNone for anything else. host is lower-case, without
	// port or trailing dot.
	Route(host string) customdomain.RouteAnswer
}

// RouterFunc adapts a function to Router.
type RouterFunc func(host string) customdomain.RouteAnswer

// Route implements Router.
func (f RouterFunc) Route(host string) customdomain.RouteAnswer { return f(host) }

// Challenger answers the HTTP ownership check of a custom domain whose
// record is proxied: the token the edge returns at
// customdomain.ChallengePath for host, if host is a custom domain that is
// not removed (customdomain.Engine.ChallengeToken). Implementations must
// be safe for concurrent use.
type Challenger interface {
	ChallengeToken(ctx context.Context, host string) (string, bool)
}

// Config configures New.
type Config struct {
	// PlatformHosts are the platform's own host names: requests for them
	// go to Platform. An entry "*.example.net" matches every name below
	// example.net. nil means just "localhost". IP literals are always
	// platform hosts: no custom domain can be an IP address.
	PlatformHosts []string

	// Platform serves the platform's own hosts: /v1, /dashboard/ and the
	// dashboard API. Required.
	Platform http.Handler

	// Router says which project a custom domain belongs to. Required.
	Router Router

	// Challenges, when set, answers GET customdomain.ChallengePath for a
	// custom domain in any state (pending ones included), so that the
	// engine's HTTP check through a customer's proxy finds this platform.
	Challenges Challenger

	// Site returns the handler that serves a project's content on its
	// custom domains. It is called on every request, so it should return
	// a cached handler. A nil handler answers 404. Required.
	Site func(projectID string) http.Handler

	// RedirectScheme is the scheme of redirect Locations: "https" when
	// the platform serves custom domains over TLS. "" means the scheme of
	// the request. A Location never carries a port: the target is named
	// as the redirect configures it, and the port a client reached this
	// server on says nothing about where the target domain listens.
	RedirectScheme string

	// UnknownHostHint ends the message of the 404 for a Host that is
	// neither a platform host nor a served custom domain: how an operator
	// makes the platform answer at that name, in the words of their
	// configuration (the example server names its -platform-hosts flag).
	// Empty: a generic sentence. It is the same for every such Host, so it
	// reveals nothing about the names other projects hold.
	UnknownHostHint string

	// Logger receives the edge's errors. nil: discard.
	Logger *slog.Logger
}

// server routes requests by Host; see New.
type server struct {
	Config
	exact    map[string]bool
	suffixes []string // ".example.net" for "*.example.net"
}

// New returns the handler in front of everything a platform serves,
// routing each request by its Host header:
//
//   - a platform host (PlatformHosts, or any IP literal) goes to Platform;
//   - an active custom domain goes to Site(projectID) of its project;
//   - a redirect domain answers the configured status (301 by default)
//     with Location set to the same path and query on the target;
//   - any other Host (unknown, pending, failed or removed) is 404 with an
//     Error body: never another project's content;
//   - with Challenges, GET customdomain.ChallengePath on a custom domain
//     in any state answers its ownership token;
//   - OPTIONS * (about the server, not a resource) on a served or
//     redirect domain answers 200 with no body, never a redirect. net/http's
//     server answers it before any handler unless its
//     DisableGeneralOptionsHandler is set.
func New(cfg Config) (http.Handler, error) {
	switch {
	case cfg.Platform == nil:
		return nil, errors.New("edge: Config.Platform is required")
	case cfg.Router == nil:
		return nil, errors.New("edge: Config.Router is required")
	case cfg.Site == nil:
		return nil, errors.New("edge: Config.Site is required")
	case !slices.Contains([]string{"", "http", "https"}, cfg.RedirectScheme):
		return nil, errors.New(`edge: Config.RedirectScheme must be "", "http" or "https"`)
	}
	hosts := cfg.PlatformHosts
	if hosts == nil {
		hosts = []string{"localhost"}
	}
	cfg.UnknownHostHint = cmp.Or(cfg.UnknownHostHint, "it is neither one of the platform's own hosts nor an active custom domain")
	e := &server{Config: cfg, exact: map[string]bool{}}
	for _, h := range hosts {
		h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		switch {
		case h == "":
		case strings.HasPrefix(h, "*."):
			e.suffixes = append(e.suffixes, h[1:])
		default:
			e.exact[h] = true
		}
	}
	return e, nil
}

// RequestHost returns the host of r without port or trailing dot, in lower
// case: the form the edge routes on. It reads r.Host (the Host header, or
// the authority of an HTTP/2 request).
func RequestHost(r *http.Request) string {
	h := r.Host
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

func (e *server) isPlatform(host string) bool {
	if host == "" || e.exact[host] {
		return true
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return slices.ContainsFunc(e.suffixes, func(s string) bool { return strings.HasSuffix(host, s) })
}

func (e *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := RequestHost(r)
	if e.isPlatform(host) {
		e.Platform.ServeHTTP(w, r)
		return
	}
	if e.Challenges != nil && r.URL.Path == customdomain.ChallengePath && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		if token, ok := e.Challenges.ChallengeToken(r.Context(), host); ok {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			io.WriteString(w, token)
			return
		}
	}
	ans := e.Router.Route(host)
	if r.Method == http.MethodOptions && r.RequestURI == "*" && ans.Kind != customdomain.RouteNone {
		// RFC 9110 §9.3.7; a redirect's Location would end in "*".
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
		return
	}
	switch ans.Kind {
	case customdomain.RouteServe:
		if h := e.Site(ans.ProjectID); h != nil {
			h.ServeHTTP(w, r)
			return
		}
	case customdomain.RouteRedirect:
		e.redirect(w, r, ans)
		return
	}
	httpx.WriteError(w, r, petstore.Errorf(petstore.CodeNotFound, "no site is served at %s: %s", clipHost(host), e.UnknownHostHint))
}

// redirect sends the client to the same path and query on the target
// domain, without a port (see Config.RedirectScheme).
func (e *server) redirect(w http.ResponseWriter, r *http.Request, ans customdomain.RouteAnswer) {
	scheme := e.RedirectScheme
	if scheme == "" {
		scheme = "http"
		if r.TLS != nil {
			scheme = "https"
		}
	}
	status := ans.Status
	if !slices.Contains([]int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect}, status) {
		status = http.StatusMovedPermanently
	}
	loc := scheme + "://" + ans.RedirectTo + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	w.Header().Set("Location", loc)
	w.Header().Set("Cache-Control", "no-store") // a changed config must not stay cached in browsers
	w.WriteHeader(status)
}

// clipHost keeps error messages short whatever Host a client sends.
func clipHost(h string) string {
	if len(h) > 100 {
		return h[:97] + "..."
	}
	return h
}
