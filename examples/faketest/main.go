// Command faketest is a small petstore client program, and its test shows
// how to test such code against petstoretest: a real fake petstore inside
// the test, including rate limiting and injected failures.
//
// The program restocks the shop with the names given as arguments and
// prints every available pet:
//
//	PETSTORE_API_KEY="$KEY" go run ./examples/faketest -url http://localhost:8080/v1 Rex Tom
//
// The key goes in the variable rather than -key, whose value shows in ps.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/internal/redact"
)

// Restock adds one available pet per name in category, and returns the pets
// created. It stops at the first error, returning the pets created so far.
func Restock(ctx context.Context, svc petstore.PetService, category int64, names []string) ([]petstore.Pet, error) {
	var out []petstore.Pet
	for _, n := range names {
		p, err := svc.CreatePet(ctx, petstore.NewPet{Name: n, CategoryID: category, Status: petstore.StatusAvailable})
		if err != nil {
			return out, fmt.Errorf("restocking %q: %w", n, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// AvailableNames returns the names of every available pet, page by page.
// It works with any petstore.PetService: the HTTP client or a local one.
func AvailableNames(ctx context.Context, svc petstore.PetService) ([]string, error) {
	names := []string{}
	f := petstore.PetFilter{Status: petstore.StatusAvailable, Limit: petstore.MaxLimit}
	for {
		page, err := svc.ListPets(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, p := range page.Pets {
			names = append(names, p.Name)
		}
		if page.NextCursor == "" {
			return names, nil
		}
		f.Cursor = page.NextCursor
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("faketest", flag.ContinueOnError)
	url := fs.String("url", envOr("PETSTORE_URL", "http://localhost:8080/v1"), "base URL of the API (env PETSTORE_URL)")
	// -h shows a flag's default, here the variable's value: mask the key.
	key := redact.StringFlag(fs, "key", os.Getenv("PETSTORE_API_KEY"), redact.Keys, "API key (env PETSTORE_API_KEY; prefer the variable, a flag's secret shows in ps)")
	category := fs.Int64("category", 1, "category of restocked pets")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	c, err := client.New(*url, *key)
	if err != nil {
		return err
	}
	if _, err := Restock(ctx, c, *category, fs.Args()); err != nil {
		return err
	}
	names, err := AvailableNames(ctx, c)
	if err != nil {
		return err
	}
	for _, n := range names {
		fmt.Fprintln(out, n)
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// usageError is a malformed command line, already reported with the
// usage by the flag package, for which the process exits with status 2,
// as the flag package's programs do; any other failure exits with status 1.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	err := run(ctx, os.Args[1:], os.Stdout)
	cancel()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp): // the usage asked for is printed: a success
	case errors.As(err, new(usageError)):
		os.Exit(2)
	default:
		log.Fatal(err)
	}
}
