package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
)

// TestListPetsRefusesANextLinkWithThePagesOwnCursor: a next link that holds
// the cursor of the page it came with, written as another request (a
// limit added), would have a caller paging by NextCursor read that page
// forever; ListPets says the link leads back instead.
func TestListPetsRefusesANextLinkWithThePagesOwnCursor(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", `</v1/pets?cursor=`+r.URL.Query().Get("cursor")+`&limit=5>; rel="next"`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[{"id":1,"name":"Rex","categoryId":1}]`))
	}))
	defer api.Close()
	c, err := client.New(api.URL+"/v1", "psk_test")
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.ListPets(context.Background(), petstore.PetFilter{Cursor: "a"})
	if err == nil || !strings.Contains(err.Error(), "leads back to the same page") {
		t.Fatalf("ListPets = next cursor %q, %v; want the loop's error", page.NextCursor, err)
	}
}
