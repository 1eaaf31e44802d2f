// Command loadtest measures the petstore API under load and compares it
// with a bare net/http handler, in one run on one machine:
//
//	go run ./examples/loadtest
//
// It starts, each as a real HTTP server on 127.0.0.1:
//
//   - bare: a net/http handler writing fixed bodies (20 pets for the list,
//     one pet for a get, a fixed 201 body for a create after reading the
//     request body), the floor every other figure is compared with;
//   - bare-headers: the same ServeMux replaying, byte for byte, the answers
//     a memstore full stack gave once at start (status, every header but
//     Date, body): what the full stack's answers cost without its work;
//   - memstore: the full stack (authentication, two-window rate limits,
//     request ids, a JSON access log that is really formatted, as
//     examples/server -log-format json formats it, into a buffer) over
//     adapters/memstore;
//   - sqlite: the same full stack over adapters/bunstore on a SQLite file
//     in a temporary directory;
//   - postgres: the same over PostgreSQL, when PETSTORE_TEST_POSTGRES is
//     set (a fresh schema, dropped at the end).
//
// Each server is seeded with 25 pets and one Enterprise key whose limits
// are so high that the limiter decides every request but never refuses
// one. The load generator runs in this process: -conns keep-alive
// HTTP/1.1 connections, each sending its next request as soon as the
// previous response has been read. For every round, endpoint and server
// in turn it loads the server for -duration, so the servers alternate and
// share whatever the machine is doing equally; each round starts one
// server further on, so that none always runs first, and each measurement
// starts with the heap collected, so that none pays for the garbage of the
// one before. The result is a Markdown table of the median req/s over
// rounds, p50 and p99 latency over every request of every round, the
// process's CPU time per served request (the load generator's share, the
// same for every server, plus the server's: it stays steady when other
// programs take CPU, where req/s does not), and the ratio to bare (and to
// bare-headers when it ran), followed by the share of the machine's CPU
// the run got. A ratio is that of the medians; in brackets are the
// lowest and highest ratio within a single round, which show how far one
// round's figures stray on this machine.
//
// Only responses with the expected status (200 for the GETs, 201 for the
// POST) count as requests served; any other status or transport error is
// counted and reported, and makes the program exit with status 1.
//
// Flags:
//
//	-duration 3s      how long each server is loaded per endpoint and round
//	-rounds 3         how many times the servers alternate
//	-conns 16         concurrent connections
//	-only LIST        servers to run, e.g. bare,memstore (default: all available)
//	-endpoints LIST   list,get,create (default: all three)
//	-warmup 500ms     unmeasured load per server and endpoint before round 1
//	-pg-conns 10      the postgres server's pool size (examples/server's
//	                  -db-max-conns)
//	-cpuprofile FILE  write a CPU profile of the whole run to FILE
//	-memprofile FILE  write an allocation profile of the whole run to FILE
//	                  (go tool pprof -sample_index=alloc_space): the
//	                  garbage each request leaves is CPU the collector
//	                  spends later, often on another request
//	-serve            start the servers and serve until interrupted, printing
//	                  for each its URL, bearer token and seeded pet ids, so
//	                  another load generator (wrk, hey, k6) can load them
//	-log FILE         append the full stacks' access logs to FILE instead of
//	                  formatting them into io.Discard
//	-mount            serve each full stack under a prefix of a ServeMux of
//	                  its own, mux.Handle("/v1/", api), as examples/server
//	                  and most importers do
//
// Without -mount the API's handler is the server's handler: it routes with
// an http.ServeMux of its own, as bare does, so the two differ only in the
// stack's work. A prefix mount adds a second ServeMux match per request,
// which for a prefix pattern such as "/v1/" also tries the path with a
// trailing slash (ServeMux's redirect check); -mount measures it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/petstorekit/petstore/internal/logbuf"
)

// options are the knobs of one run.
type options struct {
	duration  time.Duration // per server, endpoint and round
	warmup    time.Duration // unmeasured load before the first round
	rounds    int
	conns     int
	servers   []string // names from serverNames, in run order
	endpoints []string // names from endpointNames
	postgres  string   // PostgreSQL DSN; "" leaves the postgres server out
	pgConns   int      // the postgres server's connection pool size
	accessLog io.Writer
	// cpuProfile is where main writes a CPU profile of the run ("": none).
	cpuProfile string
	// memProfile is where main writes an allocation profile of the run
	// ("": none).
	memProfile string
	// serve starts the servers and serves until interrupted, loading none.
	serve bool
	// mount serves the full stacks under a ServeMux prefix (stackConfig).
	mount bool
}

