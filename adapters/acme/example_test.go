package acme_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/petstorekit/petstore/adapters/acme"
	"github.com/petstorekit/petstore/adapters/memstore"
)

// A server wires the issuer into both listeners: HTTP-01 challenges on the
// plain-HTTP one, certificates and TLS-ALPN-01 on the TLS one. The domain
// engine calls Request when a name verifies.
func ExampleNew() {
	is, err := acme.New(acme.Config{
		CA:      "https://acme-staging-v02.api.letsencrypt.org/directory",
		Email:   "ops@example.com",
		Storage: memstore.New(),                                               // bunstore in production: shared by every process
		Allowed: func(ctx context.Context, name string) bool { return false }, // engine: verified or active?
	})
	if err != nil {
		log.Fatal(err)
	}
	defer is.Close()
	plain := &http.Server{Addr: ":80", Handler: is.HTTPHandler(http.NotFoundHandler())}
	secure := &http.Server{Addr: ":443", TLSConfig: is.TLSConfig()}
	_, _ = plain, secure // go plain.ListenAndServe(); secure.ListenAndServeTLS("", "")

	st, _ := is.Status(context.Background(), "shop.example.com")
	fmt.Println(st.State)
	// Output: none
}
