package dnsconfig

import (
	"math"
	"testing"
	"time"

	"github.com/petstorekit/petstore/customdomain"
)

// TestToLibdnsHugeTTL: a TTL past the largest a DNS record holds (RFC
// 2181 §8: 2^31-1 seconds) is written as that largest, not wrapped around
// into another TTL or the default.
func TestToLibdnsHugeTTL(t *testing.T) {
	for _, ttl := range []int{1 << 31, 1 << 40, math.MaxInt} {
		rec, finding := toLibdns("example.com", customdomain.Record{Type: "TXT", Name: "x", Value: "v", TTL: ttl})
		if finding != nil {
			t.Fatalf("TTL %d: %+v", ttl, finding)
		}
		if got := rec.RR().TTL; got != math.MaxInt32*time.Second {
			t.Errorf("TTL %d written as %v, want %v", ttl, got, math.MaxInt32*time.Second)
		}
	}
}
