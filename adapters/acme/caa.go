package acme

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/petstorekit/petstore/customdomain"
)

// CAA is one parsed CAA record (RFC 8659 section 4.1).
type CAA struct {
	Flags uint8
	Tag   string // lower-cased: tags match case-insensitively
	Value string // unquoted
}

// Critical reports whether the Issuer Critical flag is set: a CA that does
// not understand the tag must not issue.
func (c CAA) Critical() bool { return c.Flags&128 != 0 }

// ParseCAA parses the presentation form of a CAA record's data, as
// customdomain.Resolver returns it: `0 issue "letsencrypt.org"`. The value may
// be quoted (with \" and \\ escapes) or bare.
func ParseCAA(s string) (CAA, error) {
	s = strings.TrimSpace(s)
	flagsText, rest, ok := strings.Cut(s, " ")
	if !ok {
		return CAA{}, fmt.Errorf("CAA %q: want flags, tag and value", s)
	}
	flags, err := strconv.ParseUint(flagsText, 10, 8)
	if err != nil {
		return CAA{}, fmt.Errorf("CAA %q: flags must be 0 to 255", s)
	}
	rest = strings.TrimLeft(rest, " \t")
	tag, value, _ := strings.Cut(rest, " ")
	if tag == "" || !isAlnum(tag) {
		return CAA{}, fmt.Errorf("CAA %q: tag must be letters and digits", s)
	}
	value = strings.TrimSpace(value)
	if strings.HasPrefix(value, `"`) {
		if len(value) < 2 || !strings.HasSuffix(value, `"`) {
			return CAA{}, fmt.Errorf("CAA %q: unterminated quoted value", s)
		}
		value = unescape(value[1 : len(value)-1])
	}
	return CAA{Flags: uint8(flags), Tag: strings.ToLower(tag), Value: value}, nil
}

