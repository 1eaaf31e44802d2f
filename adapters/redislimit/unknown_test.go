package redislimit_test

import (
	"context"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/ratelimit/ratelimittest"
)

// Failing closed with Redis unreachable, a process reports the figures it
// knows with its 503, and none for a subject it never heard of: another
// process may have spent that subject's whole quota, so "60 left" would
// be a guess presented as a fact.
func TestUnreachableReportsNoFiguresForUnknownSubject(t *testing.T) {
	t.Parallel()
	direct := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, direct, "rl")
	p := newProxy(t)
	other := ratelimit.New(redislimit.New(direct, prefix), ratelimit.Config{})
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	this := ratelimit.New(redislimit.New(proxied(t, p), prefix), ratelimit.Config{FailClosed: true})
	t.Cleanup(func() { _ = this.Close(context.Background()) })
	ctx := context.Background()
	for range 60 {
		if d, err := other.Decide(ctx, "key:spent", ratelimittest.Free); err != nil || !d.Allowed {
			t.Fatalf("the other process: %+v, %v", d, err)
		}
	}
	if d, err := this.Decide(ctx, "key:known", ratelimittest.Free); err != nil || !d.Allowed {
		t.Fatalf("before the cut: %+v, %v", d, err)
	}
	p.Cut()
	var d ratelimit.Decision
	var err error
	for range 3 { // until this process takes Redis for unreachable
		if d, err = this.Decide(ctx, "key:spent", ratelimittest.Free); err != nil {
			break
		}
	}
	if petstore.ErrorCode(err) != petstore.CodeUnavailable {
		t.Fatalf("Redis cut, failing closed: %+v, %v; want unavailable", d, err)
	}
	if d.Binding.Quota != 0 || len(d.Windows) != 0 {
		t.Fatalf("a subject this process never saw, spent elsewhere: %+v, want no figures (it has none)", d.Binding)
	}
	d, err = this.Decide(ctx, "key:known", ratelimittest.Free)
	if petstore.ErrorCode(err) != petstore.CodeUnavailable || d.Binding.Quota != 60 || d.Binding.Remaining != 59 {
		t.Fatalf("a subject this process knows: %+v, %v; want unavailable with its figures, 59 of 60 left", d.Binding, err)
	}
}
