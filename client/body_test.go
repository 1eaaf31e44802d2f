package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
)

// TestUnusableBodiesAreNamed: an answer the client cannot use, a body
// over its 4 MiB bound or one that is not JSON (a proxy's HTML page), is
// an error that says so, with the request and the status, rather than a
// JSON syntax error about a body cut short. Neither is retried: the same
// request gets the same answer.
func TestUnusableBodiesAreNamed(t *testing.T) {
	t.Parallel()
	big := "[" + strings.Repeat(`{"id":1,"name":"Rex","categoryId":1},`, 5<<20/37) + `{"id":1,"name":"Rex","categoryId":1}]`
	tests := []struct {
		name        string
		status      int // every case is a success whose body is unusable
		contentType string
		body        string
		want        []string
	}{
		{"too large", 200, "application/json", big, []string{"GET /v1/pets", "200", "over 4 MiB"}},
		{"html", 200, "text/html", "<html>Sign in to the Wi-Fi</html>", []string{"GET /v1/pets", "200", "text/html", "not JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.Header().Set("Content-Type", tt.contentType)
				w.WriteHeader(tt.status)
				w.Write([]byte(tt.body))
			}))
			t.Cleanup(ts.Close)
			c, err := client.New(ts.URL+"/v1", "k", client.WithBackoff(0, 0))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.ListPets(context.Background(), petstore.PetFilter{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			var perr *petstore.Error
			if errors.As(err, &perr) || client.IsRetryable(err) {
				t.Errorf("error %q is a petstore.Error or retryable", err)
			}
			if calls.Load() != 1 {
				t.Errorf("%d requests, want 1", calls.Load())
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAnswerWithoutRequest: a RoundTripper of the caller's (a test
// double, say) may return a response without its Request; the client
// still reads it, and names the request in its errors.
func TestAnswerWithoutRequest(t *testing.T) {
	t.Parallel()
	body := `[{"id":1,"name":"Rex","categoryId":1}]`
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}, nil
	})}
	c, err := client.New("https://api.example.com/v1", "k", client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.ListPets(context.Background(), petstore.PetFilter{})
	if err != nil || len(page.Pets) != 1 {
		t.Fatalf("ListPets = %+v, %v; want Rex", page, err)
	}
	body = "<html>"
	if _, err := c.ListPets(context.Background(), petstore.PetFilter{}); err == nil || !strings.Contains(err.Error(), "GET /v1/pets: 200 OK") {
		t.Fatalf("error %v, want it to name GET /v1/pets and 200 OK", err)
	}
}

// TestNullListIsEmpty: a server other than petstore (a gateway, a mock)
// answering a list with null gives an empty, non-nil page, as the API's
// own [] does, so that a caller encoding it sends [] on.
func TestNullListIsEmpty(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`null`))
	}))
	t.Cleanup(ts.Close)
	c, err := client.New(ts.URL+"/v1", "k")
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.ListPets(context.Background(), petstore.PetFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if page.Pets == nil {
		t.Errorf("ListPets: Pets is nil, want an empty slice")
	}
	orders, err := c.ListOrders(context.Background(), petstore.OrderFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if orders.Orders == nil {
		t.Errorf("ListOrders: Orders is nil, want an empty slice")
	}
}

// TestNullObjectIsAnError: a pet or an order answered with null (by a
// gateway or a mock, never by the API) is an error naming the request,
// not a zero pet or order with id 0 and no error.
func TestNullObjectIsAnError(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("null\n"))
	}))
	t.Cleanup(ts.Close)
	c, err := client.New(ts.URL+"/v1", "k")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	calls := map[string]func() error{
		"GetPet":      func() error { _, err := c.GetPet(ctx, 1); return err },
		"CreatePet":   func() error { _, err := c.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1}); return err },
		"GetOrder":    func() error { _, err := c.GetOrder(ctx, 1); return err },
		"CreateOrder": func() error { _, err := c.CreateOrder(ctx, petstore.NewOrder{PetID: 1}); return err },
	}
	for name, call := range calls {
		if err := call(); err == nil || !strings.Contains(err.Error(), "null") {
			t.Errorf("%s on a null answer: error %v, want one saying the body is null", name, err)
		}
	}
}

// TestNullItemIsAnError: a list holding null (`[null]`, from a gateway or
// a mock, never the API) is an error naming the request, as a null pet
// or order is, not a zero pet or order with id 0 and no error.
func TestNullItemIsAnError(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`[{"id":1,"name":"Rex","categoryId":1,"status":"available"},null]`))
	}))
	t.Cleanup(ts.Close)
	c, err := client.New(ts.URL+"/v1", "k", client.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if page, err := c.ListPets(ctx, petstore.PetFilter{}); err == nil || !strings.Contains(err.Error(), "null") {
		t.Errorf("ListPets on [pet, null]: %+v, error %v; want an error saying an item is null", page, err)
	}
	if page, err := c.ListOrders(ctx, petstore.OrderFilter{}); err == nil || !strings.Contains(err.Error(), "null") {
		t.Errorf("ListOrders on [order, null]: %+v, error %v; want an error saying an item is null", page, err)
	}
	var ids []int64
	var last error
	for pet, err := range c.All(ctx, petstore.PetFilter{}) {
		if last = err; err != nil {
			break
		}
		ids = append(ids, pet.ID)
	}
	if last == nil || !strings.Contains(last.Error(), "null") {
		t.Errorf("All on [pet, null]: yielded ids %v, then %v; want an error saying an item is null", ids, last)
	}
}
