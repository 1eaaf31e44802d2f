package acme

import (
	"context"
	"errors"
	"testing"

	"github.com/caddyserver/certmagic"

	"github.com/petstorekit/petstore/adapters/memstore"
)

// A Request's own first order is not checked against Config.Allowed (the
// engine requests before it stores the state Allowed reads), but certmagic
// retries a failed order for up to 30 days, a minute and more apart: a
// retry of a name removed meanwhile, here or by another process, must stop,
// not obtain a certificate for a name nobody holds. White-box, because
// certmagic's first retry comes a minute after the first try.
func TestRetryOfARemovedNameStops(t *testing.T) {
	allowed := false // the name was never stored, or removed since
	is, err := New(Config{CA: "https://127.0.0.1:1/dir", Storage: memstore.New(), HTTPPort: 8080,
		Allowed: func(context.Context, string) bool { return allowed }})
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	const name = "shop.example.com"
	is.mu.Lock()
	is.attempts[name] = &attempt{started: is.now(), cancel: func() {}}
	is.mu.Unlock()
	try := func(tries int) error {
		ctx := context.WithValue(context.Background(), certmagic.AttemptsCtxKey, &tries)
		return is.onEvent(ctx, "cert_obtaining", map[string]any{"identifier": name})
	}

	var stop certmagic.ErrNoRetry
	if err := try(0); errors.As(err, &stop) {
		t.Fatalf("the first order of a Request was refused: %v", err)
	}
	if err := try(1); !errors.As(err, &stop) {
		t.Fatalf("a retry for a name Allowed refuses: %v, want ErrNoRetry", err)
	}
}
