// Package acme obtains, renews, serves and removes the TLS certificates of
// customers' custom domains through ACME, with github.com/caddyserver/certmagic.
// It is the domain engine's customdomain.CertIssuer.
//
// When a name verifies, Request starts obtaining its certificate at once in
// the background (with certmagic's retries), after checking that the
// name's CAA records allow the CA: Pebble and other test CAs do not check
// CAA, and a real CA refuses late and vaguely, so a block is reported here
// as the finding CAA_BLOCKS_CA with the record to add, and the CA is never
// asked. Certificates, account keys and locks live in a blobs.Store,
// so processes sharing a database share one certificate per name.
//
// A server answers HTTP-01 challenges with HTTPHandler on its plain-HTTP
// listener and TLS-ALPN-01 challenges, and serves the certificates, with
// TLSConfig on its TLS listener.
package acme

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/acme/blobs"
	"github.com/petstorekit/petstore/customdomain"
)

// DefaultPendingTimeout is how long a certificate may stay pending before
// Status adds the finding CERT_PENDING_TOO_LONG (the spec's 30 minutes).
const DefaultPendingTimeout = 30 * time.Minute

// Config configures an Issuer. CA and Storage are required.
type Config struct {
	// CA is the ACME directory URL, e.g.
	// https://acme-v02.api.letsencrypt.org/directory.
	CA string
	// RootCAs is PEM of extra root certificates to trust when talking to
	// the CA (a test or private CA); the system roots are trusted too.
	RootCAs []byte
	// Email is the ACME account's contact address; it may be empty.
	Email string
	// Storage keeps certificates, keys, ACME accounts and locks.
	Storage blobs.Store
	// Resolver reads CAA records. Nil skips the CAA check.
	Resolver customdomain.Resolver
	// CAAIdentities are the CA's domain names as CAA issue records name
	// it. Empty means the ACME directory's meta.caaIdentities.
	CAAIdentities []string
	// OnChange is called, outside any lock, when a name's certificate
	// status changes: obtained, renewed or failed.
	OnChange func(name string)
	// Allowed, when set, is asked during TLS handshakes whether a name
	// may be served: it enables on-demand issuance as a fallback for
	// names it allows, and a name it denies is evicted from the cache
	// and refused, at a handshake or when certmagic would renew it, so a
	// removal in one process reaches all of them. It runs on every
	// handshake and must be fast: no I/O (customdomain.Engine.Admits).
	Allowed func(ctx context.Context, name string) bool
	// Renewable, when set, is asked before certmagic renews a name's
	// certificate; a name it denies is not renewed (its certificate is
	// still served while Allowed admits it). Nil means Allowed decides.
	// Like Allowed, it must be fast: no I/O (customdomain.Engine.Renews).
	Renewable func(ctx context.Context, name string) bool
	// Held, when set, reports whether a name is a custom domain in any
	// state but removed or released (customdomain.Engine.Holds): an
	// HTTP-01 request (any Host) or TLS-ALPN-01 handshake (any server
	// name) for a name it denies, and whose validation this process did
	// not start, is refused without reading Storage, so that made-up
	// names cost the database nothing. Nil: Allowed decides, which
	// admits a name once its domain is issuing; a validation another
	// process started may then reach this one before its engine knows,
	// and fail (certmagic retries). A certificate obtained or renewed for
	// a name it denies (removed while its order was at the CA) is not
	// stored; without Held, Allowed decides that too. Like Allowed, it
	// must be fast.
	Held func(ctx context.Context, name string) bool
	// Covered, when set, reports whether a name is served only with its
	// wildcard's certificate (customdomain.Engine.CoveredByWildcard): no
	// certificate of its own is ordered for it, at a handshake or
	// otherwise, unless Request asks. Like Allowed, it must be fast.
	Covered func(ctx context.Context, name string) bool
	// DNSProvider, when set, solves DNS-01 challenges by writing TXT
	// records through libdns, instead of HTTP-01 and TLS-ALPN-01.
	DNSProvider certmagic.DNSProvider
	// DNSResolvers are the nameservers ("host:port") used to find the
	// zone of a DNS-01 record; empty means the system's.
	DNSResolvers []string
	// DCVZone and DCVProvider enable DCV delegation: a name whose
	// _acme-challenge CNAME points into DCVZone (a zone the platform's own
	// DNS serves, written through DCVProvider, a libdns provider) gets its
	// certificate by DNS-01 with the TXT record written there, before its
	// traffic reaches the platform; wildcard names (*.shop.example.com)
	// always do. Resolver must be set to read the delegations. Empty:
	// wildcards cannot be issued.
	DCVZone     string
	DCVProvider certmagic.DNSProvider
	// HTTPPort and TLSPort are the ports of the server's plain-HTTP and
	// TLS listeners, where the CA sends HTTP-01 and TLS-ALPN-01
	// validation (the CA connects to 80 and 443 unless a test CA is told
	// otherwise). HTTPPort 0 means 80. TLSPort 0 means the server has no
	// TLS listener serving TLSConfig: TLS-ALPN-01 is then disabled, so
	// certmagic never opens a listener of its own on :443, and only
	// HTTP-01 (or DNS-01) is used.
	HTTPPort, TLSPort int
	// ListenHost is the host of those listeners ("" for all addresses).
	ListenHost string
	// PendingTimeout overrides DefaultPendingTimeout.
	PendingTimeout time.Duration
	// RenewCheckInterval and RenewalWindowRatio override certmagic's
	// renewal schedule (every 10 minutes; the last third of a
	// certificate's lifetime). Tests use them with short-lived
	// certificates.
	RenewCheckInterval time.Duration
	RenewalWindowRatio float64
	// Logger receives certmagic's and the issuer's logs; nil discards.
	Logger *slog.Logger
	// Now is the clock for pending timeouts and renewal due dates, and of
	// the times storage locks are taken with (a store judging their expiry
	// on its own clock, as bunstore does, uses only their length); nil is
	// time.Now.
	Now func() time.Time
}