func main() {
	opts, err := parseFlags(os.Args[1:], os.Getenv("PETSTORE_TEST_POSTGRES"))
	if errors.Is(err, flag.ErrHelp) {
		return // the usage asked for is printed: a success
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// As in examples/server: lines are buffered and written out in
	// batches, so that a line costs a copy rather than a system call.
	logs := logbuf.New(opts.accessLog, 0)
	defer logs.Close()
	opts.accessLog = logs
	if opts.cpuProfile != "" {
		f, err := os.Create(opts.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadtest: -cpuprofile:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	if opts.memProfile != "" {
		// Every allocation sampled, so that per-request bytes read true.
		runtime.MemProfileRate = 1
		defer writeMemProfile(opts.memProfile)
	}
	if opts.serve {
		if err := serveOnly(ctx, opts, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
			os.Exit(1)
		}
		return
	}
	cpu0, _ := processCPU()
	start := time.Now()
	results, err := run(ctx, opts, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
	wall := time.Since(start)
	cpu1, cpuKnown := processCPU()
	fmt.Println(describeRun(opts))
	fmt.Println()
	writeTable(os.Stdout, results)
	if cpuKnown {
		fmt.Println()
		fmt.Println(describeCPU(cpu1-cpu0, wall))
	}
	if summary := errorSummary(results); summary != "" {
		fmt.Fprintln(os.Stderr)
		fmt.Fprint(os.Stderr, summary)
		os.Exit(1)
	}
}

// writeMemProfile writes the allocations of the run so far to file.
func writeMemProfile(file string) {
	f, err := os.Create(file)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest: -memprofile:", err)
	}
}

// parseFlags reads the command line. postgresDSN is the value of
// PETSTORE_TEST_POSTGRES: the postgres server runs only when it is set.
func parseFlags(args []string, postgresDSN string) (options, error) {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	duration := fs.Duration("duration", 3*time.Second, "how long each server is loaded per endpoint and round")
	warmup := fs.Duration("warmup", 500*time.Millisecond, "unmeasured load per server and endpoint before the first round (0: none)")
	rounds := fs.Int("rounds", 3, "how many times the servers alternate; req/s is the median over rounds")
	conns := fs.Int("conns", 16, "concurrent keep-alive connections")
	only := fs.String("only", "", "comma-separated servers to run: "+strings.Join(serverNames, ",")+" (default: all; postgres needs PETSTORE_TEST_POSTGRES)")
	endpoints := fs.String("endpoints", strings.Join(endpointNames(), ","), "comma-separated endpoints: list (GET /v1/pets?limit=20), get (GET /v1/pets/{id}), create (POST /v1/pets)")
	pgConns := fs.Int("pg-conns", 10, "connections in the postgres server's pool (examples/server's -db-max-conns)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (client and servers) to this file, for go tool pprof")
	memProfile := fs.String("memprofile", "", "write an allocation profile of the whole run (every allocation sampled, which slows the run) to this file, for go tool pprof -sample_index=alloc_space")
	serve := fs.Bool("serve", false, "start the servers, print their URLs, tokens and pet ids, and serve until interrupted, for another load generator such as wrk")
	mount := fs.Bool("mount", false, `serve each full stack under a prefix of a ServeMux of its own, mux.Handle("/v1/", api), as examples/server does (default: the API's handler is the server's, as bare's ServeMux is)`)
	logFile := fs.String("log", "", "append the full stacks' JSON access logs to this file (default: format them into io.Discard)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *duration <= 0 || *rounds < 1 || *conns < 1 || *pgConns < 1 || *warmup < 0 {
		return options{}, fmt.Errorf("-duration must be positive, -rounds, -conns and -pg-conns at least 1, -warmup not negative")
	}
	opts := options{duration: *duration, warmup: *warmup, rounds: *rounds, conns: *conns, postgres: postgresDSN, pgConns: *pgConns, accessLog: io.Discard, cpuProfile: *cpuProfile, memProfile: *memProfile, serve: *serve, mount: *mount}

	var err error
	if opts.servers, err = pickServers(*only, postgresDSN != ""); err != nil {
		return options{}, err
	}
	if opts.endpoints, err = pickList("-endpoints", *endpoints, endpointNames()); err != nil {
		return options{}, err
	}
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return options{}, fmt.Errorf("-log: %w", err)
		}
		opts.accessLog = f // closed when the process exits
	}
	return opts, nil
}

// pickServers resolves -only. Without it every server runs, postgres only
// when a DSN is configured; naming postgres without one is an error.
func pickServers(only string, havePostgres bool) ([]string, error) {
	if only == "" {
		var all []string
		for _, s := range serverNames {
			if s != serverPostgres || havePostgres {
				all = append(all, s)
			}
		}
		return all, nil
	}
	picked, err := pickList("-only", only, serverNames)
	if err != nil {
		return nil, err
	}
	for _, s := range picked {
		if s == serverPostgres && !havePostgres {
			return nil, fmt.Errorf("-only postgres needs PETSTORE_TEST_POSTGRES (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
		}
	}
	return picked, nil
}

// pickList parses a comma-separated list of names from known, returning
// them in known's order without duplicates.
func pickList(flagName, list string, known []string) ([]string, error) {
	want := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		found := false
		for _, k := range known {
			found = found || k == s
		}
		if !found {
			return nil, fmt.Errorf("%s: unknown name %q; choose from %s", flagName, s, strings.Join(known, ","))
		}
		want[s] = true
	}
	var out []string
	for _, k := range known {
		if want[k] {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: name at least one of %s", flagName, strings.Join(known, ","))
	}
	return out, nil
}

// stackConfig is how every full stack of a run logs and is served.
type stackConfig struct {
	// The logs, as examples/server -log-format json writes them: every
	// line formatted, as JSON, to one writer.
	logger *slog.Logger // everything but the access log
	access *slog.Logger // a line per request
	// mount serves the API under a prefix of a ServeMux of its own,
	// mux.Handle("/v1/", api), as examples/server and most importers do;
	// without it the API's handler is the server's, as bare's ServeMux is.
	mount bool
}

func newStack(w io.Writer, mount bool) stackConfig {
	return stackConfig{logger: slog.New(slog.NewJSONHandler(w, nil)), access: slog.New(slog.NewJSONHandler(w, nil)), mount: mount}
}
