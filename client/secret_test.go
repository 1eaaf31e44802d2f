package client_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/petstorekit/petstore/client"
)

// TestPrintingTheClientHidesTheKey: a client printed in a log line or a
// test failure (fmt's verbs, slog) must not show its API key.
func TestPrintingTheClientHidesTheKey(t *testing.T) {
	t.Parallel()
	const key = "psk_PLANTEDsecret"
	c, err := client.New("https://api.example.com/v1", key)
	if err != nil {
		t.Fatal(err)
	}
	var v any = c // as a logger or a %s of another type would see it
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("calling", "client", c)
	for _, s := range []string{
		fmt.Sprintf("%v", v), fmt.Sprintf("%+v", v), fmt.Sprintf("%#v", v),
		fmt.Sprintf("%s", v), fmt.Sprintf("%q", v), fmt.Sprintf("%x", v),
		fmt.Sprint(v), logged.String(),
	} {
		if strings.Contains(s, "PLANTED") || strings.Contains(s, fmt.Sprintf("%x", "PLANTED")) {
			t.Fatalf("the key shows in %q", s)
		}
	}
	if got, want := fmt.Sprint(c), "petstore client for https://api.example.com/v1"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

// TestBadBaseURLErrorHidesItsPassword: a base URL New refuses is named in
// its error without the password it carries.
func TestBadBaseURLErrorHidesItsPassword(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"ftp://user:s3cret@api.example.com/v1", "https://user:s3cret@api.example.com:bad/v1"} {
		_, err := client.New(base, "psk_P0oI9uY8tR7eW6qA5sD3fG1h")
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("New(%q): %v, want an error without the password", base, err)
		}
	}
}
