package petstoretest_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/petstoretest"
)

func ExampleNewServer() {
	t := newExampleT() // in a test: the *testing.T
	defer t.cleanup()

	srv := petstoretest.NewServer(t, petstoretest.WithPets(
		petstore.NewPet{Name: "Rex", CategoryID: 1, Status: petstore.StatusAvailable},
	))
	ctx := context.Background()
	c := srv.Client() // a *client.Client with the server's key

	// The next request fails; the client retries it.
	srv.FailNext(1, 503)
	page, err := c.ListPets(ctx, petstore.PetFilter{})
	fmt.Println(len(page.Pets), err)

	_, _ = c.CreatePet(ctx, petstore.NewPet{Name: "Tom", CategoryID: 2})
	fmt.Println(len(srv.Pets()))
	for _, r := range srv.Requests() {
		fmt.Println(r.Method, r.Path, r.Status)
	}
	// Output:
	// 1 <nil>
	// 2
	// GET /v1/pets 503
	// GET /v1/pets 200
	// POST /v1/pets 201
}

// A fault with After lets the API do its work and loses the answer on
// the way back, as a dropped connection after the commit would: the test
// proves that a client's retry of the create makes one pet, not two.
func ExampleServer_Inject() {
	t := newExampleT() // in a test: the *testing.T
	defer t.cleanup()

	srv := petstoretest.NewServer(t)
	srv.Inject(petstoretest.Fault{Route: "POST /pets", Times: 1, After: true, Status: http.StatusBadGateway})
	pet, err := srv.Client().CreatePet(context.Background(), petstore.NewPet{Name: "Rex", CategoryID: 1})
	fmt.Println(pet.ID, err)
	fmt.Println(len(srv.Pets()))
	for _, r := range srv.Requests() {
		fmt.Println(r.Method, r.Path, r.Status, r.Header.Get("Idempotency-Key") != "")
	}
	// Output:
	// 1 <nil>
	// 1
	// POST /v1/pets 502 true
	// POST /v1/pets 201 true
}

// exampleT stands in for a *testing.T in examples, which have none.
// Embedding testing.TB supplies the interface's unexported method.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func newExampleT() *exampleT                          { return &exampleT{} }
func (t *exampleT) Helper()                           {}
func (t *exampleT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleT) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
