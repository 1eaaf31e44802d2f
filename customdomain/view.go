package customdomain

import (
	"context"
	"time"
)

// Finding codes the engine raises. The certificate layer adds its own
// (CAA_BLOCKS_CA, CERT_PENDING_TOO_LONG, CERT_EXPIRED) through CertStatus.Findings or a
// Diagnoser; the engine raises CERT_PENDING_TOO_LONG itself, from the
// stored VerifiedAt, when the certificate layer did not.
const (
	FindingConflictingRecord  = "CONFLICTING_RECORD"    // an A/AAAA record blocks the CNAME
	FindingCNAMEMismatch      = "CNAME_MISMATCH"        // the CNAME points elsewhere
	FindingNoRecords          = "NO_RECORDS"            // nothing at the name yet
	FindingApexForeignIPs     = "APEX_FOREIGN_IPS"      // the apex resolves to addresses that are not ours
	FindingLookupFailed       = "LOOKUP_FAILED"         // DNS could not be asked; will retry
	FindingCAABlocksCA        = "CAA_BLOCKS_CA"         // raised by the certificate layer
	FindingCertPendingTooLong = "CERT_PENDING_TOO_LONG" // no certificate CertPendingLimit after verification
	FindingOwnershipUnproven  = "OWNERSHIP_UNPROVEN"    // the ownership TXT record is missing or wrong
	FindingCAAUndecided       = "CAA_UNDECIDED"         // CAA records name CAs, but the CA's own names are unknown
	FindingProxied            = "PROXIED"               // the name resolves to a known CDN's addresses: its CNAME is hidden
	FindingDCVMissing         = "DCV_MISSING"           // a wildcard without its _acme-challenge delegation
	FindingCertExpired        = "CERT_EXPIRED"          // raised by the certificate layer: the certificate expired unrenewed
	FindingCertExpiring       = "CERT_EXPIRING"         // the certificate expires soon and renewing it has not succeeded
	FindingPlanUnknown        = "PLAN_UNKNOWN"          // the project's plan cannot be read and never was: the domain waits (see Engine.held)
)

// Action is what the customer should do next.
type Action string

// Next actions.
const (
	ActionNone     Action = "none"     // nothing: the domain is live (or removed)
	ActionWait     Action = "wait"     // DNS is propagating or could not be checked, or the plan cannot be read; the engine retries
	ActionFixDNS   Action = "fix_dns"  // change DNS records as the findings say
	ActionReverify Action = "reverify" // DNS looks right now: click Re-verify
)

// Diagnosis is the outcome of a DNS check, in the shape a dashboard shows.
type Diagnosis struct {
	OK         bool      `json:"ok"`
	NextAction Action    `json:"nextAction"`
	Observed   Observed  `json:"observed"`
	Findings   []Finding `json:"findings"` // never nil
	CheckedAt  time.Time `json:"checkedAt,omitzero"`
}

// Domain is everything a dashboard shows about one domain. Its JSON
// encoding is the dashboard API's Domain object.
type Domain struct {
	Name         string       `json:"name"`        // ASCII (punycode) form
	UnicodeName  string       `json:"unicodeName"` // the form people read
	Kind         Kind         `json:"kind"`
	ProjectID    string       `json:"-"`
	Status       Status       `json:"status"`
	ResumesAs    Status       `json:"resumesAs,omitempty"` // suspended: the status it returns to on upgrade
	Reason       string       `json:"reason,omitempty"`
	Records      []Record     `json:"records"`                // what to create at the DNS provider
	Alternatives []Record     `json:"alternatives,omitempty"` // apex: A/AAAA records instead of ALIAS
	Note         string       `json:"note,omitempty"`
	Diagnosis    Diagnosis    `json:"diagnosis"`
	Certificate  CertStatus   `json:"certificate"`
	Attempts     int          `json:"attempts"`
	History      []Transition `json:"history"`
	CreatedAt    time.Time    `json:"createdAt"`
	VerifiedAt   time.Time    `json:"verifiedAt,omitzero"` // start of the certificate's 30-minute budget
	DriftedAt    time.Time    `json:"driftedAt,omitzero"`  // misconfigured: when the record was first seen elsewhere

	// DNSManaged says the platform can write Records for the customer
	// (Engine.ConfigureDNS): the project has a DNS configurator and, if it
	// says which names it manages (DNSScope), this name is one of them.
	DNSManaged bool `json:"dnsManaged,omitempty"`
}

// DNSScope is implemented by a DNSConfigurator that writes only some
// names, such as the zones a platform's own DNS serves: Manages reports
// whether name (ASCII) is one of them.
type DNSScope interface {
	Manages(name string) bool
}

// Diagnoser adds findings to a domain's diagnosis, for example a
// certificate layer raising CERT_PENDING_TOO_LONG 30 minutes after
// d.VerifiedAt. A CertIssuer that also implements Diagnoser is consulted
// without being listed in EngineConfig.Diagnosers.
type Diagnoser interface {
	Diagnose(ctx context.Context, d Domain) []Finding
}

// RouteKind is the kind of a routing answer.
type RouteKind int

// Routing answers.
const (
	RouteNone     RouteKind = iota // not ours: answer 404
	RouteServe                     // serve ProjectID's content
	RouteRedirect                  // redirect to RedirectTo with Status
)

// RouteAnswer tells the edge what to do with a request's Host.
type RouteAnswer struct {
	Kind       RouteKind
	Name       string // the normalised host
	ProjectID  string // set for RouteServe and RouteRedirect
	RedirectTo string // RouteRedirect: the host to send the client to
	Status     int    // RouteRedirect: 301, 302, 307 or 308
}
