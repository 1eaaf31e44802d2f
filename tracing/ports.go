package tracing

import (
	"context"
	"net/netip"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/ratelimit"
)

// Attributes of the spans made here.
const (
	PetIDKey         = attribute.Key("petstore.pet.id")
	OrderIDKey       = attribute.Key("petstore.order.id")
	ProjectIDKey     = attribute.Key("petstore.project.id")
	KeyIDKey         = attribute.Key("petstore.key.id") // an API key's public id
	LimitKey         = attribute.Key("petstore.page.limit")
	StatusFilterKey  = attribute.Key("petstore.page.status")
	ResultCountKey   = attribute.Key("petstore.result.count")
	SubjectKindKey   = attribute.Key("petstore.ratelimit.subject") // "key", "ip" or "pub"
	DecisionKey      = attribute.Key("petstore.ratelimit.result")  // see Limiter
	DNSNameKey       = attribute.Key("dns.question.name")
	DNSTypeKey       = attribute.Key("petstore.dns.type")
	DomainKey        = attribute.Key("petstore.domain")
	IdempotencyScope = attribute.Key("petstore.idempotency.scope")
)

// PetService wraps s: ListPets, CreatePet and GetPet each make a span.
func PetService(s petstore.PetService, tp trace.TracerProvider) petstore.PetService {
	if tp == nil || s == nil {
		return s
	}
	return &petService{s, Tracer(tp)}
}

type petService struct {
	s petstore.PetService
	t trace.Tracer
}

func (p *petService) ListPets(ctx context.Context, f petstore.PetFilter) (petstore.PetPage, error) {
	ctx, span := p.t.Start(ctx, "PetService.ListPets", trace.WithAttributes(LimitKey.Int(f.Limit), StatusFilterKey.String(string(f.Status))))
	page, err := p.s.ListPets(ctx, f)
	span.SetAttributes(ResultCountKey.Int(len(page.Pets)))
	End(span, err)
	return page, err
}

func (p *petService) CreatePet(ctx context.Context, pet petstore.NewPet) (petstore.Pet, error) {
	ctx, span := p.t.Start(ctx, "PetService.CreatePet")
	created, err := p.s.CreatePet(ctx, pet)
	if err == nil {
		span.SetAttributes(PetIDKey.Int64(created.ID))
	}
	End(span, err)
	return created, err
}

func (p *petService) GetPet(ctx context.Context, id int64) (petstore.Pet, error) {
	return call(ctx, p.t, "PetService.GetPet", func(ctx context.Context) (petstore.Pet, error) { return p.s.GetPet(ctx, id) }, PetIDKey.Int64(id))
}

// OrderService wraps s: each of its calls makes a span.
func OrderService(s petstore.OrderService, tp trace.TracerProvider) petstore.OrderService {
	if tp == nil || s == nil {
		return s
	}
	return &orderService{s, Tracer(tp)}
}

type orderService struct {
	s petstore.OrderService
	t trace.Tracer
}

func (o *orderService) ListOrders(ctx context.Context, projectID string, f petstore.OrderFilter) (petstore.OrderPage, error) {
	ctx, span := o.t.Start(ctx, "OrderService.ListOrders", trace.WithAttributes(ProjectIDKey.String(projectID), LimitKey.Int(f.Limit), StatusFilterKey.String(string(f.Status))))
	page, err := o.s.ListOrders(ctx, projectID, f)
	span.SetAttributes(ResultCountKey.Int(len(page.Orders)))
	End(span, err)
	return page, err
}

func (o *orderService) CreateOrder(ctx context.Context, projectID string, order petstore.NewOrder) (petstore.Order, error) {
	ctx, span := o.t.Start(ctx, "OrderService.CreateOrder", trace.WithAttributes(ProjectIDKey.String(projectID), PetIDKey.Int64(order.PetID)))
	created, err := o.s.CreateOrder(ctx, projectID, order)
	if err == nil {
		span.SetAttributes(OrderIDKey.Int64(created.ID))
	}
	End(span, err)
	return created, err
}

func (o *orderService) GetOrder(ctx context.Context, projectID string, id int64) (petstore.Order, error) {
	return call(ctx, o.t, "OrderService.GetOrder", func(ctx context.Context) (petstore.Order, error) { return o.s.GetOrder(ctx, projectID, id) },
		ProjectIDKey.String(projectID), OrderIDKey.Int64(id))
}

