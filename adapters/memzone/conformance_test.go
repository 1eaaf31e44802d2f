package memzone_test

import (
	"testing"

	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/adapters/providertest"
)

func TestProviderConformance(t *testing.T) {
	p := memzone.New()
	p.AddZone("example.com.")
	providertest.Run(t, p, "example.com.")
}
