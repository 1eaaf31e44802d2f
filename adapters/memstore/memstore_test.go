package memstore_test

import (
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/storetest"
)

// TestConformance runs the store suite and the suite of every optional
// store interface memstore implements.
func TestConformance(t *testing.T) {
	open := func(testing.TB) petstore.Store { return memstore.New() }
	storetest.Run(t, open)
	t.Run("Idempotency", func(t *testing.T) { storetest.RunIdempotency(t, open) })
	t.Run("Orders", func(t *testing.T) { storetest.RunOrders(t, open) })
	t.Run("Blobs", func(t *testing.T) { storetest.RunBlobs(t, open) })
	t.Run("Domains", func(t *testing.T) { storetest.RunDomains(t, open) })
	t.Run("Webhooks", func(t *testing.T) { storetest.RunWebhooks(t, open) })
}
