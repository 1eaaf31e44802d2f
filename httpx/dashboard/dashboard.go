// Package dashboard is a hosting platform's Domains dashboard: a page at
// <base>/ (default /dashboard) and a beta JSON API under <base>/api/
// through which a key manages its project's custom domains (add, verify,
// "Configure DNS for me", remove, the primary domain and redirects), its
// webhook endpoints, and reads its rate-limit usage, described by its own
// OpenAPI document (OpenAPI). It runs behind the same chain as the /v1 API
// (httpx.Wrap): give it the same Limiter so that a key's requests to both
// count together.
package dashboard

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx"
)

// DomainEngine is what the dashboard needs of the custom-domain engine.
// *customdomain.Engine implements it; a platform may wrap it, for example to
// audit changes. Every method acts for one project and returns the
// engine's application errors (invalid_request, not_found, plan_required,
// deploy_required, conflict).
type DomainEngine interface {
	Add(ctx context.Context, projectID, name string) (d customdomain.Domain, created bool, err error)
	Get(ctx context.Context, projectID, name string) (customdomain.Domain, error)
	List(ctx context.Context, projectID string) ([]customdomain.Domain, error)
	Verify(ctx context.Context, projectID, name string) (customdomain.Domain, error)
	Remove(ctx context.Context, projectID, name string) error
	Config(ctx context.Context, projectID string) (customdomain.Config, error)
	SetConfig(ctx context.Context, projectID string, c customdomain.Config) (customdomain.Config, error)
}

var _ DomainEngine = (*customdomain.Engine)(nil)

// DNSConfigurer is implemented by a DomainEngine that can write a domain's
// records at the DNS the platform manages (*customdomain.Engine does, when its
// EngineConfig.DNS is set). The dashboard offers "Configure DNS for me"
// through it; with an engine that lacks it the operation is
// invalid_request.
type DNSConfigurer interface {
	ConfigureDNS(ctx context.Context, projectID, name string) ([]customdomain.Finding, error)
}

var _ DNSConfigurer = (*customdomain.Engine)(nil)

// Config configures New.
type Config struct {
	Engine         DomainEngine           // required
	Auth           petstore.Authenticator // required: the same keys as /v1
	Logger         *slog.Logger           // nil: discard
	AccessLog      *slog.Logger           // nil: the access log goes to Logger (see httpx.Config)
	Limiter        httpx.RateLimiter      // nil: no rate limiting; share /v1's to count both together
	TrustedProxies []netip.Prefix         // X-Forwarded-For is honoured only from these peers
	BasePath       string                 // where the dashboard is mounted; default "/dashboard"
	Now            func() time.Time       // nil: time.Now
	Metrics        prometheus.Registerer  // nil: no metrics; may be the API's (see httpx.Config.Metrics)
	TracerProvider trace.TracerProvider   // nil: no spans; see httpx.Config.TracerProvider

	// IETFRateLimitHeaders adds the IETF draft's rate-limit headers, as
	// httpx.Config's does.
	IETFRateLimitHeaders bool

	// Usage reports the signed-in key's rate-limit usage for the Usage
	// panel (GET <base>/api/usage); usually the Limiter itself, with a
	// ratelimit.History. nil: the panel says usage is not reported.
	Usage UsageReporter

	// Webhooks manages the projects' webhook endpoints (<base>/api/webhooks);
	// usually a *webhook.Service. nil: those paths answer not_found.
	Webhooks Webhooks
}

// dashboardOpenAPIJSON is the dashboard API's OpenAPI 3.0.3 document.
//
//go:embed openapi.json
var dashboardOpenAPIJSON []byte

// OpenAPI returns the dashboard API's OpenAPI document as
// written, with the server "/dashboard/api".
func OpenAPI() []byte { return append([]byte(nil), dashboardOpenAPIJSON...) }

//go:embed dashboardui
var dashboardUI embed.FS

// asset is one embedded file of the page, served with an ETag so browsers
// revalidate instead of downloading it again.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

// dashboard serves the page and the JSON API under base.
type dashboard struct {
	Config
	base          string // Config.BasePath, checked
	api           string // base + "/api"
	openapi       []byte
	openapiETag   string
	assets        map[string]asset // by path under base, "/" for the page
	*httpx.Router                  // the page, its files and the API, on ServeMux patterns
}