// Issuer is a customdomain.CertIssuer on certmagic.
type Issuer struct {
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
	storage  *Storage
	cache    *certmagic.Cache
	roots    *x509.CertPool
	magic    *certmagic.Config // obtains and renews
	dcv      *certmagic.Config // obtains and renews by DNS-01 through the DCV delegation; nil: none
	dcvZone  string
	onDemand *certmagic.Config // serves handshakes, with the on-demand fallback
	acme     *certmagic.ACMEIssuer
	httpc    *http.Client

	ctx       context.Context // ends with Close: stops every attempt
	cancel    context.CancelFunc
	closeOnce sync.Once // certmagic's Cache.Stop panics when called twice

	mu        sync.Mutex
	attempts  map[string]*attempt
	delegated map[string]bool // names Request found delegated: obtained and renewed through dcv
	// wildcardLooks is when a handshake last looked for a wildcard's
	// certificate in storage, by wildcard, while it was not cached.
	wildcardLooks map[string]time.Time
	ids           []string // CA identities, once known
}

// attempt is one Request's try at obtaining a certificate.
type attempt struct {
	started  time.Time
	cancel   context.CancelFunc
	done     bool
	renewing bool                     // renewing a stored certificate, not obtaining a first one
	failed   *customdomain.CertStatus // set when the attempt ended without a certificate
	lastErr  string                   // the latest error while certmagic retries
	blocked  *customdomain.Finding    // CAA block seen at a later renewal
	// undecided is CAA_UNDECIDED: CAA records name CAs, and this CA's
	// names are unknown, so the check could not be made.
	undecided *customdomain.Finding
}

var _ customdomain.CertIssuer = (*Issuer)(nil)

