package lazydeadline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/petstorekit/petstore/internal/lazydeadline"
)

type key struct{}

// request is a context as net/http gives a request: one that can be
// canceled, with a value.
func request(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	t.Cleanup(cancel)
	return ctx
}

// done waits for ctx to end, at most 5 s.
func done(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the context did not end")
	}
}

// The Context behaves as context.WithDeadline would, through every way
// its end can come and be observed, whether or not Done made its timer.
func TestBehavesAsWithDeadline(t *testing.T) {
	past, soon := time.Now().Add(-time.Second), func() time.Time { return time.Now().Add(20 * time.Millisecond) }
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) (ctx context.Context, err error) // what to check Err and Cause of
		want error
	}{
		{"live: no error, deadline reported", func(t *testing.T) (context.Context, error) {
			ctx := lazydeadline.WithDeadline(request(t), time.Now().Add(time.Hour))
			if d, ok := ctx.Deadline(); !ok || time.Until(d) < 59*time.Minute {
				t.Errorf("Deadline() = %v, %v", d, ok)
			}
			return ctx, ctx.Err()
		}, nil},
		{"a parent's earlier deadline is reported", func(t *testing.T) (context.Context, error) {
			parent, cancel := context.WithTimeout(request(t), time.Minute)
			t.Cleanup(cancel)
			want, _ := parent.Deadline()
			ctx := lazydeadline.WithDeadline(parent, time.Now().Add(time.Hour))
			if d, _ := ctx.Deadline(); !d.Equal(want) {
				t.Errorf("Deadline() = %v, want the parent's %v", d, want)
			}
			return ctx, ctx.Err()
		}, nil},
		{"deadline passed, never waited on", func(t *testing.T) (context.Context, error) {
			ctx := lazydeadline.WithDeadline(request(t), past)
			return ctx, ctx.Err()
		}, context.DeadlineExceeded},
		{"deadline reached while waited on", func(t *testing.T) (context.Context, error) {
			ctx := lazydeadline.WithDeadline(request(t), soon())
			done(t, ctx)
			return ctx, ctx.Err()
		}, context.DeadlineExceeded},
		{"a derived context ends at the deadline", func(t *testing.T) (context.Context, error) {
			child, cancel := context.WithCancel(lazydeadline.WithDeadline(request(t), soon()))
			defer cancel()
			done(t, child)
			return child, child.Err()
		}, context.DeadlineExceeded},
		{"the parent's end, never waited on", func(t *testing.T) (context.Context, error) {
			parent, cancel := context.WithCancel(context.Background())
			ctx := lazydeadline.WithDeadline(parent, time.Now().Add(time.Hour))
			cancel()
			return ctx, ctx.Err()
		}, context.Canceled},
		{"the parent's end while waited on", func(t *testing.T) (context.Context, error) {
			parent, cancel := context.WithCancel(context.Background())
			ctx := lazydeadline.WithDeadline(parent, time.Now().Add(time.Hour))
			go cancel()
			done(t, ctx)
			return ctx, ctx.Err()
		}, context.Canceled},
		{"stopped, never waited on", func(t *testing.T) (context.Context, error) {
			ctx := lazydeadline.WithDeadline(request(t), time.Now().Add(time.Hour))
			ctx.Stop()
			return ctx, ctx.Err()
		}, context.Canceled},
		{"stopped, then waited on", func(t *testing.T) (context.Context, error) {
			ctx := lazydeadline.WithDeadline(request(t), time.Now().Add(time.Hour))
			ctx.Stop()
			done(t, ctx)
			return ctx, ctx.Err()
		}, context.Canceled},
		{"waited on, then stopped", func(t *testing.T) (context.Context, error) {
			ctx := lazydeadline.WithDeadline(request(t), time.Now().Add(time.Hour))
			_ = ctx.Done()
			ctx.Stop()
			done(t, ctx)
			return ctx, ctx.Err()
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, err := tc.run(t)
			if !errors.Is(err, tc.want) {
				t.Errorf("Err() = %v, want %v", err, tc.want)
			}
			if cause := context.Cause(ctx); !errors.Is(cause, tc.want) {
				t.Errorf("Cause() = %v, want %v", cause, tc.want)
			}
		})
	}
}

// Values are the parent's, before and after Done made the timed context.
func TestValuesPassThrough(t *testing.T) {
	ctx := lazydeadline.WithDeadline(request(t), time.Now().Add(time.Hour))
	defer ctx.Stop()
	if got := ctx.Value(key{}); got != "v" {
		t.Fatalf("before Done: %v", got)
	}
	_ = ctx.Done()
	if got := ctx.Value(key{}); got != "v" {
		t.Fatalf("after Done: %v", got)
	}
}
