package bunopen_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
)

// TestTargetPrintsNoPassword: a parsed DSN printed in a log line or an
// error (fmt's verbs, slog's text and JSON handlers) shows its kind but
// never the password its DriverDSN holds.
func TestTargetPrintsNoPassword(t *testing.T) {
	for _, dsn := range []string{"postgres://u:PLANTEDdbPASS@db.example:5432/app", "mysql://u:PLANTEDdbPASS@db.example:3306/app"} {
		target, err := bunopen.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		slog.New(slog.NewTextHandler(&logs, nil)).Info("db", "target", target)
		slog.New(slog.NewJSONHandler(&logs, nil)).Info("db", "target", target)
		for _, out := range []string{fmt.Sprintf("%v", target), fmt.Sprintf("%+v", target), fmt.Sprintf("%#v", target), logs.String()} {
			if strings.Contains(out, "PLANTED") {
				t.Errorf("%s: the target printed shows the password: %s", target.Kind, out)
			}
			if !strings.Contains(out, target.Kind) {
				t.Errorf("the target printed does not show its kind: %s", out)
			}
		}
	}
}