// New returns an Issuer. It contacts nobody until a name is requested.
func New(cfg Config) (*Issuer, error) {
	if cfg.CA == "" || cfg.Storage == nil {
		return nil, errors.New("acme: Config.CA and Config.Storage are required")
	}
	if cfg.PendingTimeout <= 0 {
		cfg.PendingTimeout = DefaultPendingTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if len(cfg.RootCAs) > 0 && !roots.AppendCertsFromPEM(cfg.RootCAs) {
		return nil, errors.New("acme: Config.RootCAs holds no PEM certificate")
	}
	is := &Issuer{
		cfg: cfg, log: log, now: cfg.Now,
		storage:  NewStorage(cfg.Storage, cfg.Now, log),
		attempts: map[string]*attempt{}, delegated: map[string]bool{}, wildcardLooks: map[string]time.Time{},
		ids:   cfg.CAAIdentities,
		roots: roots,
		httpc: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots}, Proxy: http.ProxyFromEnvironment,
		}},
	}
	is.storage.keep = is.storing
	is.ctx, is.cancel = context.WithCancel(context.Background())
	zl := zapToSlog(log)
	is.cache = certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert:   is.configForCert,
		RenewCheckInterval: cfg.RenewCheckInterval,
		Logger:             zl,
	})
	// Two configs on one cache: maintenance renews only certificates whose
	// config has no OnDemand, so the managed config (returned for every
	// cached certificate) obtains and renews, and the on-demand one only
	// serves handshakes, with the fallback.
	is.magic = is.newConfig(nil)
	is.acme = is.magic.Issuers[0].(*certmagic.ACMEIssuer)
	if cfg.DCVZone != "" && cfg.DCVProvider != nil {
		is.dcvZone = normalize(cfg.DCVZone)
		is.dcv = is.newConfig(nil)
		is.dcv.Issuers[0].(*certmagic.ACMEIssuer).DNS01Solver = &dcvSolver{is: is, solvers: map[string]*certmagic.DNS01Solver{}}
	}
	is.onDemand = is.magic
	if cfg.Allowed != nil {
		is.onDemand = is.newConfig(&certmagic.OnDemandConfig{DecisionFunc: func(ctx context.Context, name string) error {
			if !cfg.Allowed(ctx, name) {
				return fmt.Errorf("%s is not a verified custom domain", name)
			}
			return nil
		}})
	}
	return is, nil
}

func (is *Issuer) newConfig(onDemand *certmagic.OnDemandConfig) *certmagic.Config {
	cfg := is.cfg
	zl := zapToSlog(is.log)
	magic := certmagic.New(is.cache, certmagic.Config{
		Storage:            is.storage,
		Logger:             zl,
		RenewalWindowRatio: cfg.RenewalWindowRatio,
		OnEvent:            is.onEvent,
		OnDemand:           onDemand,
	})
	tmpl := certmagic.ACMEIssuer{
		CA: cfg.CA, TestCA: cfg.CA, Email: cfg.Email, Agreed: true,
		TrustedRoots:   is.roots,
		ListenHost:     cfg.ListenHost,
		AltHTTPPort:    cfg.HTTPPort,
		AltTLSALPNPort: cfg.TLSPort,
		// No TLS listener of ours: certmagic would otherwise answer
		// TLS-ALPN-01 on a listener of its own on :443.
		DisableTLSALPNChallenge: cfg.TLSPort == 0,
		Logger:                  zl,
	}
	if cfg.DNSProvider != nil {
		tmpl.DNS01Solver = &certmagic.DNS01Solver{DNSManager: certmagic.DNSManager{
			DNSProvider: cfg.DNSProvider,
			Resolvers:   cfg.DNSResolvers,
			// The CA reads the record from the provider's own servers;
			// checking propagation from here would need the zone's NS
			// names to resolve, which test zones' do not.
			PropagationTimeout: -1,
			Logger:             zl,
		}}
	}
	magic.Issuers = []certmagic.Issuer{certmagic.NewACMEIssuer(magic, tmpl)}
	return magic
}

// Close stops every attempt and certificate maintenance. Certificates
// stay in storage. Closing again does nothing.
func (is *Issuer) Close() error {
	is.closeOnce.Do(func() {
		is.cancel()
		is.cache.Stop()
	})
	return nil
}

func normalize(name string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
}

