package customdomain

import (
	"context"
	"maps"
	"slices"
	"strings"
)

// Route tells the edge what to do with a request for host (a Host header:
// any case, with or without port and trailing dot): serve a project, send a
// redirect, or nothing (RouteNone) for a name that is not an active custom
// domain. It reads an in-memory table and does no I/O.
//
// A name with no domain of its own is routed by the wildcard one label
// above it, if any: a.shop.example.com by *.shop.example.com, which
// serves it when the wildcard's redirect would lead back to that very
// name (directly, or through other wildcards' redirects).
func (e *Engine) Route(host string) RouteAnswer {
	name := hostName(host)
	routes := *e.routes.Load()
	if r, ok := routes[name]; ok {
		return r
	}
	if r, ok := byWildcard(routes, name); ok {
		if r.Kind == RouteRedirect && leadsBack(routes, r.RedirectTo, name) {
			// The name has no live domain of its own yet, and redirecting
			// it would send the browser round in a loop: serve it, as the
			// wildcard would.
			return RouteAnswer{Kind: RouteServe, Name: name, ProjectID: r.ProjectID}
		}
		return r
	}
	return RouteAnswer{Kind: RouteNone, Name: name}
}

// byWildcard is the answer of the wildcard one label above name, for a
// name with no route of its own.
func byWildcard(routes map[string]RouteAnswer, name string) (RouteAnswer, bool) {
	w, ok := wildcardParent(name)
	if !ok {
		return RouteAnswer{}, false
	}
	r, ok := routes[w]
	r.Name = name
	return r, ok
}

// leadsBack reports whether following redirects from to reaches name.
// SetConfig refuses chains of named redirects, but a target with no live
// domain of its own follows its wildcard's redirect, and two wildcards
// redirecting to names below each other make a loop.
func leadsBack(routes map[string]RouteAnswer, to, name string) bool {
	var seen []string // a loop that name is not on ends the walk
	for to != name {
		if slices.Contains(seen, to) {
			return false
		}
		seen = append(seen, to)
		r, ok := routes[to]
		if !ok {
			r, ok = byWildcard(routes, to)
		}
		if !ok || r.Kind != RouteRedirect {
			return false
		}
		to = r.RedirectTo
	}
	return true
}

// maxHostBytes is the longest Host (or TLS server name) that can name a
// custom domain: at most 253 code points, as its ASCII form has at most
// 253 octets, of at most 4 UTF-8 bytes each, with a port and a trailing
// dot.
const maxHostBytes = 4*253 + len(".:65535")

// hostName normalises a Host header to a stored name without allocating
// for the common, already-normal case. A host too long to name any
// domain is "", which names none: anyone can send one, of up to a
// megabyte, and its IDNA processing would cost far more than refusing it.
func hostName(host string) string {
	if len(host) > maxHostBytes {
		return ""
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		host = host[:i]
	}
	host = strings.TrimSuffix(host, ".")
	upper := false
	for i := 0; i < len(host); i++ {
		c := host[i]
		if c >= 0x80 {
			if n, err := ParseName(host); err == nil {
				return n.ASCII
			}
			return strings.ToLower(host)
		}
		upper = upper || 'A' <= c && c <= 'Z'
	}
	if upper {
		return strings.ToLower(host)
	}
	return host
}

// Refresh reloads the routing table from the store, picking up changes
// other processes made, and then, when EdgeIPs is empty, resolves the
// CNAME target's addresses again; views then ask the certificate layer
// once more for each domain they show. The routing table is reloaded
// before the lookup, so DNS that hangs never holds a change back. Run
// does the same every RefreshEvery (the lookup in its background checks'
// loop); changes made through this engine take effect at once without
// it.
func (e *Engine) Refresh(ctx context.Context) error {
	err := e.reloadRoutes(ctx, true)
	if len(e.cfg.EdgeIPs) == 0 {
		e.lookupEdge(ctx)
	}
	return err
}

// reloadRoutes is Refresh without DNS: it reloads the routing table, and
// views ask the certificate layer again. The reloads of Run and Apply do
// only this, so that a removal reaches this process however long the
// lookup of the edge's addresses takes. With plans, it asks the platform
// about each project's plan again (Run's periodic reload); without, it
// keeps what the last one read (Apply's, for a change).
func (e *Engine) reloadRoutes(ctx context.Context, plans bool) error {
	e.forgetCerts()
	e.routeMu.Lock()
	defer e.routeMu.Unlock()
	return e.reloadPlans(ctx, plans, "")
}

// reload refreshes after a local change to a domain of projectID; a
// failure only delays the change until the next Refresh, so it is
// logged, not returned.
func (e *Engine) reload(ctx context.Context, projectID string) {
	e.routeMu.Lock()
	err := e.reloadLocked(ctx, projectID)
	e.routeMu.Unlock()
	if err != nil {
		e.cfg.Logger.Warn("routing table reload failed; the next refresh retries", "err", err)
	}
}

// reloadLocked reloads the routing table after a change this engine made
// to projectID's domains, with the plans the last Refresh read (see
// suspendedProjects) but projectID's, which it asks again: the change may
// follow an upgrade. The caller holds routeMu.
func (e *Engine) reloadLocked(ctx context.Context, projectID string) error {
	return e.reloadPlans(ctx, false, projectID)
}

