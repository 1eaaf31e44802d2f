package customdomain

import (
	"net/netip"
	"strings"
	"unicode/utf8"

	"github.com/petstorekit/petstore"
	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// Kind says whether a name is the registered domain itself (the apex, as
// example.com) or a name below it (shop.example.com). It decides which DNS
// record the customer must create.
type Kind string

// Kinds of names.
const (
	KindApex      Kind = "apex"
	KindSubdomain Kind = "subdomain"
	// KindWildcard is "*." and a name (*.shop.example.com): it routes
	// every name one label below it that has no domain of its own, and its
	// certificate needs the DCV delegation (DNS-01).
	KindWildcard Kind = "wildcard"
)

// Name is a validated, normalised domain name.
type Name struct {
	ASCII      string // punycode, lower case, no trailing dot: what is stored and compared
	Unicode    string // the same name as people read it
	Registered string // the registered domain (eTLD+1), the zone the customer edits
	Label      string // the name relative to Registered: "@" for the apex, "shop" for shop.example.com
	Kind       Kind
}

// base is the name a wildcard stands for the names below of
// (shop.example.com for *.shop.example.com); other names are their own.
func (n Name) base() string { return strings.TrimPrefix(n.ASCII, "*.") }

// strict is the IDNA profile names go through: UTS #46 mapping for lookup,
// the Bidi rule, DNS lengths checked, non-transitional (so "ß" stays "ß").
var strict = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.VerifyDNSLength(true),
	idna.Transitional(false),
)

// display turns stored punycode back into Unicode for people; it never
// rejects, because its input passed strict already.
var display = idna.New(idna.Transitional(false))

func invalidName(format string, args ...any) error {
	return petstore.Errorf(petstore.CodeInvalidRequest, format, args...)
}

// ParseName validates and normalises a domain name typed by a person, in
// Unicode or punycode form, with or without a trailing dot.
//
// A wildcard is "*." followed by a name that is valid itself
// (*.shop.example.com); its Kind is KindWildcard.
//
// Returns invalid_request, with a message saying what is wrong, for an empty
// name, a URL, an IP address, a "*" anywhere but as the whole first label, a
// single label, an empty label, a label over 63 or a name over 253 octets,
// characters IDNA does not allow, or a public suffix itself (co.uk,
// github.io).
func ParseName(s string) (Name, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "*."); ok && !strings.Contains(rest, "*") {
		n, err := ParseName(rest)
		if err != nil {
			return Name{}, err
		}
		if l := len("*.") + len(n.ASCII); l > 253 {
			// The wildcard's own name is what DNS and its certificate hold.
			return Name{}, invalidName("the name is %d octets long; names may be at most 253", l)
		}
		label := "*"
		if n.Kind == KindSubdomain {
			label = "*." + n.Label
		}
		return Name{ASCII: "*." + n.ASCII, Unicode: "*." + n.Unicode, Registered: n.Registered, Label: label, Kind: KindWildcard}, nil
	}
	if s == "" {
		return Name{}, invalidName("domain name must not be empty")
	}
	if !utf8.ValidString(s) {
		return Name{}, invalidName("the domain name is not valid UTF-8 text")
	}
	if isIP(s) {
		return Name{}, invalidName("%q is an IP address; enter a domain name like shop.example.com", clip(s))
	}
	if strings.ContainsAny(s, "/:@?#") {
		return Name{}, invalidName("%q is not a domain name: enter only the name, like shop.example.com, without scheme, port or path", clip(s))
	}
	if strings.Contains(s, "*") {
		return Name{}, invalidName("%q is not a valid wildcard: only a whole first label may be *, as in *.shop.example.com", clip(s))
	}
	s = strings.TrimSuffix(s, ".")
	if s == "" || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
		return Name{}, invalidName("%q has an empty label: labels between dots must not be empty", clip(s))
	}
	ascii, err := strict.ToASCII(s)
	if err != nil {
		return Name{}, lengthOrIDNAError(s, err)
	}
	ascii = strings.TrimSuffix(ascii, ".")
	if err := checkLengths(ascii); err != nil {
		return Name{}, err
	}
	// The stored form must itself be a valid input: people paste it back.
	if again, err := strict.ToASCII(ascii); err != nil || again != ascii {
		return Name{}, invalidName("%q is not a valid domain name: its labels do not survive IDNA conversion", clip(s))
	}
	if isIP(ascii) {
		return Name{}, invalidName("%q is an IP address; enter a domain name like shop.example.com", clip(s))
	}
	if !strings.Contains(ascii, ".") {
		return Name{}, invalidName("%q is a single label; enter a full name like shop.example.com", clip(s))
	}
	registered, err := publicsuffix.EffectiveTLDPlusOne(ascii)
	if err != nil {
		return Name{}, invalidName("%q is a public suffix, shared by many owners; enter a name registered under it", clip(s))
	}
	unicode, err := display.ToUnicode(ascii)
	if err != nil {
		unicode = ascii
	}
	n := Name{ASCII: ascii, Unicode: unicode, Registered: registered, Kind: KindApex, Label: "@"}
	if registered != ascii {
		n.Kind = KindSubdomain
		n.Label = strings.TrimSuffix(ascii, "."+registered)
	}
	return n, nil
}