// Request implements customdomain.CertIssuer: it starts a new attempt for name,
// replacing any attempt still running, and returns at once. A stored
// certificate that has expired or is within its renewal window
// (Config.RenewalWindowRatio) is renewed now.
func (is *Issuer) Request(ctx context.Context, name string) error {
	name = normalize(name)
	if name == "" {
		return petstore.Errorf(petstore.CodeInvalidRequest, "domain name must not be empty")
	}
	if is.dcv != nil && !strings.HasPrefix(name, "*.") {
		// Delegated: DNS-01 works whether or not the name's traffic
		// reaches the platform yet.
		target, err := is.delegation(ctx, name)
		if err != nil {
			is.log.Warn("DCV delegation unknown; HTTP validation is tried", "domain", name, "err", err)
		}
		is.mu.Lock()
		is.delegated[name] = target != ""
		is.mu.Unlock()
	}
	actx, cancel := context.WithCancel(is.ctx)
	a := &attempt{started: is.now(), cancel: cancel}
	is.mu.Lock()
	if old := is.attempts[name]; old != nil {
		old.cancel()
	}
	is.attempts[name] = a
	is.mu.Unlock()
	go is.obtain(actx, name, a)
	return nil
}

// obtain loads name's certificate from storage or obtains one (certmagic
// retries with backoff; its cert_obtaining event runs the CAA check), then
// caches it so handshakes are served and maintenance renews it.
func (is *Issuer) obtain(ctx context.Context, name string, a *attempt) {
	magic := is.configFor(name)
	cert, err := magic.CacheManagedCertificate(ctx, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err = magic.ObtainCertAsync(ctx, name); err == nil && ctx.Err() == nil {
			_, err = magic.CacheManagedCertificate(ctx, name)
		}
	case err == nil && cert.Leaf != nil && is.dueForRenewal(cert.Leaf):
		// Stored, but expired or due for renewal (its renewals kept
		// failing, or have not run yet): a new request (the customer's
		// Re-verify of CERT_EXPIRED or CERT_EXPIRING) renews it now,
		// whatever certmagic's own schedule of retries.
		is.mu.Lock()
		a.renewing = true
		is.mu.Unlock()
		if err = magic.RenewCertAsync(ctx, name, true); err == nil && ctx.Err() == nil {
			if _, err = magic.CacheManagedCertificate(ctx, name); err == nil {
				is.cache.Remove([]string{cert.Hash()}) // the new one answers now
			}
		}
	}
	if ctx.Err() != nil {
		return // replaced by a newer attempt, removed, or closed
	}
	is.mu.Lock()
	a.done = true
	if err != nil {
		st := customdomain.CertStatus{State: customdomain.CertFailed, Reason: reason(err)}
		var blocked *caaBlocked
		if errors.As(err, &blocked) {
			st.Findings = []customdomain.Finding{blocked.finding}
		}
		a.failed = &st
	}
	is.mu.Unlock()
	is.changed(name)
}

// dueForRenewal reports whether leaf is within its renewal window on the
// issuer's clock: the last RenewalWindowRatio of its lifetime (certmagic's
// default, a third, when unset), expired included.
func (is *Issuer) dueForRenewal(leaf *x509.Certificate) bool {
	ratio := is.cfg.RenewalWindowRatio
	if ratio <= 0 {
		ratio = certmagic.DefaultRenewalWindowRatio
	}
	lifetime := leaf.NotAfter.Sub(leaf.NotBefore)
	return leaf.NotAfter.Sub(is.now()) <= time.Duration(float64(lifetime)*ratio)
}

// reason turns an obtain error into the CA's words when it has them.
func reason(err error) string {
	var p acme.Problem
	if errors.As(err, &p) && p.Detail != "" {
		return p.Detail
	}
	var blocked *caaBlocked
	if errors.As(err, &blocked) {
		return blocked.Error()
	}
	return err.Error()
}

func (is *Issuer) changed(name string) {
	if is.cfg.OnChange != nil {
		is.cfg.OnChange(name)
	}
}