func isAlnum(s string) bool {
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// IssuerDomain returns the issuer-domain-name of an issue or issuewild
// value: what comes before ";" (parameters do not matter for matching).
// An empty result means "no CA may issue".
func (c CAA) IssuerDomain() string {
	d, _, _ := strings.Cut(c.Value, ";")
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
}

// knownTags are the property tags this checker understands, so a critical
// one of them does not block (RFC 8659 section 4.1; iodef, and the contact
// and mail tags registered since, do not restrict TLS issuance).
var knownTags = map[string]bool{
	"issue": true, "issuewild": true, "iodef": true,
	"contactemail": true, "contactphone": true, "issuemail": true, "issuevmc": true,
}

// CAAVerdict is the outcome of checking a name's CAA records.
type CAAVerdict struct {
	Allowed bool
	Owner   string                // name that owns the relevant record set; "" when none
	Records []customdomain.Record // the relevant record set, as found
	Reason  string                // why not allowed
	// Unreadable is set when a record blocks because it has an unknown
	// critical property or cannot be parsed: adding an issue record
	// would not help.
	Unreadable bool
	// Unchecked is set when no CA identities were given: no issue record
	// can be matched, so the records are not evaluated and issuance is
	// allowed, leaving CAA to the CA (public CAs check it themselves).
	Unchecked bool
}

// EvaluateCAA decides whether a CA known by identities may issue for name
// given the relevant CAA record set found at owner (RFC 8659 section 4).
// An empty set allows every CA. With no identities nothing can be matched,
// so the set is not evaluated: the verdict is allowed and Unchecked.
func EvaluateCAA(name string, identities []string, owner string, records []customdomain.Record) CAAVerdict {
	v := CAAVerdict{Allowed: true, Owner: owner, Records: records}
	if len(records) == 0 {
		v.Owner = ""
		return v
	}
	if len(identities) == 0 {
		v.Unchecked = true
		return v
	}
	wildcard := strings.HasPrefix(name, "*.")
	var issue, issuewild []CAA
	for _, r := range records {
		c, err := ParseCAA(r.Value)
		if err != nil {
			// A record that cannot be read cannot be honoured: treat it
			// as an unknown critical property, as a CA would.
			return CAAVerdict{Owner: owner, Records: records, Unreadable: true, Reason: fmt.Sprintf("the CAA record %q at %s cannot be read", r.Value, owner)}
		}
		switch {
		case c.Tag == "issue":
			issue = append(issue, c)
		case c.Tag == "issuewild":
			issuewild = append(issuewild, c)
		case c.Critical() && !knownTags[c.Tag]:
			return CAAVerdict{Owner: owner, Records: records, Unreadable: true, Reason: fmt.Sprintf("the CAA record %q at %s has the critical flag on the unknown property %q, which forbids every CA to issue", r.Value, owner, c.Tag)}
		}
	}
	relevant := issue
	if wildcard && len(issuewild) > 0 {
		relevant = issuewild
	}
	if len(relevant) == 0 {
		return v // e.g. only iodef: no restriction on issuance
	}
	for _, c := range relevant {
		d := c.IssuerDomain()
		for _, id := range identities {
			if d != "" && strings.EqualFold(d, strings.TrimSuffix(id, ".")) {
				return v
			}
		}
	}
	var allowed []string
	for _, c := range relevant {
		if d := c.IssuerDomain(); d != "" {
			allowed = append(allowed, d)
		}
	}
	v.Allowed = false
	if len(allowed) == 0 {
		v.Reason = fmt.Sprintf("the CAA records at %s forbid every certificate authority to issue", owner)
	} else {
		v.Reason = fmt.Sprintf("the CAA records at %s allow only %s to issue, not %s", owner, strings.Join(allowed, ", "), strings.Join(identities, " or "))
	}
	return v
}

// maxCNAMEHops bounds CNAME chasing so that a loop cannot hang a check.
const maxCNAMEHops = 8

// relevantCAA finds the relevant CAA record set of name: the CAA records of
// the nearest name, walking up from name towards the root, that has any
// (RFC 8659 section 3). A name that is a CNAME gets the CAA records of its
// target, as a resolver following the alias would return them.
func relevantCAA(ctx context.Context, r customdomain.Resolver, name string) (owner string, records []customdomain.Record, err error) {
	name = strings.TrimSuffix(strings.TrimPrefix(strings.ToLower(name), "*."), ".")
	for labels := name; labels != ""; {
		recs, target, err := caaAt(ctx, r, labels)
		if err != nil {
			return "", nil, err
		}
		if len(recs) > 0 {
			return target, recs, nil
		}
		_, parent, ok := strings.Cut(labels, ".")
		if !ok || !strings.Contains(parent, ".") {
			break // never ask about a top-level domain's own records
		}
		labels = parent
	}
	return "", nil, nil
}

// caaAt returns the CAA records at name, following CNAMEs; target is the
// name that owns them.
func caaAt(ctx context.Context, r customdomain.Resolver, name string) ([]customdomain.Record, string, error) {
	for range maxCNAMEHops {
		recs, err := r.Lookup(ctx, name, "CAA")
		if err != nil {
			return nil, "", err
		}
		if len(recs) > 0 {
			return recs, name, nil
		}
		cnames, err := r.Lookup(ctx, name, "CNAME")
		if err != nil {
			return nil, "", err
		}
		if len(cnames) == 0 {
			return nil, name, nil
		}
		name = strings.TrimSuffix(strings.ToLower(cnames[0].Value), ".")
	}
	return nil, name, nil
}

// caaBlocked is the error that stops an attempt whose CAA records forbid
// the CA; it carries the finding to show.
type caaBlocked struct{ finding customdomain.Finding }

func (e *caaBlocked) Error() string { return e.finding.Message }

// CheckCAA finds the relevant CAA record set of name through r and
// evaluates it for a CA known by identities. An error (wrapping
// customdomain.ErrLookupFailed) means the records could not be read: no verdict.
func CheckCAA(ctx context.Context, r customdomain.Resolver, name string, identities []string) (CAAVerdict, error) {
	owner, records, err := relevantCAA(ctx, r, name)
	if err != nil {
		if !errors.Is(err, customdomain.ErrLookupFailed) {
			err = fmt.Errorf("%w: %v", customdomain.ErrLookupFailed, err)
		}
		return CAAVerdict{}, fmt.Errorf("checking CAA records of %s: %w", name, err)
	}
	return EvaluateCAA(name, identities, owner, records), nil
}

// checkCAA returns a *caaBlocked error when CAA forbids the CA to issue for
// name, an error wrapping customdomain.ErrLookupFailed when it cannot tell, and
// nil when issuance is allowed.
func checkCAA(ctx context.Context, r customdomain.Resolver, name string, identities []string) error {
	if r == nil {
		return nil
	}
	v, err := CheckCAA(ctx, r, name, identities)
	if err != nil {
		return err
	}
	if v.Allowed {
		return nil
	}
	owner := v.Owner
	tag := "issue"
	if strings.HasPrefix(name, "*.") {
		tag = "issuewild"
	}
	fix := "Remove that record, or clear its critical flag. Then use Re-verify."
	if !v.Unreadable && len(identities) > 0 {
		fix = fmt.Sprintf("Add the CAA record %s CAA 0 %s %q (keep the others if you still use those CAs), or remove the CAA records at %s. Then use Re-verify.", owner, tag, identities[0], owner)
	}
	return &caaBlocked{finding: customdomain.Finding{
		Code:    customdomain.FindingCAABlocksCA,
		Message: "No certificate can be issued: " + v.Reason + ".",
		Fix:     fix,
		Records: v.Records,
	}}
}

// undecidedCAA is the finding of a CAA record set that names CAs when the
// CA's own CAA identities are unknown (its ACME directory names none and
// none were configured): the records are shown with the CAs they allow,
// and the check is said to be undecided. It does not stop issuance.
func undecidedCAA(v CAAVerdict) (customdomain.Finding, bool) {
	if !v.Unchecked {
		return customdomain.Finding{}, false
	}
	var allowed []string
	for _, r := range v.Records {
		if c, err := ParseCAA(r.Value); err == nil && (c.Tag == "issue" || c.Tag == "issuewild") {
			if d := c.IssuerDomain(); d != "" && !slices.Contains(allowed, d) {
				allowed = append(allowed, d)
			}
		}
	}
	if len(allowed) == 0 {
		return customdomain.Finding{}, false // no issue records: nothing restricts issuance
	}
	return customdomain.Finding{
		Code: customdomain.FindingCAAUndecided,
		Message: fmt.Sprintf("The CAA records at %s allow only %s to issue certificates. Whether this platform's certificate authority is one of them could not be decided: it does not publish the names CAA records use for it.",
			v.Owner, strings.Join(allowed, ", ")),
		Fix:     "If certificates do not arrive, add a CAA issue record for the platform's certificate authority beside these, or ask the platform which name to use (examples/server: -acme-caa-identities).",
		Records: v.Records,
	}, true
}