// Authenticator wraps a: each Authenticate makes a span naming the key's
// public id when it succeeds (the token itself is never recorded). When
// a also has AuthenticateClient(ctx, token, client netip.Addr), as
// keycache.Cache does to pace a refused client's lookups, so does the
// value returned, which traces it the same way.
func Authenticator(a petstore.Authenticator, tp trace.TracerProvider) petstore.Authenticator {
	if tp == nil || a == nil {
		return a
	}
	traced := &authenticator{a, Tracer(tp)}
	if ca, ok := a.(clientAuthenticator); ok {
		return &clientAuthenticatorSpans{traced, ca}
	}
	return traced
}

// clientAuthenticator is an Authenticator that also takes the client's
// address (keycache.Cache; httpx calls it so when it can).
type clientAuthenticator interface {
	AuthenticateClient(ctx context.Context, token string, client netip.Addr) (petstore.APIKey, error)
}

type authenticator struct {
	a petstore.Authenticator
	t trace.Tracer
}

func (a *authenticator) Authenticate(ctx context.Context, token string) (petstore.APIKey, error) {
	return a.span(ctx, func(ctx context.Context) (petstore.APIKey, error) { return a.a.Authenticate(ctx, token) })
}

// span runs authenticate in an Authenticator.Authenticate span.
func (a *authenticator) span(ctx context.Context, authenticate func(context.Context) (petstore.APIKey, error)) (petstore.APIKey, error) {
	ctx, span := a.t.Start(ctx, "Authenticator.Authenticate")
	key, err := authenticate(ctx)
	if err == nil {
		span.SetAttributes(KeyIDKey.String(key.ID))
	}
	End(span, err)
	return key, err
}

// clientAuthenticatorSpans is authenticator over a clientAuthenticator,
// whose AuthenticateClient it keeps.
type clientAuthenticatorSpans struct {
	*authenticator
	ca clientAuthenticator
}

func (a *clientAuthenticatorSpans) AuthenticateClient(ctx context.Context, token string, client netip.Addr) (petstore.APIKey, error) {
	return a.span(ctx, func(ctx context.Context) (petstore.APIKey, error) { return a.ca.AuthenticateClient(ctx, token, client) })
}

// IdempotencyStore wraps s: each of its calls makes a span naming the
// record's scope (never the client's key or the stored response).
func IdempotencyStore(s petstore.IdempotencyStore, tp trace.TracerProvider) petstore.IdempotencyStore {
	if tp == nil || s == nil {
		return s
	}
	return &idempotencyStore{s, Tracer(tp)}
}

type idempotencyStore struct {
	s petstore.IdempotencyStore
	t trace.Tracer
}

func (s *idempotencyStore) CreateOnce(ctx context.Context, rec petstore.IdempotencyRecord, create func(context.Context) (petstore.IdempotencyRecord, bool)) (petstore.IdempotencyRecord, bool, error) {
	ctx, span := s.t.Start(ctx, "IdempotencyStore.CreateOnce", trace.WithAttributes(IdempotencyScope.String(rec.Scope)))
	stored, ran, err := s.s.CreateOnce(ctx, rec, create)
	span.SetAttributes(attribute.Bool("petstore.idempotency.ran", ran))
	End(span, err)
	return stored, ran, err
}

func (s *idempotencyStore) GetIdempotencyKey(ctx context.Context, scope, key string) (petstore.IdempotencyRecord, error) {
	return call(ctx, s.t, "IdempotencyStore.Get", func(ctx context.Context) (petstore.IdempotencyRecord, error) {
		return s.s.GetIdempotencyKey(ctx, scope, key)
	},
		IdempotencyScope.String(scope))
}

func (s *idempotencyStore) PurgeIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	return call(ctx, s.t, "IdempotencyStore.Purge", func(ctx context.Context) (int64, error) { return s.s.PurgeIdempotencyKeys(ctx, before) })
}

// Decider is the rate limiter's port as httpx calls it (httpx.RateLimiter).
type Decider interface {
	Decide(ctx context.Context, subject string, limits petstore.Limits) (ratelimit.Decision, error)
}

