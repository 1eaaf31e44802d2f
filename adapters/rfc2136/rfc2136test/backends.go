package rfc2136test

import (
	"testing"

	"github.com/libdns/libdns"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/internal/testenv"
)

// A Backend is a DNS provider holding a test's zones, named for subtests.
type Backend struct {
	Name     string
	Provider interface {
		libdns.RecordGetter
		libdns.RecordAppender
		libdns.RecordSetter
		libdns.RecordDeleter
	}
}

// Backends returns memzone and, when knotd is installed (or services are
// required), Knot through the RFC 2136 adapter, each holding zones.
func Backends(tb testing.TB, zones ...string) []Backend {
	tb.Helper()
	mem := memzone.New()
	for _, z := range zones {
		mem.AddZone(z)
	}
	out := []Backend{{"memzone", mem}}
	if !Installed() && !testenv.Required() {
		tb.Log("knotd is not installed (Debian package knot): running against memzone only")
		return out
	}
	return append(out, Backend{"knot", StartKnot(tb, zones...).Provider()}) // fails when required and missing
}
