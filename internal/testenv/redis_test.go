package testenv_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/petstorekit/petstore/internal/testenv"
)

// TestRedisPrefixCleansUp: every key under the prefix, more than one SCAN
// batch of them, is gone once the test that asked for it ends, and keys
// beside it stay.
func TestRedisPrefixCleansUp(t *testing.T) {
	c := testenv.RedisClient(t)
	ctx := context.Background()
	beside := testenv.RedisPrefix(t, c, "beside") + "kept"
	if err := c.Set(ctx, beside, "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var prefix string
	t.Run("writes", func(t *testing.T) {
		prefix = testenv.RedisPrefix(t, c, "cleanup")
		pipe := c.Pipeline()
		for n := range 2500 {
			pipe.Set(ctx, fmt.Sprintf("%skey%d", prefix, n), "v", 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	})
	var left []string
	for cursor := uint64(0); ; {
		keys, next, err := c.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			t.Fatal(err)
		}
		left = append(left, keys...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("%d keys under %q after the test ended, such as %s", len(left), prefix, left[0])
	}
	if n, err := c.Exists(ctx, beside).Result(); err != nil || n != 1 {
		t.Errorf("the key beside the prefix: exists %d, %v; want it kept", n, err)
	}
}
