package customdomain_test

import (
	"strings"
	"testing"
	"unicode"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
)

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		in                         string
		ascii, unicode, reg, label string
		kind                       customdomain.Kind
	}{
		{"shop.example.com", "shop.example.com", "shop.example.com", "example.com", "shop", customdomain.KindSubdomain},
		{"  SHOP.Example.COM. ", "shop.example.com", "shop.example.com", "example.com", "shop", customdomain.KindSubdomain},
		{"example.com", "example.com", "example.com", "example.com", "@", customdomain.KindApex},
		{"a.b.example.com", "a.b.example.com", "a.b.example.com", "example.com", "a.b", customdomain.KindSubdomain},
		{"www.example.co.uk", "www.example.co.uk", "www.example.co.uk", "example.co.uk", "www", customdomain.KindSubdomain},
		{"Bücher.example", "xn--bcher-kva.example", "bücher.example", "xn--bcher-kva.example", "@", customdomain.KindApex},
		{"xn--bcher-kva.example", "xn--bcher-kva.example", "bücher.example", "xn--bcher-kva.example", "@", customdomain.KindApex},
		{"laden.bücher.example", "laden.xn--bcher-kva.example", "laden.bücher.example", "xn--bcher-kva.example", "laden", customdomain.KindSubdomain},
		{"faß.de", "xn--fa-hia.de", "faß.de", "xn--fa-hia.de", "@", customdomain.KindApex}, // non-transitional: ß stays
		{"ＳＨＯＰ．example．com", "shop.example.com", "shop.example.com", "example.com", "shop", customdomain.KindSubdomain},
		{"店.例え.jp", "xn--hxt.xn--r8jz45g.jp", "店.例え.jp", "xn--r8jz45g.jp", "xn--hxt", customdomain.KindSubdomain},
		// The public suffix list's private section counts: each github.io
		// site is its own registered domain.
		{"alice.github.io", "alice.github.io", "alice.github.io", "alice.github.io", "@", customdomain.KindApex},
		{"www.alice.github.io", "www.alice.github.io", "www.alice.github.io", "alice.github.io", "www", customdomain.KindSubdomain},
		{"*.shop.example.com", "*.shop.example.com", "*.shop.example.com", "example.com", "*.shop", customdomain.KindWildcard},
		{"*.Bücher.example", "*.xn--bcher-kva.example", "*.bücher.example", "xn--bcher-kva.example", "*", customdomain.KindWildcard},
	} {
		t.Run(tc.in, func(t *testing.T) {
			n, err := customdomain.ParseName(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			want := customdomain.Name{ASCII: tc.ascii, Unicode: tc.unicode, Registered: tc.reg, Label: tc.label, Kind: tc.kind}
			if n != want {
				t.Fatalf("ParseName(%q) = %+v, want %+v", tc.in, n, want)
			}
		})
	}
}

