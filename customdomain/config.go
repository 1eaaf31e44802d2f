package customdomain

import (
	"context"
	"net/http"
	"strconv"

	"github.com/petstorekit/petstore"
)

// Config returns the project's primary domain and redirects.
func (e *Engine) Config(ctx context.Context, projectID string) (Config, error) {
	c, err := e.cfg.Store.DomainConfig(ctx, projectID)
	if err != nil {
		return Config{}, err
	}
	c.ProjectID = projectID
	if c.Redirects == nil {
		c.Redirects = []Redirect{}
	}
	return c, nil
}

// SetConfig validates and stores the project's primary domain and
// redirects, and returns the stored form (ASCII names, statuses filled in).
// Names may be given in either form; status 0 means 301. A redirect's
// target may be a domain still pending: the redirect applies once the
// target is served (see Route), and its source serves the project until
// then.
//
// Returns invalid_request, saying which entry is wrong, when a name is
// invalid or not attached to the project, the primary or a redirect's
// target is a wildcard, a status is not 301, 302, 307 or
// 308, the primary redirects, a name redirects twice, or redirects form a
// chain or a loop; plan_required while the project is below Pro (its
// domains are suspended, see StatusSuspended).
func (e *Engine) SetConfig(ctx context.Context, projectID string, c Config) (Config, error) {
	if err := e.requirePlan(ctx, projectID); err != nil {
		return Config{}, err
	}
	attached, err := e.cfg.Store.ListDomains(ctx, DomainQuery{ProjectID: projectID})
	if err != nil {
		return Config{}, err
	}
	mine := map[string]bool{}
	for _, en := range attached {
		// A released domain no longer holds its name: another project
		// may hold it now.
		mine[en.Name] = !en.Status.FreesName()
	}
	// resolve returns the stored form of the name s given as what; a
	// destination (the primary, a redirect's target) is one host a
	// Location can name, never a wildcard.
	resolve := func(what, s string, destination bool) (string, error) {
		n, err := ParseName(s)
		if err != nil {
			return "", petstore.Errorf(petstore.CodeInvalidRequest, "%s: %s", what, petstore.ErrorMessage(err))
		}
		if !mine[n.ASCII] {
			return "", petstore.Errorf(petstore.CodeInvalidRequest, "%s: %s is not a domain of this project; add it first", what, n.Unicode)
		}
		if destination && n.Kind == KindWildcard {
			return "", petstore.Errorf(petstore.CodeInvalidRequest, "%s: %s is a wildcard, not one host that browsers can be sent to", what, n.Unicode)
		}
		return n.ASCII, nil
	}
	out := Config{ProjectID: projectID, Redirects: make([]Redirect, 0, len(c.Redirects))}
	if c.Primary != "" {
		if out.Primary, err = resolve("primary", c.Primary, true); err != nil {
			return Config{}, err
		}
	}
	from := map[string]bool{}
	for i, r := range c.Redirects {
		what := func(field string) string { return "redirects[" + strconv.Itoa(i) + "]." + field }
		f, err := resolve(what("from"), r.From, false)
		if err != nil {
			return Config{}, err
		}
		t, err := resolve(what("to"), r.To, true)
		if err != nil {
			return Config{}, err
		}
		switch r.Status {
		case 0:
			r.Status = http.StatusMovedPermanently
		case http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		default:
			return Config{}, petstore.Errorf(petstore.CodeInvalidRequest, "%s must be 301, 302, 307 or 308, not %d", what("status"), r.Status)
		}
		switch {
		case f == t:
			return Config{}, petstore.Errorf(petstore.CodeInvalidRequest, "%s: %s cannot redirect to itself", what("to"), f)
		case f == out.Primary:
			return Config{}, petstore.Errorf(petstore.CodeInvalidRequest, "%s: %s is the primary domain, which cannot redirect", what("from"), f)
		case from[f]:
			return Config{}, petstore.Errorf(petstore.CodeInvalidRequest, "%s: %s already redirects; a name can redirect to one place only", what("from"), f)
		}
		from[f] = true
		out.Redirects = append(out.Redirects, Redirect{From: f, To: t, Status: r.Status})
	}
	// A target that itself redirects makes a chain (and two such make a
	// loop): browsers would hop twice, so every redirect must land on a
	// name that serves.
	for i, r := range out.Redirects {
		if from[r.To] {
			return Config{}, petstore.Errorf(petstore.CodeInvalidRequest,
				"redirects[%d].to: %s redirects too, which would make a chain or a loop; redirect to a domain that serves the project", i, r.To)
		}
	}
	e.routeMu.Lock()
	defer e.routeMu.Unlock()
	before, err := e.cfg.Store.DomainConfig(ctx, projectID)
	if err != nil {
		return Config{}, err
	}
	if err := e.cfg.Store.PutDomainConfig(ctx, out); err != nil {
		return Config{}, err
	}
	if err := e.reloadLocked(ctx, projectID); err != nil {
		e.cfg.Logger.Warn("routing table reload failed; the next refresh retries", "err", err)
	}
	// The names that redirect, before or now, route differently.
	var names []string
	for _, r := range append(before.Redirects, out.Redirects...) {
		names = append(names, r.From)
	}
	e.publish(ctx, names...)
	return out, nil
}
