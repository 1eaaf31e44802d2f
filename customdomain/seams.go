package customdomain

import (
	"context"
	"time"
)

// Record is one DNS record: what the customer must create, or what DNS
// shows now. Name is relative to the registered domain ("@" for the apex,
// "shop" for shop.example.com) in instructions, and fully qualified (no
// trailing dot) in lookups.
type Record struct {
	Type  string `json:"type"` // "CNAME", "ALIAS", "A", "AAAA", "CAA", "TXT"
	Name  string `json:"name"`
	Value string `json:"value"`
	TTL   int    `json:"ttl,omitempty"`
	// Optional marks an instruction needed only in some cases, which the
	// domain's note explains (the ownership TXT record when the name is
	// not proxied).
	Optional bool `json:"optional,omitempty"`
}

// Finding is one diagnosed problem, in words a customer can act on.
type Finding struct {
	Code    string   `json:"code"`    // e.g. "CNAME_MISMATCH", "CAA_BLOCKS_CA"
	Message string   `json:"message"` // what is wrong
	Fix     string   `json:"fix"`     // what to do about it
	Records []Record `json:"records,omitempty"`
}

// Resolver reads DNS. The default adapter asks configured nameservers
// directly. Implementations must honour context cancellation and be safe
// for concurrent use.
type Resolver interface {
	// Lookup returns the records of type rrtype ("CNAME", "A", "AAAA",
	// "CAA", "TXT", "MX") owned by exactly name, without following CNAMEs. A name
	// with no such records, or that does not exist, gives an empty slice
	// and no error. A timeout, SERVFAIL or refusal gives an error wrapping
	// ErrLookupFailed: "could not check", never "not configured".
	Lookup(ctx context.Context, name, rrtype string) ([]Record, error)
}

// CertState is the state of a name's certificate.
type CertState string

// Certificate states.
const (
	CertNone    CertState = "none"    // no certificate requested
	CertIssuing CertState = "issuing" // being obtained (retrying with backoff)
	CertIssued  CertState = "issued"  // obtained and being served
	CertFailed  CertState = "failed"  // refused, e.g. by CAA; Reason says why

	// CertExpiring is never a certificate layer's answer: Entry.Cert
	// records it once an issued certificate expires within its warning
	// time (CertExpiringFinding) and EventCertFailed was told of it.
	CertExpiring CertState = "expiring"
)

// CertStatus describes a name's certificate.
type CertStatus struct {
	State    CertState `json:"status"`
	Reason   string    `json:"reason,omitempty"`
	Findings []Finding `json:"findings,omitempty"`
	Issuer   string    `json:"issuer,omitempty"`
	NotAfter time.Time `json:"notAfter,omitzero"`
	// NotBefore is when the certificate's validity began, when the
	// certificate layer knows it: with NotAfter, its lifetime, which
	// bounds how early an expiry is warned of (CertExpiringFinding).
	// Not shown: the dashboard shows NotAfter.
	NotBefore time.Time `json:"-"`
}

// CertIssuer obtains, reports and removes certificates for verified names.
// The engine calls Request when a name verifies (and on Re-verify), Status
// when it advances a domain and, for views, once per domain after each
// Refresh (and after a change), and Remove before Engine.Remove returns
// (or a release is stored), and again from any engine's RunDue until a
// call returns nil (see Entry.CertRemovalPending). A change the issuer
// makes on its own (obtained, failed, renewed) reaches views at once when
// it calls Engine.CertificateChanged, else at the next Refresh.
// Implementations must be safe for concurrent use, and every engine
// sharing a store should have one over the same certificate storage.
type CertIssuer interface {
	// Request starts obtaining a certificate for name and returns at once;
	// obtaining goes on in the background with retries. A certificate it
	// holds that has expired or expires soon is renewed now: the engine
	// requests on Re-verify of CERT_EXPIRED and CERT_EXPIRING.
	Request(ctx context.Context, name string) error
	// Status reports the certificate of name.
	Status(ctx context.Context, name string) (CertStatus, error)
	// Remove stops serving name's certificate at once and deletes it from
	// storage before returning. It returns nil when there is no
	// certificate for name: a removal that succeeded but was not recorded
	// is tried again.
	Remove(ctx context.Context, name string) error
}

// DNSConfigurator writes the records a domain needs at the customer's DNS
// provider, when the customer connected one. It reports conflicting records
// instead of overwriting them.
type DNSConfigurator interface {
	// Configure creates the records that are missing, reads them back to
	// confirm they took effect, and returns those it created, as the zone
	// holds them (value and TTL): the engine keeps them in the domain's
	// Entry for Unconfigure. Records already there are left alone and not
	// returned; existing records that conflict come back as findings,
	// unchanged. With an error it still returns what it created, so that
	// no record it wrote is forgotten.
	Configure(ctx context.Context, zone string, records []Record) (created []Record, findings []Finding, err error)
	// Unconfigure deletes exactly the given records, as Configure
	// returned them: same name, type, value and TTL. A record that is gone,
	// or that differs now (the customer changed it, so it is theirs), is
	// left alone, as is every other record.
	Unconfigure(ctx context.Context, zone string, records []Record) error
}
