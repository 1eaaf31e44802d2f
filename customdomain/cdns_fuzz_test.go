package customdomain_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/petstorekit/petstore/customdomain"
)

// FuzzParseCDNs: an operator's -cdn-ranges file either is refused with an
// error or reads into providers with a name and masked, valid prefixes,
// each name once; writing them back one "<name> <CIDR>" a line reads the
// same list again.
func FuzzParseCDNs(f *testing.F) {
	for _, s := range []string{
		"Cloudflare 173.245.48.0/20\nCloudflare 2400:cb00::/32\n", "# c\n\n  Fastly\t151.101.0.0/16  \n", "Amazon CloudFront 13.32.0.1/15",
		"x", "x 1.2.3.4", "x 1.2.3.4/33", "x ::ffff:1.2.3.4/120", "x 1.2.3.4/24\r\ny 5.6.7.8/8\r\n", " #a 1.2.3.0/24", "a b\t 10.0.0.0/8",
		"x fe80::1%eth0/64", "x 01.2.3.4/8", "\xff 1.0.0.0/8",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cdns, err := customdomain.ParseCDNs(strings.NewReader(text))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") && !strings.Contains(err.Error(), "too long") {
				t.Fatalf("error %q does not name the line", err)
			}
			return
		}
		var back strings.Builder
		seen := map[string]bool{}
		for _, c := range cdns {
			if c.Name == "" || c.Name != strings.TrimSpace(c.Name) || seen[c.Name] || len(c.Prefixes) == 0 {
				t.Fatalf("parsed %q into provider %q with %d prefixes", text, c.Name, len(c.Prefixes))
			}
			seen[c.Name] = true
			for _, p := range c.Prefixes {
				if !p.IsValid() || p != p.Masked() {
					t.Fatalf("parsed %q into %s prefix %s, not valid and masked", text, c.Name, p)
				}
				back.WriteString(c.Name + " " + p.String() + "\n")
			}
		}
		again, err := customdomain.ParseCDNs(strings.NewReader(back.String()))
		if err != nil || !reflect.DeepEqual(again, cdns) {
			t.Fatalf("%q parsed into %v, written back as %q it reads %v, %v", text, cdns, back.String(), again, err)
		}
	})
}
