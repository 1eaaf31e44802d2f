package customdomain_test

import (
	"strings"
	"testing"

	"github.com/petstorekit/petstore/customdomain"
)

// TestParseCDNsLongLine: a line too long to read is refused with an error
// naming it, and no list: not the providers read before it, as if the
// file ended there.
func TestParseCDNsLongLine(t *testing.T) {
	text := "Cloudflare 173.245.48.0/20\n# comment\nFastly " + strings.Repeat("1", 70<<10) + "\nOther 10.0.0.0/8\n"
	cdns, err := customdomain.ParseCDNs(strings.NewReader(text))
	if err == nil || !strings.HasPrefix(err.Error(), "line 3: ") {
		t.Fatalf("err %v, want one naming line 3", err)
	}
	if cdns != nil {
		t.Fatalf("got %v with the error, want no list", cdns)
	}
}
