// Command server serves the Petstore /v1 API: go run ./examples/server.
//
// With no -keys it creates one demo key on the Pro plan and prints it once
// with a ready curl line. It drains in-flight requests on SIGINT or SIGTERM.
// Storage is in memory for now; see the README for the flags to come.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// shutdownGrace bounds how long in-flight requests may take to finish.
const shutdownGrace = 15 * time.Second

// run serves until ctx is done, then shuts down gracefully.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := parseConfig(args, getenv, stdout)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stdout, nil))

	store := memstore.New()
	keys := petstore.NewKeys(store)
	for _, k := range cfg.keys {
		if _, err := keys.Ensure(ctx, k.secret, k.plan, k.limits); err != nil {
			return fmt.Errorf("store key: %w", err)
		}
	}
	demo := ""
	if len(cfg.keys) == 0 {
		_, secret, err := keys.Create(ctx, "", petstore.PlanPro, petstore.Limits{})
		if err != nil {
			return fmt.Errorf("create demo key: %w", err)
		}
		demo = secret
	}

	api, err := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: keys, Logger: logger})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	base := "http://" + displayAddr(ln.Addr())
	if demo != "" {
		// Shown once, on purpose: the store keeps only its hash.
		fmt.Fprintf(stdout, "petstore: demo API key (Pro plan), shown only now: %s\n", demo)
		fmt.Fprintf(stdout, "try: curl -H 'Authorization: Bearer %s' %s/v1/pets\n", demo, base)
	}
	// Printed last: it tells scripts and tests that startup is complete.
	fmt.Fprintf(stdout, "petstore: listening on %s/v1 (OpenAPI document: %s/v1/openapi.json)\n", base, base)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(stdout, "petstore: stopped")
	return nil
}

// displayAddr turns a wildcard listen address into one a curl can reach.
func displayAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		port := 0
		if ok {
			port = tcp.Port
		}
		return fmt.Sprintf("localhost:%d", port)
	}
	return tcp.String()
}
