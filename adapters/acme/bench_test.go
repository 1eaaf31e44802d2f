package acme_test

import (
	"testing"

	"github.com/petstorekit/petstore/adapters/acme"
	"github.com/petstorekit/petstore/customdomain"
)

// EvaluateCAA runs before every order and renewal.
func BenchmarkEvaluateCAA(b *testing.B) {
	recs := []customdomain.Record{
		{Type: "CAA", Value: `0 issue "digicert.com"`},
		{Type: "CAA", Value: `0 issue "pebble.letsencrypt.org; validationmethods=http-01"`},
		{Type: "CAA", Value: `0 iodef "mailto:sec@example.com"`},
	}
	for b.Loop() {
		if !acme.EvaluateCAA("shop.example.com", []string{"pebble.letsencrypt.org"}, "example.com", recs).Allowed {
			b.Fatal("blocked")
		}
	}
}