// New returns the handler of the dashboard: the Domains page at
// <base>/ (with its CSS and JS, embedded) and the JSON API under
// <base>/api/ (default base "/dashboard"). Mount it without stripping the
// prefix: mux.Handle("/dashboard/", h).
//
// The API uses the same chain as /v1 (request id, logging, recovery,
// bearer authentication, rate limiting) and the same Error bodies; a key
// acts for its project. The page, its assets and <base>/api/openapi.json
// need no key. Every response carries X-API-Stability: beta. The
// endpoints are those of the OpenAPI document (OpenAPI).
func New(cfg Config) (http.Handler, error) {
	if cfg.Engine == nil {
		return nil, errors.New("dashboard: Config.Engine is required")
	}
	base := cmp.Or(cfg.BasePath, "/dashboard")
	if !strings.HasPrefix(base, "/") || strings.ContainsAny(base, "?#{} ") || strings.Contains(base, "//") {
		return nil, errors.New(`dashboard: Config.BasePath must be an absolute path such as "/dashboard"`)
	}
	if base = strings.TrimSuffix(base, "/"); base == "" {
		return nil, errors.New(`dashboard: Config.BasePath must not be the root; use e.g. "/dashboard"`)
	}
	d := &dashboard{Config: cfg, base: base, api: base + "/api", assets: map[string]asset{}}
	doc, err := dashboardOpenAPIDocument(d.api)
	if err != nil {
		return nil, err
	}
	d.openapi, d.openapiETag = doc, httpx.ETag(doc)
	public := []string{base, d.api + "/openapi.json"}
	err = fs.WalkDir(dashboardUI, "dashboardui", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := dashboardUI.ReadFile(p)
		if err != nil {
			return err
		}
		name, ctype := strings.TrimPrefix(p, "dashboardui"), mime.TypeByExtension(path.Ext(p))
		if name == "/index.html" {
			name, ctype = "/", "text/html; charset=utf-8"
		}
		d.assets[name] = asset{body: b, ctype: ctype, etag: httpx.ETag(b)}
		public = append(public, base+name)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dashboard: embedded dashboard page: %w", err)
	}
	d.routes()
	chained, err := httpx.Wrap(httpx.Config{
		Auth: cfg.Auth, Logger: cfg.Logger, AccessLog: cfg.AccessLog, Limiter: cfg.Limiter, IETFRateLimitHeaders: cfg.IETFRateLimitHeaders,
		TrustedProxies: cfg.TrustedProxies, Now: cfg.Now, Metrics: cfg.Metrics,
		TracerProvider: cfg.TracerProvider, PublicBudgetPaths: []string{d.api + "/usage"},
	}, d, public...)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Set before the chain, so that 401 and 429 carry it too.
		w.Header().Set(httpx.StabilityHeader, httpx.StabilityBeta)
		chained.ServeHTTP(w, r)
	}), nil
}

// dashboardOpenAPIDocument returns the document with its server set to
// where this handler serves the API, so tools call this server.
func dashboardOpenAPIDocument(api string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(dashboardOpenAPIJSON, &doc); err != nil {
		return nil, fmt.Errorf("dashboard: embedded dashboard_openapi.json: %w", err)
	}
	doc["servers"] = []any{map[string]any{"url": api, "description": "The dashboard API of this server"}}
	return httpx.MarshalDocument(doc)
}

// routes registers the page, its files and the JSON API on the
// dashboard's router; a GET operation answers HEAD too.
func (d *dashboard) routes() {
	d.Router = httpx.NewRouter()
	api := d.api + "/"
	type op struct {
		method string
		handle handler
	}
	for _, p := range []struct {
		path string
		ops  []op
	}{
		{"openapi.json", []op{{"GET", d.handleOpenAPI}}},
		{"domains", []op{{"GET", d.handleList}, {"POST", d.handleAdd}}},
		{"usage", []op{{"GET", d.handleUsage}}},
		{"domains/config", []op{{"GET", d.handleGetConfig}, {"PUT", d.handlePutConfig}}},
		{"domains/{name}", []op{{"GET", d.handleGet}, {"DELETE", d.handleRemove}}},
		{"domains/{name}/verify", []op{{"POST", d.handleVerify}}},
		{"domains/{name}/dns", []op{{"POST", d.handleConfigureDNS}}},
		{"webhooks", []op{{"GET", d.webhooks(d.handleListWebhooks)}, {"POST", d.webhooks(d.handleCreateWebhook)}}},
		{"webhooks/{id}", []op{{"DELETE", d.webhooks(d.handleDeleteWebhook)}}},
		{"webhooks/{id}/deliveries", []op{{"GET", d.webhooks(d.handleWebhookDeliveries)}}},
		{"webhooks/{id}/roll-secret", []op{{"POST", d.webhooks(d.handleRollWebhookSecret)}}},
	} {
		var allow []string
		for _, o := range p.ops {
			d.Handle(o.method+" "+api+p.path, func(w http.ResponseWriter, r *http.Request) {
				key, _ := httpx.KeyFromContext(r.Context())
				if err := o.handle(w, r, key, r.PathValue("name")); err != nil {
					httpx.WriteError(w, r, err)
				}
			})
			allow = append(allow, o.method)
			if o.method == "GET" {
				allow = append(allow, "HEAD") // a GET pattern answers HEAD too
			}
		}
		// 405 for the other methods, one pattern each: a method-less one
		// would conflict with the wildcard's ("domains/config" against
		// "GET domains/{name}").
		allowed := strings.Join(allow, ", ")
		for _, m := range standardMethods {
			if !slices.Contains(allow, m) {
				d.Refuse(m+" "+api+p.path, allowed, nil)
			}
		}
	}
	for name := range d.assets {
		pattern := d.base + name
		if name == "/" {
			pattern += "{$}"
		}
		d.Handle("GET "+pattern, d.handleAsset)
		d.Refuse(pattern, "GET, HEAD", nil)
	}
	// The base without its slash goes to the page, whatever the method.
	d.Handle(d.base, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, d.base+"/", http.StatusMovedPermanently)
	})
	d.Refuse("/", "", nil)
}

