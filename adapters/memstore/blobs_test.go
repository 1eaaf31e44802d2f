package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
)

// Blob state lives beside the Store, not in it: two stores must still
// never see each other's blobs or locks.
func TestBlobsArePerStore(t *testing.T) {
	ctx := context.Background()
	a, b := memstore.New(), memstore.New()
	if err := a.PutBlob(ctx, "k", []byte("a's")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.GetBlob(ctx, "k"); petstore.ErrorCode(err) != petstore.CodeNotFound {
		t.Fatalf("store b sees store a's blob: %v", err)
	}
	now := time.Now()
	if ok, _ := a.TryLock(ctx, "l", "A", now, now.Add(1e9)); !ok {
		t.Fatal("a's lock refused")
	}
	if ok, _ := b.TryLock(ctx, "l", "B", now, now.Add(1e9)); !ok {
		t.Fatal("store b's lock is held by store a's owner")
	}
}
