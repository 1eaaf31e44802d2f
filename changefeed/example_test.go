package changefeed_test

import (
	"context"
	"fmt"

	"github.com/petstorekit/petstore/changefeed"
)

// A subscriber, such as a cache of API keys, hears KindLive when its
// subscription starts, then every change published. A Local feed hands a
// change to its subscribers before Publish returns; adapters/redisfeed and
// adapters/pgfeed carry the same changes between processes, as the string
// Encode writes.
func ExampleLocal() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var feed changefeed.Local
	heard := make(chan changefeed.Change, 10)
	done := make(chan error)
	go func() {
		done <- feed.Subscribe(ctx, func(c changefeed.Change) { heard <- c })
	}()
	fmt.Println(<-heard) // the subscription is live: publish from now on

	revoked := changefeed.Change{Kind: changefeed.KindKey, ID: "key_123"}
	if err := feed.Publish(ctx, revoked); err != nil {
		fmt.Println(err)
	}
	fmt.Println(<-heard)

	wire, _ := changefeed.Encode(revoked)
	back, _ := changefeed.Decode(wire)
	fmt.Println(back == revoked)

	cancel()
	fmt.Println(<-done)
	// Output:
	// {live }
	// {key key_123}
	// true
	// context canceled
}
