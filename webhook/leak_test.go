package webhook_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/webhook"
)

// TestEndpointPrintsNoSecret: an endpoint printed in a log line, an
// error or a test failure (fmt's verbs, slog's text and JSON handlers),
// alone or inside a Due, shows its id and URL but neither its secret nor
// the one it replaced.
func TestEndpointPrintsNoSecret(t *testing.T) {
	const secret, previous = "whsec_PLANTEDsecret", "whsec_PLANTEDprevious"
	e := webhook.Endpoint{ID: "wh_1", ProjectID: "prj_1", URL: "https://example.com/hook", Secret: secret,
		PreviousSecret: previous, PreviousSecretExpiresAt: time.Unix(1e9, 0)}
	due := webhook.Due{Endpoint: e}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("webhook", "endpoint", e)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("webhook", "endpoint", e)
	for _, out := range []string{fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e), fmt.Sprint(&e),
		fmt.Sprintf("%+v", due), fmt.Sprintf("%+v", []webhook.Endpoint{e}), logs.String()} {
		if strings.Contains(out, "PLANTED") {
			t.Errorf("the endpoint printed shows a secret: %s", out)
		}
		if !strings.Contains(out, "wh_1") {
			t.Errorf("the endpoint printed does not show its id: %s", out)
		}
	}
}