// isIP reports whether s is an IPv4 or IPv6 address, bracketed or not, or
// an IPv4 address with a zone or port-free suffix that IDNA would keep.
func isIP(s string) bool {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	// Four all-numeric labels are an address however they are written
	// (leading zeros included); no registered name looks like that.
	labels := strings.Split(strings.TrimSuffix(s, "."), ".")
	if len(labels) != 4 {
		return false
	}
	for _, l := range labels {
		if l == "" || strings.Trim(l, "0123456789") != "" {
			return false
		}
	}
	return true
}

func checkLengths(ascii string) error {
	if len(ascii) > 253 {
		return invalidName("the name is %d octets long; names may be at most 253", len(ascii))
	}
	for _, l := range strings.Split(ascii, ".") {
		if l == "" {
			return invalidName("the name has an empty label: labels between dots must not be empty")
		}
		if len(l) > 63 {
			return invalidName("the label %q is %d octets long; labels may be at most 63", clip(l), len(l))
		}
	}
	return nil
}

// lengthOrIDNAError explains why IDNA refused s. The idna package reports
// lengths and bad characters with the same error type, so the lengths are
// checked again on a lenient conversion to tell the two apart.
func lengthOrIDNAError(s string, err error) error {
	if a, lerr := idna.Punycode.ToASCII(strings.ToLower(s)); lerr == nil {
		if lenErr := checkLengths(strings.TrimSuffix(a, ".")); lenErr != nil {
			return lenErr
		}
	}
	return invalidName("%q is not a valid domain name: only letters, digits and hyphens are allowed, and hyphens not at the start or end of a label (%v)", clip(s), trimIDNAError(err))
}

func trimIDNAError(err error) string {
	return strings.TrimPrefix(err.Error(), "idna: ")
}

// clip shortens what a person typed before it is echoed in a message.
func clip(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:77]) + "..."
	}
	return s
}

// isUnder reports whether name is base or a name below it.
func isUnder(name, base string) bool {
	return name == base || strings.HasSuffix(name, "."+base)
}

// wildcardAncestors returns every wildcard whose DNS record answers for
// name (RFC 4592: a wildcard answers for names at any depth below it),
// nearest first: *.a.shop.example.com, *.shop.example.com and
// *.example.com for x.a.shop.example.com, and the same for
// *.x.a.shop.example.com, which never lists itself.
func wildcardAncestors(name string) []string {
	var out []string
	rest := strings.TrimPrefix(name, "*.")
	for {
		_, parent, ok := strings.Cut(rest, ".")
		if !ok || !strings.Contains(parent, ".") {
			return out
		}
		out = append(out, "*."+parent)
		rest = parent
	}
}

// wildcardParent returns the wildcard that would cover name
// (*.shop.example.com for a.shop.example.com), if name has one: the one
// the platform serves it by, as a certificate's wildcard covers one
// label.
func wildcardParent(name string) (string, bool) {
	_, rest, ok := strings.Cut(name, ".")
	if !ok || !strings.Contains(rest, ".") || strings.HasPrefix(name, "*.") {
		return "", false
	}
	return "*." + rest, true
}
