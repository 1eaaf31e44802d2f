package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/keycache"
	"github.com/petstorekit/petstore/ratelimit"
)

// The servers a run can start, in the order they are loaded.
const (
	serverBare        = "bare"
	serverBareHeaders = "bare-headers"
	serverMemstore    = "memstore"
	serverSQLite      = "sqlite"
	serverPostgres    = "postgres"
)

var serverNames = []string{serverBare, serverBareHeaders, serverMemstore, serverSQLite, serverPostgres}

// seedPets is how many pets every server holds before the load starts:
// more than one page of 20, so the list also builds its next-page link.
const seedPets = 25

// unrefusedLimits are the Enterprise limits of the load's key: the
// limiter counts and decides every request, and none is ever refused.
var unrefusedLimits = petstore.Limits{PerMinute: 1_000_000_000, PerDay: 1_000_000_000_000}

// target is a running server the load generator can call.
type target struct {
	name   string
	url    string   // http://127.0.0.1:PORT
	token  string   // bearer token; the bare server ignores it
	petIDs []string // ids of the seeded pets, for GET /v1/pets/{id}
	close  func()   // stops the server and removes what it created
}

// startServers starts the named servers. On error, the ones already
// started are closed.
func startServers(ctx context.Context, opts options) (_ []*target, err error) {
	var ts []*target
	defer func() {
		if err != nil {
			closeAll(ts)
		}
	}()
	st := newStack(opts.accessLog, opts.mount)
	for _, name := range opts.servers {
		var t *target
		switch name {
		case serverBare:
			t, err = startBare()
		case serverBareHeaders:
			t, err = startBareHeaders(ctx)
		case serverMemstore:
			t, err = startFullStack(ctx, name, memstore.New(), st, func() {})
		case serverSQLite:
			t, err = startSQLite(ctx, st)
		case serverPostgres:
			t, err = startPostgres(ctx, opts.postgres, opts.pgConns, st)
		default:
			err = fmt.Errorf("unknown server %q", name)
		}
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		ts = append(ts, t)
	}
	return ts, nil
}

func closeAll(ts []*target) {
	for i := len(ts) - 1; i >= 0; i-- {
		ts[i].close()
	}
}

// serve runs h on a new loopback listener until the returned stop is
// called, with the timeouts a production server sets.
func serve(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "loadtest: serve:", err)
		}
	}()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// seededPets are the pets every server starts with: ids 1..seedPets.
func seededPets() []petstore.Pet {
	pets := make([]petstore.Pet, seedPets)
	for i := range pets {
		pets[i] = petstore.Pet{ID: int64(i + 1), Name: "pet " + strconv.Itoa(i+1), CategoryID: 1, Status: petstore.StatusAvailable}
	}
	return pets
}

// startBare serves what a Go user writes first: a ServeMux whose handlers
// write bodies marshalled once at start. It does no authentication, no
// limiting, no logging and no storage: it is the ceiling of throughput.
func startBare() (*target, error) {
	pets := seededPets()
	list, err := json.Marshal(pets[:20])
	if err != nil {
		return nil, err
	}
	one, _ := json.Marshal(pets[0])
	created, _ := json.Marshal(petstore.Pet{ID: seedPets + 1, Name: "Rex", CategoryID: 1, Status: petstore.StatusAvailable})
	write := func(w http.ResponseWriter, status int, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(routeOf("list"), func(w http.ResponseWriter, r *http.Request) { write(w, http.StatusOK, list) })
	mux.HandleFunc(routeOf("get"), func(w http.ResponseWriter, r *http.Request) { write(w, http.StatusOK, one) })
	mux.HandleFunc(routeOf("create"), func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			write(w, http.StatusBadRequest, []byte(`{}`))
			return
		}
		write(w, http.StatusCreated, created)
	})
	u, stop, err := serve(mux)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(pets))
	for i, p := range pets {
		ids[i] = strconv.FormatInt(p.ID, 10)
	}
	return &target{name: serverBare, url: u, petIDs: ids, close: stop}, nil
}

// routeOf is the ServeMux pattern of the endpoint named name.
func routeOf(name string) string {
	for _, e := range endpoints {
		if e.name == name {
			return e.route
		}
	}
	panic("loadtest: no endpoint " + name)
}

// answer is one HTTP response as the client saw it, Date aside.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// startBareHeaders is bare with the full stack's answers: at start it asks
// a memstore full stack each endpoint once and keeps the answer (status,
// every header but Date, body); then a bare ServeMux replays those bytes
// to every request, doing none of the work. Its ratio to bare is what the
// answer's extra headers (X-RateLimit-*, RateLimit, Link, X-Request-Id, ...)
// cost on the wire, in net/http and in the client; a full stack's ratio to
// it is what the stack's work costs.
func startBareHeaders(ctx context.Context) (*target, error) {
	full, err := startFullStack(ctx, serverBareHeaders, memstore.New(), newStack(io.Discard, false), func() {})
	if err != nil {
		return nil, err
	}
	defer full.close()
	mux := http.NewServeMux()
	for _, e := range endpoints {
		a, err := ask(ctx, full, e)
		if err != nil {
			return nil, fmt.Errorf("capture %s: %w", e.label, err)
		}
		mux.HandleFunc(e.route, func(w http.ResponseWriter, r *http.Request) {
			if r.Body != nil {
				if _, err := io.Copy(io.Discard, r.Body); err != nil {
					w.WriteHeader(http.StatusBadRequest)
					return
				}
			}
			h := w.Header()
			for k, v := range a.header {
				// As the full stack, leave the Content-Length of a body
				// this small to net/http, which writes it out of the map.
				if k != "Content-Length" || len(a.body) > 2048 {
					h[k] = v // shared, never modified: net/http copies before writing
				}
			}
			w.WriteHeader(a.status)
			_, _ = w.Write(a.body)
		})
	}
	u, stop, err := serve(mux)
	if err != nil {
		return nil, err
	}
	return &target{name: serverBareHeaders, url: u, petIDs: full.petIDs, close: stop}, nil
}

