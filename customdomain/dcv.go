package customdomain

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// dcvLabel is the label below a domain's base name where the DCV
// delegation CNAME goes: ACME's DNS-01 record name, so a CA looking for
// _acme-challenge.shop.example.com follows the CNAME into the platform's
// DCV zone, where the platform writes the TXT record itself.
const dcvLabel = "_acme-challenge"

// dcvTarget is the delegation CNAME's value for an entry: a label derived
// from its token (one per project and name) in the DCV
// zone, or "" when delegation is off or the entry has no token.
func (e *Engine) dcvTarget(en Entry) string {
	token := cmp.Or(en.Token, en.OwnershipToken)
	if e.dcvZone == "" || token == "" {
		return ""
	}
	return dcvTargetOf(token, e.dcvZone)
}

// dcvTargetOf is the name the DCV delegation CNAME of the entry with
// token points at, in zone: both the engine's instructions and a
// certificate layer checking a delegation compute it this way.
func dcvTargetOf(token, zone string) string {
	sum := sha256.Sum256([]byte("dcv:" + token))
	return hex.EncodeToString(sum[:16]) + "." + dnsName(zone)
}

// dcvName is the fully qualified owner of n's delegation CNAME: a
// wildcard shares its base name's (ACME validates *.shop.example.com at
// _acme-challenge.shop.example.com).
func dcvName(n Name) string { return dcvLabel + "." + n.base() }

// dcvRecord is the delegation CNAME as an instruction: required for a
// wildcard (whose certificate can only be obtained by DNS-01), optional
// otherwise (it lets the certificate be obtained before traffic moves).
func dcvRecord(n Name, target string) Record {
	label := dcvLabel
	if base := strings.TrimPrefix(strings.TrimPrefix(n.Label, "*"), "."); n.Kind != KindApex && base != "" && base != "@" {
		label += "." + base
	}
	return Record{Type: "CNAME", Name: label, Value: target, TTL: DefaultRecordTTL, Optional: n.Kind != KindWildcard}
}

// dcvNote explains the delegation record.
const dcvNote = "The _acme-challenge CNAME delegates certificate validation to the platform: once it exists, " +
	"the certificate is obtained by DNS-01 (click Verify), before the routing record moves traffic here."

// dcvWildcardNote explains it for a wildcard.
const dcvWildcardNote = "A wildcard's certificate can only be obtained by DNS-01: create the _acme-challenge CNAME, " +
	"which delegates validation to the platform, as well as the routing record."

// checkDelegation reports whether n's delegation CNAME points at target.
func (e *Engine) checkDelegation(ctx context.Context, n Name, target string) (bool, error) {
	got, err := e.cfg.Resolver.Lookup(ctx, dcvName(n), "CNAME")
	if err != nil {
		return false, err
	}
	for _, r := range got {
		if dnsName(r.Value) == target {
			return true, nil
		}
	}
	return false, nil
}

// dcvMissing is the finding of a wildcard whose delegation is not (yet)
// in place, when the platform issues certificates.
func dcvMissing(n Name, rec Record) Finding {
	return Finding{
		Code: FindingDCVMissing,
		Message: fmt.Sprintf("%s is a wildcard: its certificate needs the DCV delegation record %s, which is missing or points elsewhere",
			n.Unicode, dcvName(n)),
		Fix: fmt.Sprintf("Create a CNAME record with name %s and value %s (TTL 3600), then click Verify.", rec.Name, rec.Value),
	}
}
