package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/petstoretest"
)

func TestAvailableNames(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithPets(
		petstore.NewPet{Name: "Rex", CategoryID: 1, Status: petstore.StatusAvailable},
		petstore.NewPet{Name: "Tom", CategoryID: 1, Status: petstore.StatusSold},
		petstore.NewPet{Name: "Kiwi", CategoryID: 2, Status: petstore.StatusAvailable},
	))
	got, err := AvailableNames(context.Background(), srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Rex", "Kiwi"}; !slices.Equal(got, want) {
		t.Fatalf("AvailableNames = %v, want %v", got, want)
	}
}

func TestRestockThroughRateLimit(t *testing.T) {
	t.Parallel()
	// clk is shared by the fake and the client, so a 429's Retry-After
	// passes without the test waiting.
	clk := testenv.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	// Three requests a minute: the fourth create is refused with 429, and
	// the client waits out Retry-After on the shared clock.
	srv := petstoretest.NewServer(t,
		petstoretest.WithLimits(petstore.Limits{PerMinute: 3, PerDay: 100}),
		petstoretest.WithClock(clk.Now))
	c := srv.Client(client.WithClock(clk.Now, clk.Sleep))
	pets, err := Restock(context.Background(), c, 7, []string{"a", "b", "c", "d", "e"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pets) != 5 || len(srv.Pets()) != 5 {
		t.Fatalf("restocked %d, store holds %d; want 5 and 5", len(pets), len(srv.Pets()))
	}
	var saw429 bool
	for _, r := range srv.Requests() {
		saw429 = saw429 || r.Status == 429
	}
	if !saw429 {
		t.Fatal("the limit was never reached; the test proves nothing")
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name     string
		fault    petstoretest.Fault
		wantErr  string
		wantPets int
	}{
		{"brief outage is retried", petstoretest.Fault{Route: "POST /pets", Times: 2, Status: 503}, "", 2},
		{"lost response is not duplicated", petstoretest.Fault{Route: "POST /pets", Times: 1, Status: 502, After: true}, "", 2},
		{"lasting failure is reported", petstoretest.Fault{Route: "POST /pets", Status: 500}, petstore.CodeInternal, 0},
		{"validation error is reported", petstoretest.Fault{Route: "POST /pets", Times: 1, Error: &petstore.Error{Code: petstore.CodeInvalidRequest, Message: "name is required"}}, petstore.CodeInvalidRequest, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := testenv.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
			srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
			srv.Inject(tt.fault)
			c := srv.Client(client.WithClock(clk.Now, clk.Sleep))
			_, err := Restock(context.Background(), c, 1, []string{"Rex", "Tom"})
			if got := petstore.ErrorCode(err); got != tt.wantErr {
				t.Fatalf("Restock error %v, want code %q", err, tt.wantErr)
			}
			var perr *petstore.Error
			if err != nil && !errors.As(err, &perr) {
				t.Fatalf("error %v does not wrap a *petstore.Error", err)
			}
			if n := len(srv.Pets()); n != tt.wantPets {
				t.Fatalf("store holds %d pets, want %d", n, tt.wantPets)
			}
		})
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithPets(petstore.NewPet{Name: "Old", CategoryID: 1, Status: petstore.StatusAvailable}))
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-url", srv.URL, "-key", srv.Key(), "New"}, &out); err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(out.String()); !slices.Equal(got, []string{"Old", "New"}) {
		t.Fatalf("output %q", out.String())
	}
}

// TestHelpShowsNoKey: -h prints every flag's default, and -key defaults
// to PETSTORE_API_KEY; the key must not show.
func TestHelpShowsNoKey(t *testing.T) {
	t.Setenv("PETSTORE_API_KEY", "psk_PLANTEDapiKEY7rT2mX9qL4vB8nZ3")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	err = run(context.Background(), []string{"-h"}, io.Discard)
	os.Stderr = stderr
	w.Close()
	var out bytes.Buffer
	io.Copy(&out, r)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	if strings.Contains(out.String(), "PLANTED") {
		t.Errorf("-h shows the API key:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "-key") {
		t.Errorf("-h does not list -key:\n%s", out.String())
	}
}

// TestExitStatus: -h prints the usage and succeeds; a malformed command
// line exits with status 2 and says why, as the flag package's programs
// (and examples/server) do; neither mentions "help requested".
func TestExitStatus(t *testing.T) {
	bin := testenv.Build(t, ".")
	for _, tt := range []struct {
		args []string
		want int
	}{{[]string{"-h"}, 0}, {[]string{"-nosuch"}, 2}, {[]string{"-category", "x"}, 2}} {
		cmd := exec.Command(bin, tt.args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.want || !strings.Contains(stderr.String(), "Usage of faketest") || strings.Contains(stderr.String(), "help requested") {
			t.Errorf("%q: exit status %d, want %d, with the usage on stderr:\n%s", tt.args, code, tt.want, stderr.String())
		}
	}
}