// onEvent hooks certmagic: the CAA check before every order (first and
// renewal), and status notes for failures and successes.
func (is *Issuer) onEvent(ctx context.Context, event string, data map[string]any) error {
	name, _ := data["identifier"].(string)
	name = normalize(name)
	switch event {
	case "cert_obtaining":
		asked := is.requested(ctx, name, data)
		if renewal, _ := data["renewal"].(bool); renewal && is.cfg.Renewable != nil && is.cfg.Allowed != nil &&
			is.cfg.Allowed(ctx, name) && !is.cfg.Renewable(ctx, name) {
			// Still served (its record moved away, within the grace
			// period), but not kept alive: keep serving what is cached.
			is.log.Info("not renewing the certificate of a domain whose record points elsewhere", "domain", name)
			return certmagic.ErrNoRetry{Err: fmt.Errorf("%s does not point at the platform now; not renewed", name)}
		}
		if is.cfg.Covered != nil && !asked && is.cfg.Covered(ctx, name) {
			// A handshake for a name below a wildcard whose certificate
			// this process does not hold yet: the wildcard's answers it
			// once obtained, and an order per made-up label would spend
			// the CA's rate limits.
			return certmagic.ErrNoRetry{Err: fmt.Errorf("%s is served with its wildcard's certificate", name)}
		}
		if !asked && is.cfg.Allowed != nil && !is.cfg.Allowed(ctx, name) {
			// A removed name: another process removed it from the shared
			// storage, and certmagic, finding the certificate it still
			// caches due for renewal and the storage empty, would obtain
			// it back; or a retry of an order the name was removed
			// during. Stop serving it here too and never retry.
			is.cache.RemoveManaged([]certmagic.SubjectIssuer{{Subject: name}})
			is.log.Info("not obtaining a certificate for a name that is no longer a custom domain", "domain", name)
			return certmagic.ErrNoRetry{Err: fmt.Errorf("%s is no longer a verified custom domain", name)}
		}
		ids, err := is.identities(ctx)
		if err != nil {
			return err // retried: the CA's directory was unreachable
		}
		if len(ids) == 0 {
			is.log.Warn("CAA check skipped: the CA's CAA identities are unknown, so CAA is left to the CA", "domain", name)
			is.noteUndecided(ctx, name)
		}
		err = checkCAA(ctx, is.cfg.Resolver, name, ids)
		var blocked *caaBlocked
		if errors.As(err, &blocked) {
			is.note(name, func(a *attempt) { a.blocked = &blocked.finding })
			// No retry: the records will not change by themselves soon,
			// and the customer's Re-verify starts a new attempt.
			return certmagic.ErrNoRetry{Err: err}
		}
		if err == nil {
			is.note(name, func(a *attempt) { a.blocked = nil })
		}
		return err
	case "cert_failed":
		if err, ok := data["error"].(error); ok {
			is.note(name, func(a *attempt) { a.lastErr = reason(err) })
		}
	case "cert_obtained":
		is.note(name, func(a *attempt) { a.lastErr, a.blocked = "", nil })
		if renewal, _ := data["renewal"].(bool); renewal {
			// certmagic emits this once the renewed certificate is stored,
			// and swaps it into the cache only after: tell the engine when
			// the new one is being served.
			old, _ := is.cached(name)
			go is.changedAfterSwap(name, old)
		}
	}
	return nil
}

// requested reports whether an order is the first try of one a Request
// still running in this process asked for explicitly. The engine requests
// before it stores the new state, so Config.Allowed may not know the name
// yet: such an order is not checked against it. Renewals, orders by
// certmagic for certificates it caches but nobody requested now, and
// retries of a Request's order (a minute and more later, when the name may
// have been removed here or by another process) are.
func (is *Issuer) requested(ctx context.Context, name string, data map[string]any) bool {
	if renewal, _ := data["renewal"].(bool); renewal {
		return false
	}
	if tries, ok := ctx.Value(certmagic.AttemptsCtxKey).(*int); ok && *tries > 0 {
		return false
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	a := is.attempts[name]
	return a != nil && !a.done
}

func (is *Issuer) changedAfterSwap(name string, old certmagic.Certificate) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for range 500 { // 10 s at most; then report anyway
		if cur, ok := is.cached(name); !ok || cur.Hash() != old.Hash() {
			break
		}
		select {
		case <-is.ctx.Done():
			return
		case <-t.C:
		}
	}
	is.changed(name)
}

