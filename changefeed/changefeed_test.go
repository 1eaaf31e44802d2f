package changefeed_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/changefeed/feedtest"
)

func TestLocal(t *testing.T) {
	feedtest.Run(t, func(t *testing.T) (a, b changefeed.Feed) {
		l := &changefeed.Local{}
		return l, l
	})
}

func TestEncodeDecode(t *testing.T) {
	tests := []struct {
		c    changefeed.Change
		wire string // "" when Encode must refuse c
	}{
		{changefeed.Change{Kind: "key", ID: "key_abc"}, "key:key_abc"},
		{changefeed.Change{Kind: "domain", ID: "a.example"}, "domain:a.example"},
		{changefeed.Change{Kind: "key"}, "key:"},
		{changefeed.Change{Kind: "x", ID: "a:b"}, "x:a:b"},
		{changefeed.Change{Kind: ""}, ""},
		{changefeed.Change{Kind: "a:b"}, ""},
		{changefeed.Change{Kind: "live"}, ""},
		{changefeed.Change{Kind: "lost"}, ""},
		{changefeed.Change{Kind: "key", ID: "a\x00b"}, ""},
		{changefeed.Change{Kind: "key", ID: strings.Repeat("x", changefeed.MaxPayload)}, ""},
	}
	for _, tt := range tests {
		wire, err := changefeed.Encode(tt.c)
		if tt.wire == "" {
			if err == nil {
				t.Errorf("Encode(%+.40v) = %q, want an error", tt.c, wire)
			}
			continue
		}
		if err != nil || wire != tt.wire {
			t.Errorf("Encode(%+v) = %q, %v; want %q", tt.c, wire, err, tt.wire)
			continue
		}
		if got, err := changefeed.Decode(wire); err != nil || got != tt.c {
			t.Errorf("Decode(%q) = %+v, %v; want %+v", wire, got, err, tt.c)
		}
	}
	for _, bad := range []string{"", "key", ":id", "live:", "lost:x"} {
		if c, err := changefeed.Decode(bad); err == nil {
			t.Errorf("Decode(%q) = %+v, want an error", bad, c)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{"key:key_1", "domain:a.example", "x:a:b", "", ":", "live:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		c, err := changefeed.Decode(payload)
		if err != nil {
			return
		}
		wire, err := changefeed.Encode(c)
		if err != nil || wire != payload {
			t.Fatalf("Decode(%q) = %+v, which encodes as %q, %v", payload, c, wire, err)
		}
	})
}

func TestBackoff(t *testing.T) {
	for failures, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 100: 5 * time.Second} {
		if got := changefeed.Backoff(failures); got > want || got < want*3/4 {
			t.Errorf("Backoff(%d) = %v, want %v less at most a quarter", failures, got, want)
		}
	}
}

func TestAllLive(t *testing.T) {
	key := changefeed.Change{Kind: changefeed.KindKey, ID: "key_1"}
	live, lost := changefeed.Change{Kind: changefeed.KindLive}, changefeed.Change{Kind: changefeed.KindLost}
	tests := []struct {
		name string
		feed []int               // which feed delivers each change
		in   []changefeed.Change // what it delivers
		want []changefeed.Change // what apply gets
	}{
		{"one live of two is lost", []int{0}, []changefeed.Change{live}, []changefeed.Change{lost}},
		{"both live", []int{0, 1}, []changefeed.Change{live, live}, []changefeed.Change{lost, live}},
		{"changes pass through", []int{1, 0}, []changefeed.Change{key, key}, []changefeed.Change{key, key}},
		{"either lost is lost", []int{0, 1, 1, 0}, []changefeed.Change{live, live, lost, lost}, []changefeed.Change{lost, live, lost, lost}},
		{"live again once both are", []int{0, 1, 0, 0, 1}, []changefeed.Change{live, live, lost, live, key}, []changefeed.Change{lost, live, lost, live, key}},
		{"a loss holds however often the other is live", []int{0, 0, 1, 1}, []changefeed.Change{live, lost, live, live}, []changefeed.Change{lost, lost, lost, lost}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []changefeed.Change
			fns := changefeed.AllLive(2, func(c changefeed.Change) { got = append(got, c) })
			for i, c := range tt.in {
				fns[tt.feed[i]](c)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("apply got %v, want %v", got, tt.want)
			}
		})
	}
}
