package customdomain

import (
	"context"
	"sync"
)

// certCache holds the certificate layer's last answer per name, so that
// views (Get, Find, List) do not ask it for every domain they show. A
// name is read at its first view after each Refresh (Run refreshes every
// RefreshEvery, and a change from another process through the feed
// refreshes at once), and again after this engine changes its
// certificate: a request or removal it ran, or a change the certificate
// layer reported through CertificateChanged.
type certCache struct {
	mu    sync.Mutex
	seq   uint64              // numbers reads and forgets, in order
	floor uint64              // reads numbered at or below it are not kept
	m     map[string]certRead // by ASCII name
}

type certRead struct {
	st  CertStatus
	seq uint64
	ok  bool // false: forgotten, read again at the next view
}

// certOf is the certificate status a view of en shows.
func (e *Engine) certOf(ctx context.Context, en Entry) CertStatus {
	if !e.showsCert(en) {
		return CertStatus{State: CertNone}
	}
	e.certs.mu.Lock()
	r := e.certs.m[en.Name]
	e.certs.mu.Unlock()
	if r.ok {
		return r.st
	}
	st, err := e.readCert(ctx, en.Name)
	if err != nil {
		e.cfg.Logger.Warn("certificate status unknown", "domain", en.Name, "err", err)
		return CertStatus{State: CertNone}
	}
	return st
}

// showsCert reports whether a view of en shows what the certificate layer
// says of its name, rather than no certificate.
func (e *Engine) showsCert(en Entry) bool {
	// Before verification there is a certificate only when one was
	// obtained through the DCV delegation (en.Cert records it).
	before := en.VerifiedAt.IsZero() || en.Status == StatusPending
	return e.cfg.CertIssuer != nil && !en.Status.FreesName() && !(before && (en.Cert == "" || en.Cert == CertNone))
}

// readCert asks the certificate layer for name's status and keeps the
// answer, unless a newer read or a forget came first.
func (e *Engine) readCert(ctx context.Context, name string) (CertStatus, error) {
	e.certs.mu.Lock()
	e.certs.seq++
	seq := e.certs.seq
	e.certs.mu.Unlock()
	st, err := e.cfg.CertIssuer.Status(ctx, name)
	if err != nil {
		return st, err
	}
	e.certs.mu.Lock()
	defer e.certs.mu.Unlock()
	if cur := e.certs.m[name]; seq > e.certs.floor && seq > cur.seq {
		if e.certs.m == nil {
			e.certs.m = map[string]certRead{}
		}
		e.certs.m[name] = certRead{st: st, seq: seq, ok: true}
	}
	return st, nil
}

// forgetCert makes the next view of name ask the certificate layer; a
// read already under way is not kept.
func (e *Engine) forgetCert(name string) {
	e.certs.mu.Lock()
	defer e.certs.mu.Unlock()
	e.certs.seq++
	if e.certs.m == nil {
		e.certs.m = map[string]certRead{}
	}
	e.certs.m[name] = certRead{seq: e.certs.seq}
}

// forgetCerts forgets every name, at a Refresh.
func (e *Engine) forgetCerts() {
	e.certs.mu.Lock()
	defer e.certs.mu.Unlock()
	e.certs.seq++
	e.certs.floor = e.certs.seq
	e.certs.m = nil
}
