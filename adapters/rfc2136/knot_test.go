package rfc2136_test

import (
	"testing"

	"github.com/petstorekit/petstore/adapters/providertest"
	"github.com/petstorekit/petstore/adapters/rfc2136/rfc2136test"
)

func TestProviderConformanceKnot(t *testing.T) {
	k := rfc2136test.StartKnot(t, "example.com.")
	providertest.Run(t, k.Provider(), "example.com.")
}