// handler is a JSON API operation; name is the path's {name}, if any.
type handler func(w http.ResponseWriter, r *http.Request, key petstore.APIKey, name string) error

// standardMethods are the methods of RFC 9110 and PATCH; a request with
// another method on a known path is 404.
var standardMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}

// handleAsset serves the page and its files. The page is strict about
// what it may load: only its own script, style and API, never a frame.
func (d *dashboard) handleAsset(w http.ResponseWriter, r *http.Request) {
	a := d.assets[strings.TrimPrefix(r.URL.Path, d.base)]
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", a.etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

func (d *dashboard) handleOpenAPI(w http.ResponseWriter, r *http.Request, _ petstore.APIKey, _ string) error {
	httpx.ServeDocument(w, r, d.openapi, d.openapiETag)
	return nil
}

// domainList is the body of GET <base>/api/domains.
type domainList struct {
	Domains []customdomain.Domain `json:"domains"`
	Config  customdomain.Config   `json:"config"`
}

func (d *dashboard) handleList(w http.ResponseWriter, r *http.Request, key petstore.APIKey, _ string) error {
	list, err := d.Engine.List(r.Context(), key.ProjectID)
	if err != nil {
		return err
	}
	cfg, err := d.Engine.Config(r.Context(), key.ProjectID)
	if err != nil {
		return err
	}
	out := domainList{Domains: make([]customdomain.Domain, 0, len(list)), Config: tidyConfig(cfg)}
	for _, dm := range list {
		out.Domains = append(out.Domains, tidyDomain(dm))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (d *dashboard) handleAdd(w http.ResponseWriter, r *http.Request, key petstore.APIKey, _ string) error {
	body, err := httpx.ReadBody(w, r)
	if err != nil {
		return err
	}
	name, err := decodeNewDomain(body)
	if err != nil {
		return err
	}
	dm, created, err := d.Engine.Add(r.Context(), key.ProjectID, name)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", d.api+"/domains/"+url.PathEscape(dm.Name))
	}
	httpx.WriteJSON(w, status, tidyDomain(dm))
	return nil
}

func (d *dashboard) handleGet(w http.ResponseWriter, r *http.Request, key petstore.APIKey, name string) error {
	dm, err := d.Engine.Get(r.Context(), key.ProjectID, name)
	return answer(w, tidyDomain(dm), err)
}

func (d *dashboard) handleVerify(w http.ResponseWriter, r *http.Request, key petstore.APIKey, name string) error {
	dm, err := d.Engine.Verify(r.Context(), key.ProjectID, name)
	return answer(w, tidyDomain(dm), err)
}

// dnsConfigured is the body of POST <base>/api/domains/{name}/dns.
type dnsConfigured struct {
	Findings []customdomain.Finding `json:"findings"`
	Domain   customdomain.Domain    `json:"domain"`
}

// handleConfigureDNS writes the domain's records at the platform's DNS
// and, when nothing stood in the way, verifies the domain at once.
func (d *dashboard) handleConfigureDNS(w http.ResponseWriter, r *http.Request, key petstore.APIKey, name string) error {
	c, ok := d.Engine.(DNSConfigurer)
	if !ok {
		return petstore.Errorf(petstore.CodeInvalidRequest, "this platform does not manage DNS; create the records at your DNS provider")
	}
	findings, err := c.ConfigureDNS(r.Context(), key.ProjectID, name)
	if err != nil {
		return err
	}
	var dm customdomain.Domain
	if len(findings) == 0 {
		dm, err = d.Engine.Verify(r.Context(), key.ProjectID, name)
	} else {
		dm, err = d.Engine.Get(r.Context(), key.ProjectID, name)
	}
	return answer(w, dnsConfigured{Findings: orEmpty(findings), Domain: tidyDomain(dm)}, err)
}

func (d *dashboard) handleRemove(w http.ResponseWriter, r *http.Request, key petstore.APIKey, name string) error {
	if err := d.Engine.Remove(r.Context(), key.ProjectID, name); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (d *dashboard) handleGetConfig(w http.ResponseWriter, r *http.Request, key petstore.APIKey, _ string) error {
	cfg, err := d.Engine.Config(r.Context(), key.ProjectID)
	return answer(w, tidyConfig(cfg), err)
}

func (d *dashboard) handlePutConfig(w http.ResponseWriter, r *http.Request, key petstore.APIKey, _ string) error {
	body, err := httpx.ReadBody(w, r)
	if err != nil {
		return err
	}
	in, err := decodeDomainConfig(body)
	if err != nil {
		return err
	}
	in.ProjectID = key.ProjectID
	cfg, err := d.Engine.SetConfig(r.Context(), key.ProjectID, in)
	return answer(w, tidyConfig(cfg), err)
}

// answer writes v as the 200 answer of an operation that succeeded, or
// returns its error, which the route writes as an Error.
func answer(w http.ResponseWriter, v any, err error) error {
	if err == nil {
		httpx.WriteJSON(w, http.StatusOK, v)
	}
	return err
}

// tidyDomain fills what the engine may leave empty in a Domain: its lists
// (orEmpty), its next action and its certificate's state.
func tidyDomain(d customdomain.Domain) customdomain.Domain {
	d.Records = orEmpty(d.Records)
	d.History = orEmpty(d.History)
	d.Diagnosis.Findings = orEmpty(d.Diagnosis.Findings)
	d.Diagnosis.Observed.Addresses = orEmpty(d.Diagnosis.Observed.Addresses)
	d.Diagnosis.NextAction = cmp.Or(d.Diagnosis.NextAction, customdomain.ActionNone)
	d.Certificate.State = cmp.Or(d.Certificate.State, customdomain.CertNone)
	return d
}

func tidyConfig(c customdomain.Config) customdomain.Config {
	c.Redirects = orEmpty(c.Redirects)
	return c
}

// orEmpty is s, or an empty slice for nil: a list the API answers encodes
// as [], never null, so clients iterate over it without checks.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// decodeNewDomain reads {"name": "shop.example.com"}. The name itself is
// validated by the engine, which knows the rules.
func decodeNewDomain(body []byte) (string, error) {
	var in struct {
		Name *string `json:"name"`
	}
	if err := httpx.DecodeObject(body, &in); err != nil {
		return "", err
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		return "", petstore.Errorf(petstore.CodeInvalidRequest, "name is required: the domain or subdomain to add, like shop.example.com")
	}
	return *in.Name, nil
}

// decodeDomainConfig reads {"primary": ..., "redirects": [{from, to,
// status}]}. The engine validates names, statuses, chains and loops.
func decodeDomainConfig(body []byte) (customdomain.Config, error) {
	var in struct {
		Primary   *string                  `json:"primary"`
		Redirects []*customdomain.Redirect `json:"redirects"`
	}
	if err := httpx.DecodeObject(body, &in); err != nil {
		return customdomain.Config{}, err
	}
	out := customdomain.Config{Redirects: make([]customdomain.Redirect, 0, len(in.Redirects))}
	if in.Primary != nil {
		out.Primary = strings.TrimSpace(*in.Primary)
	}
	for i, rd := range in.Redirects {
		if rd == nil {
			return customdomain.Config{}, petstore.Errorf(petstore.CodeInvalidRequest, "redirects[%d] must be an object with from, to and status", i)
		}
		if strings.TrimSpace(rd.From) == "" || strings.TrimSpace(rd.To) == "" {
			return customdomain.Config{}, petstore.Errorf(petstore.CodeInvalidRequest, "redirects[%d] needs both from and to", i)
		}
		out.Redirects = append(out.Redirects, *rd)
	}
	return out, nil
}
