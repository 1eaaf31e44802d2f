package rfc2136_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/petstorekit/petstore/adapters/rfc2136"
)

// TestProviderPrintsNoSecret: a provider printed in a log line or an
// error (fmt's verbs, slog's text and JSON handlers) shows its server
// and key name but never its TSIG secret.
func TestProviderPrintsNoSecret(t *testing.T) {
	const secret = "UExBTlRFRHRzaWcv/SECRET+Zm9vYmFy"
	p := &rfc2136.Provider{Server: "192.0.2.53:53", KeyName: "petstore-update.", KeySecret: secret}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("dns", "provider", p)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("dns", "provider", p)
	for _, out := range []string{fmt.Sprintf("%v", p), fmt.Sprintf("%+v", p), fmt.Sprintf("%#v", p), fmt.Sprint(p), logs.String()} {
		if strings.Contains(out, secret) {
			t.Errorf("the provider printed shows its TSIG secret: %s", out)
		}
		if !strings.Contains(out, "192.0.2.53:53") {
			t.Errorf("the provider printed does not show its server: %s", out)
		}
	}
}
