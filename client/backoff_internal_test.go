package client

import (
	"math"
	"testing"
	"time"
)

// TestBackoffOfLateAttempts: the back-off ceiling base·2ⁿ⁻¹ must not
// overflow on a long run of attempts (a batch job's WithMaxAttempts(50)
// under a day's WithMaxWait): past the cap every wait is drawn up to the
// cap, never collapsing to none, and a cap of math.MaxInt64 ("none")
// never panics.
func TestBackoffOfLateAttempts(t *testing.T) {
	for _, tt := range []struct{ base, max time.Duration }{
		{10 * time.Second, time.Hour},
		{time.Minute, 24 * time.Hour},
		{time.Second, math.MaxInt64},
	} {
		c, err := New("http://127.0.0.1/v1", "k", WithBackoff(tt.base, tt.max))
		if err != nil {
			t.Fatal(err)
		}
		for attempt := 1; attempt <= 100; attempt++ {
			var positive bool
			for range 20 {
				d := c.backoff(attempt)
				if d < 0 || d > tt.max {
					t.Fatalf("WithBackoff(%v, %v): backoff(%d) = %v, outside [0, %v]", tt.base, tt.max, attempt, d, tt.max)
				}
				positive = positive || d > 0
			}
			if !positive {
				t.Fatalf("WithBackoff(%v, %v): backoff(%d) is always 0", tt.base, tt.max, attempt)
			}
		}
	}
}
