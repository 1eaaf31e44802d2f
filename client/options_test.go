package client_test

import (
	"context"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/petstoretest"
)

// TestWithHTTPClientNilKeepsTheDefault: a nil *http.Client, as a zero
// field of a caller's config gives, means the default, as for
// net/http's own helpers, not a panic on the first call.
func TestWithHTTPClientNilKeepsTheDefault(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}))
	c, err := client.New(srv.URL, srv.Key(), client.WithHTTPClient(nil))
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.ListPets(context.Background(), petstore.PetFilter{})
	if err != nil || len(page.Pets) != 1 {
		t.Fatalf("ListPets = %+v, %v; want Rex", page, err)
	}
}