func (is *Issuer) note(name string, f func(*attempt)) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if a := is.attempts[name]; a != nil {
		f(a)
	}
}

// identities returns the CA's CAA identities, from the configuration or,
// once, from the ACME directory's meta.caaIdentities.
func (is *Issuer) identities(ctx context.Context) ([]string, error) {
	is.mu.Lock()
	ids := is.ids
	is.mu.Unlock()
	if ids != nil {
		return ids, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, is.cfg.CA, nil)
	if err != nil {
		return nil, err
	}
	resp, err := is.httpc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the ACME directory: %w", err)
	}
	defer resp.Body.Close()
	var dir struct {
		Meta struct {
			CAAIdentities []string `json:"caaIdentities"`
		} `json:"meta"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the ACME directory: %s", resp.Status)
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&dir); err != nil {
		return nil, fmt.Errorf("reading the ACME directory: %w", err)
	}
	ids = append([]string{}, dir.Meta.CAAIdentities...)
	if len(ids) == 0 {
		// Without identities no issue record can be matched; the CA
		// must then enforce CAA itself, as public CAs do.
		is.log.Warn("the ACME directory names no CAA identities; CAA is left to the CA")
	}
	is.mu.Lock()
	is.ids = ids
	is.mu.Unlock()
	return ids, nil
}

// noteUndecided records, for a CA whose CAA identities are unknown,
// which CAs name's CAA records allow, so the diagnosis can show them.
func (is *Issuer) noteUndecided(ctx context.Context, name string) {
	if is.cfg.Resolver == nil {
		return
	}
	v, err := CheckCAA(ctx, is.cfg.Resolver, name, nil)
	if err != nil {
		return // could not read them: certmagic's order goes on, the CA checks
	}
	f, ok := undecidedCAA(v)
	is.note(name, func(a *attempt) {
		a.undecided = nil
		if ok {
			a.undecided = &f
		}
	})
}

// Status implements customdomain.CertIssuer. A certificate another process
// obtained into the shared storage is loaded and served from then on.
func (is *Issuer) Status(ctx context.Context, name string) (customdomain.CertStatus, error) {
	name = normalize(name)
	cert, ok := is.cached(name)
	is.mu.Lock()
	a := is.attempts[name]
	var snap attempt
	if a != nil {
		snap = *a
	}
	is.mu.Unlock()
	if !ok {
		// Even after this process's attempt failed: another process
		// sharing the storage may have obtained the certificate since
		// (the customer fixed CAA, and their Re-verify reached it). Its
		// certificate is what is served now, and the failure, with its
		// findings, is history.
		if c, err := is.configFor(name).CacheManagedCertificate(ctx, name); err == nil {
			cert, ok = c, true
			if snap.failed != nil {
				is.mu.Lock()
				if is.attempts[name] == a {
					a.cancel()
					delete(is.attempts, name)
				}
				is.mu.Unlock()
				snap = attempt{}
			}
		}
	}
	withUndecided := func(st customdomain.CertStatus) customdomain.CertStatus {
		if snap.undecided != nil {
			st.Findings = append(slices.Clone(st.Findings), *snap.undecided)
		}
		return st
	}
	if ok && cert.Leaf != nil {
		st := customdomain.CertStatus{State: customdomain.CertIssued, Issuer: cert.Leaf.Issuer.CommonName, NotAfter: cert.Leaf.NotAfter, NotBefore: cert.Leaf.NotBefore}
		if !cert.Leaf.NotAfter.After(is.now()) {
			// Renewals kept failing (certmagic goes on retrying): what is
			// served now is refused by browsers.
			st.State, st.Reason = customdomain.CertFailed, "the certificate expired and has not been renewed"
			if snap.lastErr != "" {
				st.Reason += ": " + snap.lastErr
			}
			st.Findings = []customdomain.Finding{customdomain.CertExpiredFinding(name, cert.Leaf.NotAfter, snap.lastErr)}
		}
		if snap.blocked != nil {
			st.Findings = append(st.Findings, *snap.blocked)
		}
		return withUndecided(st), nil
	}
	switch {
	case a == nil:
		return customdomain.CertStatus{State: customdomain.CertNone}, nil
	case snap.failed != nil:
		return withUndecided(*snap.failed), nil
	}
	st := customdomain.CertStatus{State: customdomain.CertIssuing, Reason: snap.lastErr}
	if is.now().Sub(snap.started) >= is.cfg.PendingTimeout {
		st.Findings = []customdomain.Finding{customdomain.CertPendingTooLongFinding(name, is.cfg.PendingTimeout, snap.lastErr)}
	}
	return withUndecided(st), nil
}

func (is *Issuer) cached(name string) (certmagic.Certificate, bool) {
	for _, c := range is.cache.AllMatchingCertificates(name) {
		if !c.Empty() {
			return c, true
		}
	}
	return certmagic.Certificate{}, false
}

// Remove implements customdomain.CertIssuer: it stops any attempt, evicts the
// certificate from the cache so the next handshake fails, and deletes it
// from storage.
func (is *Issuer) Remove(ctx context.Context, name string) error {
	name = normalize(name)
	is.forget(name)
	return is.storage.Delete(ctx, certmagic.StorageKeys.CertsSitePrefix(is.acme.IssuerKey(), name))
}

// forget stops name's attempt and evicts its certificate from the cache.
func (is *Issuer) forget(name string) {
	is.mu.Lock()
	if a := is.attempts[name]; a != nil {
		a.cancel()
		delete(is.attempts, name)
	}
	delete(is.delegated, name)
	is.mu.Unlock()
	is.cache.RemoveManaged([]certmagic.SubjectIssuer{{Subject: name}})
}

// storing is asked by Storage right before it writes a file of name's
// certificate, once certmagic obtained or renewed it. An order takes
// seconds, during which the name may have been removed, here or by
// another process sharing the storage, whose removal deleted the files
// already: the certificate of a name Config.Held (else Config.Allowed)
// no longer holds is not written back, and this process forgets the name
// as Remove does, which also ends a Request's retries. A first
// certificate a Request of this process is still obtaining is stored
// whatever Allowed says, as the engine may not admit the name yet (see
// requested). A removal that Held or Allowed learns only after the check
// (another process's reaches this one within the engine's refresh, within
// milliseconds with its feed) does not stop the write, and those files
// stay in storage.
func (is *Issuer) storing(ctx context.Context, name string) error {
	if is.holds(ctx, name) {
		return nil
	}
	is.log.Info("not storing the certificate obtained for a name that is no longer a custom domain", "domain", name)
	is.forget(name)
	return fmt.Errorf("%s is no longer a custom domain; its certificate is not stored", name)
}

// holds reports whether name is still a custom domain whose certificate
// may be stored: see storing.
func (is *Issuer) holds(ctx context.Context, name string) bool {
	switch {
	case is.cfg.Held != nil:
		return is.cfg.Held(ctx, name)
	case is.cfg.Allowed != nil:
		return is.cfg.Allowed(ctx, name) || is.obtainingFirst(name)
	}
	return true
}

// obtainingFirst reports whether a Request of this process is obtaining
// name's first certificate.
func (is *Issuer) obtainingFirst(name string) bool {
	is.mu.Lock()
	defer is.mu.Unlock()
	a := is.attempts[name]
	return a != nil && !a.done && !a.renewing
}

// HTTPHandler answers the CA's HTTP-01 challenge requests
// (/.well-known/acme-challenge/...) for any process sharing the storage,
// and passes every other request to next, as it does a challenge request
// for a name Config.Held (else Config.Allowed) denies, unless this process
// started its validation. Mount it at the root of the plain-HTTP listener.
func (is *Issuer) HTTPHandler(next http.Handler) http.Handler {
	solve := is.acme.HTTPChallengeHandler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if certmagic.LooksLikeHTTPChallenge(r) && !is.validating(r.Context(), r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		solve.ServeHTTP(w, r)
	})
}

// validating reports whether a challenge request for host (a Host header
// or server name) may be one of a validation under way, which certmagic
// looks up in Storage when this process did not start it: only for a
// name Config.Held (else Config.Allowed) admits. Without either, every
// name may be.
func (is *Issuer) validating(ctx context.Context, host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	name := normalize(host)
	if _, ok := certmagic.GetACMEChallenge(name); ok {
		return true // started here: answered from memory
	}
	switch {
	case is.cfg.Held != nil:
		return is.cfg.Held(ctx, name)
	case is.cfg.Allowed != nil:
		return is.cfg.Allowed(ctx, name)
	}
	return true
}

// GetCertificate serves a custom domain's certificate during a TLS
// handshake, and answers TLS-ALPN-01 challenges (for names HTTPHandler
// would answer HTTP-01 for). With Config.Allowed set, a
// name it denies is evicted and refused, and an allowed name without a
// certificate gets one on demand.
func (is *Issuer) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if isALPNChallenge(hello) && !is.validating(hello.Context(), hello.ServerName) {
		return nil, fmt.Errorf("no validation under way for %q", hello.ServerName)
	}
	if is.cfg.Allowed != nil && !isALPNChallenge(hello) {
		name := normalize(hello.ServerName)
		if !is.cfg.Allowed(hello.Context(), name) {
			is.cache.RemoveManaged([]certmagic.SubjectIssuer{{Subject: name}})
			return nil, fmt.Errorf("no certificate for %q", hello.ServerName)
		}
		if is.cfg.Covered != nil && is.cfg.Covered(hello.Context(), name) {
			ctx := hello.Context()
			if ctx == nil { // a ClientHelloInfo made outside crypto/tls
				ctx = context.Background()
			}
			if err := is.loadWildcard(ctx, name); err != nil {
				return nil, err
			}
		}
	}
	return is.onDemand.GetCertificate(hello)
}

// wildcardLookEvery is how often, at most, handshakes for names below a
// wildcard look for its certificate in storage while it is not cached.
const wildcardLookEvery = 5 * time.Second

// loadWildcard caches the certificate of the wildcard above name, which
// answers name's handshakes, unless it is cached already. Anyone can send
// a new made-up name at each handshake, so while the wildcard has no
// certificate yet (it is issuing), storage is asked at most once per
// wildcardLookEvery, whatever the names; certmagic would look up each name
// and go on towards an order for it.
func (is *Issuer) loadWildcard(ctx context.Context, name string) error {
	if _, ok := is.cached(name); ok {
		return nil
	}
	_, rest, _ := strings.Cut(name, ".")
	w := "*." + rest
	is.mu.Lock()
	last, looked := is.wildcardLooks[w]
	due := !looked || is.now().Sub(last) >= wildcardLookEvery
	if due {
		is.wildcardLooks[w] = is.now()
	}
	is.mu.Unlock()
	if !due {
		return fmt.Errorf("no certificate for %q: %s has none yet", name, w)
	}
	if _, err := is.configFor(w).CacheManagedCertificate(ctx, w); err != nil {
		return fmt.Errorf("no certificate for %q: %s has none yet: %w", name, w, err)
	}
	is.mu.Lock()
	delete(is.wildcardLooks, w)
	is.mu.Unlock()
	return nil
}

func isALPNChallenge(hello *tls.ClientHelloInfo) bool {
	return len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == acmeTLS1
}

const acmeTLS1 = "acme-tls/1"

// TLSConfig returns a tls.Config for the TLS listener: certificates from
// GetCertificate, HTTP/2 and HTTP/1.1, and the TLS-ALPN-01 protocol.
func (is *Issuer) TLSConfig() *tls.Config {
	return &tls.Config{
		GetCertificate: is.GetCertificate,
		NextProtos:     []string{"h2", "http/1.1", acmeTLS1},
		MinVersion:     tls.VersionTLS12,
	}
}
