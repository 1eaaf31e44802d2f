package memstore_test

import (
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(testing.TB) petstore.Store { return memstore.New() })
}