// ask sends t one request to e, as the load does, and returns the answer;
// an answer other than e's served status is an error.
func ask(ctx context.Context, t *target, e endpoint) (answer, error) {
	var body io.Reader
	if e.body != nil {
		body = bytes.NewReader(e.body)
	}
	req, err := http.NewRequestWithContext(ctx, e.method, t.url+e.path(t, 0), body)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+t.token)
	if e.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return answer{}, err
	}
	if res.StatusCode != e.want {
		return answer{}, fmt.Errorf("status %d, want %d: %s", res.StatusCode, e.want, b)
	}
	res.Header.Del("Date") // the server adds its own
	return answer{status: res.StatusCode, header: res.Header, body: b}, nil
}

// backend is what the full stack needs of a store: pets, keys and
// idempotency records, as in examples/server.
type backend interface {
	petstore.Store
	petstore.IdempotencyStore
}

// storeTimeout is examples/server's deadline on a request's store calls:
// -db-timeout (5 s) on a database, none on memstore.
func storeTimeout(server string) time.Duration {
	if server == serverMemstore {
		return 0
	}
	return 5 * time.Second
}

// startFullStack assembles the API as examples/server does (keys behind
// keycache, in-memory two-window limiter, access log, idempotency store,
// the -db-timeout deadline), seeds it and serves it; cleanup runs after
// the server has stopped.
func startFullStack(ctx context.Context, name string, store backend, st stackConfig, cleanup func()) (_ *target, err error) {
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	svc := petstore.NewService(store)
	var ids []string
	for _, p := range seededPets() {
		pet, err := svc.CreatePet(ctx, petstore.NewPet{Name: p.Name, CategoryID: p.CategoryID, Status: p.Status})
		if err != nil {
			return nil, fmt.Errorf("seed: %w", err)
		}
		ids = append(ids, strconv.FormatInt(pet.ID, 10))
	}
	// No change feed: one process, whose own changes reach its cache at once.
	keys, auth := keycache.NewKeys(store, nil, keycache.Config{}, nil)
	_, secret, err := keys.Create(ctx, "", petstore.PlanEnterprise, unrefusedLimits)
	if err != nil {
		return nil, fmt.Errorf("create key: %w", err)
	}
	api, err := httpx.New(httpx.Config{
		Service:     svc,
		Auth:        auth,
		Logger:      st.logger,
		AccessLog:   st.access,
		Limiter:     ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{Logger: st.logger}),
		Idempotency: store,
		Timeout:     storeTimeout(name),
	})
	if err != nil {
		return nil, err
	}
	var h http.Handler = api
	if st.mount {
		mux := http.NewServeMux()
		mux.Handle("/v1/", api)
		h = mux
	}
	u, stop, err := serve(h)
	if err != nil {
		return nil, err
	}
	return &target{name: name, url: u, token: secret, petIDs: ids, close: func() { stop(); cleanup() }}, nil
}

// startSQLite runs the full stack on a SQLite file in a new temporary
// directory, removed at the end.
func startSQLite(ctx context.Context, st stackConfig) (*target, error) {
	dir, err := os.MkdirTemp("", "petstore-loadtest-")
	if err != nil {
		return nil, err
	}
	db, err := bunopen.Open(ctx, "sqlite:"+filepath.Join(dir, "petstore.db"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cleanup := func() { db.Close(); os.RemoveAll(dir) }
	if err := bunstore.Migrate(ctx, db); err != nil {
		cleanup()
		return nil, err
	}
	return startFullStack(ctx, serverSQLite, bunstore.New(db), st, cleanup)
}

// startPostgres runs the full stack on a schema of its own, created now
// on the server at dsn and dropped with everything in it at the end, so
// runs never see each other's pets.
func startPostgres(ctx context.Context, dsn string, conns int, st stackConfig) (*target, error) {
	admin, err := bunopen.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "petstore_loadtest_" + hex.EncodeToString(b)
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		return nil, err
	}
	drop := func() {
		// Not ctx: the schema must go even when the run was interrupted.
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(dctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			fmt.Fprintf(os.Stderr, "loadtest: drop schema %s: %v\n", schema, err)
		}
		admin.Close()
	}
	u, err := url.Parse(dsn)
	if err != nil {
		drop()
		return nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err := bunopen.Open(ctx, u.String())
	if err != nil {
		drop()
		return nil, err
	}
	// The pool examples/server opens (-db-max-conns, default 10, as many
	// idle): database/sql's default of 2 idle connections would reconnect,
	// and prepare the hot statements again, on most requests at 16 clients.
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	cleanup := func() { db.Close(); drop() }
	if err := bunstore.Migrate(ctx, db); err != nil {
		cleanup()
		return nil, err
	}
	return startFullStack(ctx, serverPostgres, bunstore.New(db), st, cleanup)
}