// reloadPlans is reloadLocked, asking the platform about every project's
// plan again when fresh, else about again's and those it does not know.
func (e *Engine) reloadPlans(ctx context.Context, fresh bool, again string) error {
	attached, err := e.cfg.Store.ListDomains(ctx, DomainQuery{})
	if err != nil {
		return err
	}
	configs, err := e.cfg.Store.ListDomainConfigs(ctx)
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, en := range attached {
		if en.Status.live() {
			live[en.ProjectID] = true
		}
	}
	suspended := e.suspendedProjects(ctx, live, fresh, again)
	m := make(map[string]RouteAnswer, len(attached))
	admitted := make(map[string]admission, len(attached))
	tokens := make(map[string]string, len(attached))
	for _, en := range attached {
		if !en.Status.FreesName() {
			tokens[en.Name] = en.Token // "" answers no challenge, but is held
		}
		switch en.Status {
		case StatusActive, StatusMisconfigured:
			// A misconfigured domain is still served through its grace
			// period, but its certificate is not renewed.
			admitted[en.Name] = admission{renew: en.Status == StatusActive}
			if suspended[en.ProjectID] {
				// Not served until the project upgrades, and not by a
				// wildcard above it either: the name is the project's.
				m[en.Name] = RouteAnswer{Kind: RouteNone, Name: en.Name}
				continue
			}
			m[en.Name] = RouteAnswer{Kind: RouteServe, Name: en.Name, ProjectID: en.ProjectID}
		case StatusIssuing:
			admitted[en.Name] = admission{renew: true}
		case StatusPending:
			if en.Cert == CertIssued || en.Cert == CertExpiring {
				// Its certificate was obtained before the cutover (DCV
				// delegation): served at a handshake, and renewed.
				admitted[en.Name] = admission{renew: true}
			}
		}
	}
	var redirects []RouteAnswer
	for _, c := range configs {
		for _, r := range c.Redirects {
			// Only a live name redirects: one whose DNS the customer proved
			// is theirs, and only within the project that holds it, to a
			// name the project serves (its own live domain, or a name its
			// live wildcard serves): until a pending target goes live, or
			// once it is removed or released, the name serves the project
			// rather than send visitors to a 404.
			to, ok := m[r.To]
			if !ok {
				to, ok = byWildcard(m, r.To)
			}
			if cur, live := m[r.From]; live && cur.ProjectID == c.ProjectID && ok && to.Kind == RouteServe && to.ProjectID == c.ProjectID {
				redirects = append(redirects, RouteAnswer{Kind: RouteRedirect, Name: r.From, ProjectID: c.ProjectID, RedirectTo: r.To, Status: r.Status})
			}
		}
	}
	for _, r := range redirects {
		m[r.Name] = r
	}
	e.routes.Store(&m)
	e.admitted.Store(&admitted)
	e.tokens.Store(&tokens)
	return nil
}

// admission is what the certificate layer may do for an admitted name.
type admission struct{ renew bool }

// Admits reports whether host (a TLS handshake's server name, or a Host
// header) is a custom domain whose DNS verified and that is not removed:
// issuing, active or misconfigured (or pending with a certificate obtained
// through DCV delegation), or a name one label below such a
// wildcard with no domain of its own. A certificate layer asks it on every
// handshake, for any name anyone sends, so it reads an in-memory set kept
// with the routing table and does no I/O; other processes' changes reach
// it within RefreshEvery (within milliseconds with EngineConfig.Feed), and
// this engine's own at once.
func (e *Engine) Admits(host string) bool {
	_, _, ok := e.admission(hostName(host))
	return ok
}

// Renews reports whether host's certificate may be obtained or renewed:
// Admits, except for a misconfigured domain, whose record points
// elsewhere, so that the platform does not keep a certificate alive for a
// name it may no longer control. No I/O, like Admits.
func (e *Engine) Renews(host string) bool {
	a, _, ok := e.admission(hostName(host))
	return ok && a.renew
}

// CoveredByWildcard reports whether host is admitted only as a name one
// label below an admitted wildcard, with no domain of its own: its
// handshakes are answered with the wildcard's certificate, so a
// certificate of its own is never to be obtained (each made-up label
// would otherwise cost an order at the CA). No I/O, like Admits.
func (e *Engine) CoveredByWildcard(host string) bool {
	_, byWildcard, ok := e.admission(hostName(host))
	return ok && byWildcard
}

// admission is what the certificate layer may do for name, and whether
// it is admitted through the wildcard above it rather than on its own.
func (e *Engine) admission(name string) (a admission, byWildcard, ok bool) {
	set := *e.admitted.Load()
	if a, ok := set[name]; ok {
		return a, false, true
	}
	if w, ok := wildcardParent(name); ok {
		if _, own := (*e.routes.Load())[name]; !own {
			a, ok := set[w]
			return a, ok, ok
		}
	}
	return admission{}, false, false
}

// patchRoutes applies a change to a copy of the table and publishes it;
// the caller holds routeMu.
func (e *Engine) patchRoutes(change func(map[string]RouteAnswer)) {
	m := maps.Clone(*e.routes.Load())
	change(m)
	e.routes.Store(&m)
}

// unadmit drops name from the admitted set, and its challenge token, at
// once; the caller holds routeMu.
func (e *Engine) unadmit(name string) {
	a := maps.Clone(*e.admitted.Load())
	delete(a, name)
	e.admitted.Store(&a)
	e.setToken(name, "")
}

// setToken records (or, with "", forgets) the challenge token of name at
// once; the caller holds routeMu.
func (e *Engine) setToken(name, token string) {
	t := maps.Clone(*e.tokens.Load())
	delete(t, name)
	if token != "" {
		t[name] = token
	}
	e.tokens.Store(&t)
}