func TestParseNameRejects(t *testing.T) {
	for _, tc := range []struct {
		class, in, says string
	}{
		{"empty", "", "empty"},
		{"blank", "   ", "empty"},
		{"IPv4", "192.0.2.1", "IP address"},
		{"IPv4 dotted", "192.0.2.1.", "IP address"},
		{"IPv6", "2001:db8::1", "IP address"},
		{"IPv6 bracketed", "[2001:db8::1]", "IP address"},
		{"wildcard not first", "*shop.example.com", "wildcard"},
		{"wildcard inside", "shop.*.example.com", "wildcard"},
		{"single label", "localhost", "single label"},
		{"single label unicode", "bücher", "single label"},
		{"empty label", "shop..example.com", "empty label"},
		{"leading dot", ".example.com", "empty label"},
		{"only a dot", ".", "empty label"},
		{"two trailing dots", "shop.example.com..", "empty label"},
		{"label over 63", strings.Repeat("a", 64) + ".example.com", "at most 63"},
		{"name over 253", strings.Repeat(strings.Repeat("a", 60)+".", 5) + "com", "at most 253"},
		// "*." adds two octets to a base of 252 or 253: the wildcard's own
		// name is what DNS and a certificate must hold.
		{"wildcard over 253", "*." + strings.Repeat(strings.Repeat("a", 62)+".", 3) + strings.Repeat("b", 59) + ".com", "at most 253"},
		{"public suffix", "co.uk", "public suffix"},
		{"public suffix tld", "com.", "single label"},
		{"private public suffix", "github.io", "public suffix"},
		{"URL", "https://shop.example.com/", "not a domain name"},
		{"with port", "shop.example.com:443", "not a domain name"},
		{"underscore", "my_shop.example.com", "not a valid domain name"},
		{"leading hyphen", "-shop.example.com", "not a valid domain name"},
		{"space inside", "my shop.example.com", "not a valid domain name"},
		{"bidi mix", "a\u05d0.example.com", "not a valid domain name"},
		{"bad punycode", "xn--zz.example.com", "not a valid domain name"},
	} {
		t.Run(tc.class, func(t *testing.T) {
			n, err := customdomain.ParseName(tc.in)
			if got := petstore.ErrorCode(err); got != petstore.CodeInvalidRequest {
				t.Fatalf("ParseName(%q) = %+v, %v; want invalid_request", tc.in, n, err)
			}
			if msg := petstore.ErrorMessage(err); !strings.Contains(msg, tc.says) {
				t.Fatalf("message %q does not say %q", msg, tc.says)
			}
		})
	}
}

func FuzzParseName(f *testing.F) {
	for _, s := range []string{
		"shop.example.com", "Bücher.example", "xn--bcher-kva.example", "co.uk", "*.a.b", "1.2.3.4",
		"a..b", "ＳＨＯＰ．example．com", "alice.github.io", "faß.de", "[::1]", "a\u05d0.com", "-a.b.c",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := customdomain.ParseName(s)
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("ParseName(%q) error %v is not invalid_request", s, err)
			}
			return
		}
		if len(n.ASCII) > 253 || n.ASCII != strings.ToLower(n.ASCII) || strings.HasSuffix(n.ASCII, ".") || !strings.Contains(n.ASCII, ".") {
			t.Fatalf("ParseName(%q).ASCII = %q is not a normal name", s, n.ASCII)
		}
		for _, r := range n.ASCII {
			if r >= 0x80 {
				t.Fatalf("ParseName(%q).ASCII = %q is not ASCII", s, n.ASCII)
			}
		}
		// Either form parses back to the same name.
		for _, form := range []string{n.ASCII, n.Unicode} {
			again, err := customdomain.ParseName(form)
			if err != nil || again != n {
				t.Fatalf("ParseName(%q) = %+v, %v; want %+v (from %q)", form, again, err, n, s)
			}
		}
		if (n.Kind == customdomain.KindApex) != (n.ASCII == n.Registered) || !strings.HasSuffix(n.ASCII, n.Registered) {
			t.Fatalf("ParseName(%q) = %+v: kind and registered domain disagree", s, n)
		}
	})
}

