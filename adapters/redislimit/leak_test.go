package redislimit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore/adapters/redislimit"
)

// TestAddressWithUserInfoShowsNoPassword: a password written before the
// host of a host:port address ("PASSWORD@host:port", the redis:// URL's
// user info without its scheme) is not taken for part of the host name,
// which every failed dial (the error, the limiter's log lines) would
// then quote.
func TestAddressWithUserInfoShowsNoPassword(t *testing.T) {
	t.Parallel()
	const secret = "PLANTEDredisPASS"
	for _, addr := range []string{secret + "@127.0.0.1:1", "user:" + secret + "@127.0.0.1:1"} {
		o, err := redislimit.ParseOptions(addr)
		if err == nil {
			c := redis.NewClient(o)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = c.Ping(ctx).Err()
			cancel()
			c.Close()
		}
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%q: %v, want an error without the password", addr, err)
		}
	}
}