// Limiter wraps l: each decision makes a span whose
// petstore.ratelimit.result is "allowed", "limited", "banned" or
// "fallback" (decided by this process while the shared store is slow or
// down), and whose petstore.ratelimit.subject says whose budget was spent
// ("key", "ip" or "pub"; never the address itself).
func Limiter(l Decider, tp trace.TracerProvider) Decider {
	if tp == nil || l == nil {
		return l
	}
	return &limiter{l, Tracer(tp)}
}

type limiter struct {
	l Decider
	t trace.Tracer
}

func (l *limiter) Decide(ctx context.Context, subject string, limits petstore.Limits) (ratelimit.Decision, error) {
	kind, _, _ := strings.Cut(subject, ":")
	ctx, span := l.t.Start(ctx, "RateLimiter.Decide", trace.WithAttributes(SubjectKindKey.String(kind)))
	d, err := l.l.Decide(ctx, subject, limits)
	if err == nil {
		span.SetAttributes(DecisionKey.String(DecisionResult(d)))
	}
	End(span, err)
	return d, err
}

// DecisionResult names a decision as the spans and metrics do: "allowed",
// "limited", "banned", or "fallback" for one decided locally while the
// shared store is unavailable.
func DecisionResult(d ratelimit.Decision) string {
	switch {
	case d.Degraded:
		return "fallback"
	case d.Allowed:
		return "allowed"
	case d.Code == petstore.CodeAPIKeyBanned:
		return "banned"
	}
	return "limited"
}

// Resolver wraps r: each lookup makes a client span with the name and
// record type asked and the number of records found.
func Resolver(r customdomain.Resolver, tp trace.TracerProvider) customdomain.Resolver {
	if tp == nil || r == nil {
		return r
	}
	return &resolver{r, Tracer(tp)}
}

type resolver struct {
	r customdomain.Resolver
	t trace.Tracer
}

func (r *resolver) Lookup(ctx context.Context, name, rrtype string) ([]customdomain.Record, error) {
	ctx, span := r.t.Start(ctx, "DNS "+rrtype, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(DNSNameKey.String(name), DNSTypeKey.String(rrtype)))
	recs, err := r.r.Lookup(ctx, name, rrtype)
	span.SetAttributes(ResultCountKey.Int(len(recs)))
	End(span, err)
	return recs, err
}

// CertIssuer wraps c: requesting, checking and removing a custom domain's
// certificate each make a span naming the domain. A request starts the
// ACME order; the order itself runs in the issuer's background. An issuer
// that is also a customdomain.Diagnoser (adapters/acme is) stays one.
func CertIssuer(c customdomain.CertIssuer, tp trace.TracerProvider) customdomain.CertIssuer {
	if tp == nil || c == nil {
		return c
	}
	ci := &certIssuer{c, Tracer(tp)}
	if dg, ok := c.(customdomain.Diagnoser); ok {
		return diagnosingCertIssuer{ci, dg}
	}
	return ci
}

// diagnosingCertIssuer is a traced issuer that keeps its Diagnoser.
type diagnosingCertIssuer struct {
	*certIssuer
	dg customdomain.Diagnoser
}

func (c diagnosingCertIssuer) Diagnose(ctx context.Context, d customdomain.Domain) []customdomain.Finding {
	return c.dg.Diagnose(ctx, d)
}

type certIssuer struct {
	c customdomain.CertIssuer
	t trace.Tracer
}

func (c *certIssuer) Request(ctx context.Context, name string) error {
	return call0(ctx, c.t, "CertIssuer.Request", func(ctx context.Context) error { return c.c.Request(ctx, name) }, DomainKey.String(name))
}

func (c *certIssuer) Status(ctx context.Context, name string) (customdomain.CertStatus, error) {
	ctx, span := c.t.Start(ctx, "CertIssuer.Status", trace.WithAttributes(DomainKey.String(name)))
	st, err := c.c.Status(ctx, name)
	span.SetAttributes(attribute.String("petstore.cert.state", string(st.State)))
	End(span, err)
	return st, err
}

func (c *certIssuer) Remove(ctx context.Context, name string) error {
	return call0(ctx, c.t, "CertIssuer.Remove", func(ctx context.Context) error { return c.c.Remove(ctx, name) }, DomainKey.String(name))
}
