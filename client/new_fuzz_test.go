package client

import (
	"strconv"
	"strings"
	"testing"

	"github.com/petstorekit/petstore/internal/redact"
)

// FuzzNew: a base URL and API key from configuration either make a
// client of an absolute http or https base without query or fragment, or
// an error that shows neither the key nor the URL's password.
func FuzzNew(f *testing.F) {
	f.Add("https://api.example.com/v1", "psk_secret")
	f.Add("https://u:hunter22@api.example.com/v1/?q=1#f", "")
	f.Add("ftp://u:hunter22@x/", "psk_secret\n")
	f.Add("https://u:hunter22@[::1", "k")
	f.Add("/v1", "k")
	f.Fuzz(func(t *testing.T, base, key string) {
		c, err := New(base, key)
		if err != nil {
			if len(key) >= 6 && !strings.Contains(base, key) && strings.Contains(err.Error(), key) {
				t.Fatalf("New(%q, %q): error %q shows the key", base, key, err)
			}
			if !strings.Contains(err.Error(), strconv.Quote(redact.URL(base))) && !strings.Contains(err.Error(), "API key") {
				t.Fatalf("New(%q, %q): error %q does not show the URL as redact.URL does", base, key, err)
			}
			return
		}
		if (c.base.Scheme != "http" && c.base.Scheme != "https") || c.base.Host == "" || c.base.RawQuery != "" || c.base.Fragment != "" {
			t.Fatalf("New(%q) has base %v", base, c.base)
		}
	})
}