// TestParseNewName: a name being added must be publicly resolvable and
// not made to look like another (UTS #39 "Highly Restrictive").
func TestParseNewName(t *testing.T) {
	for _, ok := range []string{
		"shop.example.com", "Bücher.example", "shop.example.test", "demo.example", "faß.de",
		"店.例え.jp",                   // Han with Hiragana
		"ストアshop.example.jp",        // Katakana with Latin: Japanese
		"한국shop.example.kr",         // Hangul with Latin: Korean
		"中文ㄅ.example.tw",            // Han with Bopomofo
		"пример.рф",                 // Cyrillic under a Cyrillic TLD
		"сосиска.example.com",       // Cyrillic with letters that do not look Latin
		"ελλάδα.example.com",        // one script
		"shop-2.example.com",        // digits and hyphens go with any script
		"xn--bcher-kva.example.com", // punycode of one script
	} {
		if _, err := customdomain.ParseNewName(ok); err != nil {
			t.Errorf("ParseNewName(%q) = %v, want accepted", ok, err)
		}
	}
	for _, tc := range []struct{ in, says string }{
		{"\u0430pple.com", "mixes the Cyrillic and Latin scripts"},                      // Cyrillic а, Latin pple
		{"xn--pple-43d.com", "mixes the Cyrillic and Latin scripts"},                    // the same in punycode
		{"payp\u0430l.example.com", "mixes"},                                            // one Cyrillic letter inside
		{"\u03bfpenai.com", "mixes the Greek and Latin scripts"},                        // Greek omicron
		{"\u0430\u0440\u0440\u04cf\u0435.com", "Cyrillic letters that look like Latin"}, // "apple" all in Cyrillic
		{"ストア한국.example.com", "mixes"},                                                  // Katakana with Hangul
		{"abc.onion", ".onion"},
		{"printer.local", ".local"},
		{"app.localhost", ".localhost"},
		{"x.invalid", ".invalid"},
		{"corp.internal", ".internal"},
		{"router.home.arpa", ".home.arpa"},
		{"x.alt", ".alt"},
		// A name ending in a number is an IPv4 address to browsers (the
		// URL Standard's IPv4 parser: 127.1 is 127.0.0.1), and no
		// top-level domain is numeric (RFC 3696 §2).
		{"127.1", "ends in a number"},
		{"10.0.1", "ends in a number"},
		{"1.2.3.4.5", "ends in a number"},
		{"shop.example.123", "ends in a number"},
		{"shop.example.0x1f", "ends in a number"},
	} {
		_, err := customdomain.ParseNewName(tc.in)
		if petstore.ErrorCode(err) != petstore.CodeInvalidRequest || !strings.Contains(petstore.ErrorMessage(err), tc.says) {
			t.Errorf("ParseNewName(%q) = %v, want invalid_request saying %q", tc.in, err, tc.says)
		}
		// Stored before the rule, such a name can still be looked up.
		if _, err := customdomain.ParseName(tc.in); err != nil {
			t.Errorf("ParseName(%q) = %v, want accepted", tc.in, err)
		}
	}
}

// FuzzParseNewName: what ParseNewName accepts ParseName accepts the same
// way, never under a special-use TLD and never with a label mixing
// Cyrillic or Greek with Latin.
func FuzzParseNewName(f *testing.F) {
	for _, s := range []string{
		"shop.example.com", "\u0430pple.com", "xn--pple-43d.com", "abc.onion", "router.home.arpa", "店.例え.jp",
		"пример.рф", "\u0430\u0440\u0440\u04cf\u0435.com", "x.test", "y.example",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := customdomain.ParseNewName(s)
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("ParseNewName(%q) error %v is not invalid_request", s, err)
			}
			return
		}
		if m, err := customdomain.ParseName(s); err != nil || m != n {
			t.Fatalf("ParseNewName(%q) = %+v but ParseName = %+v, %v", s, n, m, err)
		}
		for _, suf := range []string{"onion", "local", "localhost", "invalid", "internal", "alt", "home.arpa"} {
			if n.ASCII == suf || strings.HasSuffix(n.ASCII, "."+suf) {
				t.Fatalf("ParseNewName(%q) accepted %q", s, n.ASCII)
			}
		}
		for _, l := range strings.Split(n.Unicode, ".") {
			latin, other := false, false
			for _, r := range l {
				latin = latin || unicode.Is(unicode.Latin, r)
				other = other || unicode.Is(unicode.Cyrillic, r) || unicode.Is(unicode.Greek, r)
			}
			if latin && other {
				t.Fatalf("ParseNewName(%q) accepted the mixed label %q", s, l)
			}
		}
	})
}
