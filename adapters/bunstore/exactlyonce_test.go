package bunstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// staticAuth lets one token in as one key, without the database: the
// test is of the write path, whose faults must not be masked by the
// key lookup's.
type staticAuth struct{ key petstore.APIKey }

func (a staticAuth) Authenticate(_ context.Context, token string) (petstore.APIKey, error) {
	if token != "t" {
		return petstore.APIKey{}, petstore.UnauthorizedError()
	}
	return a.key, nil
}

// TestIdempotentCreateExactlyOnceThroughFaults (issue 26): writers create
// pets through the API, each create with its own Idempotency-Key and name,
// retrying every 503 until it gets 201, while the database link behind a
// real TCP proxy is paused (a black hole), cut, slowed past the request's
// time, and paused again. Pauses and the slow link catch commits whose
// reply is held or late: the database has the pet, the request times
// out. Afterwards, counted on a direct connection, every acknowledged
// name exists exactly once and no name twice, every create ended in 201,
// and the creates under way when the database came back for good ended
// within 5 s of it.
func TestIdempotentCreateExactlyOnceThroughFaults(t *testing.T) {
	for _, b := range linkedBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			directDB, store, proxy := throughProxy(t, b.dsn(t))
			ctx := context.Background()
			const timeout = time.Second
			h, err := httpx.New(httpx.Config{
				Service:     petstore.NewService(store),
				Auth:        staticAuth{petstore.APIKey{ID: "key_faults", ProjectID: "prj_faults", Plan: petstore.PlanEnterprise}},
				Idempotency: store,
				Timeout:     timeout,
			})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)

			const writers = 16
			var (
				mu       sync.Mutex
				acked    = map[string]int{} // name -> 201s received
				stop     = make(chan struct{})
				wg       sync.WaitGroup
				budgetHi = time.Now().Add(90 * time.Second) // the retry budget of the whole run
			)
			create := func(name string) error {
				for attempt := 0; ; attempt++ {
					if time.Now().After(budgetHi) {
						return fmt.Errorf("%s: no 201 within the retry budget (%d attempts)", name, attempt)
					}
					req, _ := http.NewRequest("POST", srv.URL+"/v1/pets", strings.NewReader(`{"name":"`+name+`","categoryId":1}`))
					req.Header.Set("Authorization", "Bearer t")
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Idempotency-Key", name)
					res, err := srv.Client().Do(req)
					if err != nil {
						return err
					}
					res.Body.Close()
					switch res.StatusCode {
					case http.StatusCreated:
						mu.Lock()
						acked[name]++
						mu.Unlock()
						return nil
					case http.StatusServiceUnavailable:
						time.Sleep(20 * time.Millisecond)
					default:
						return fmt.Errorf("%s: status %d", name, res.StatusCode)
					}
				}
			}
			errs := make(chan error, writers)
			for w := range writers {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						if err := create(fmt.Sprintf("w%d-%d", w, i)); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			// waitCreated waits until n more pets have been acknowledged,
			// so each fault strikes a stream of writes.
			waitCreated := func(n int) {
				t.Helper()
				mu.Lock()
				want := len(acked) + n
				mu.Unlock()
				deadline := time.Now().Add(30 * time.Second)
				for {
					mu.Lock()
					got := len(acked)
					mu.Unlock()
					if got >= want {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("only %d of %d creates acknowledged", got, want)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			waitCreated(50)
			for _, fault := range []struct {
				name  string
				start func()
				hold  time.Duration
			}{
				{"pause", proxy.Pause, 2 * timeout},
				{"cut", proxy.Cut, timeout / 2},
				// A round trip of half the request's time: a create's few
				// round trips outlast it, some with the commit on its way.
				{"slow", func() { proxy.SetLatency(timeout / 4) }, 3 * timeout},
				{"pause", proxy.Pause, 3 * timeout},
			} {
				fault.start()
				time.Sleep(fault.hold) // the fault's length: a duration, not a wait for an outcome
				proxy.Restore()
				waitCreated(50)
			}
			// One last pause; when it ends the writers finish the creates
			// under way and stop: all must end within 5 s of the return.
			proxy.Pause()
			time.Sleep(2 * timeout)
			close(stop)
			proxy.Restore()
			back := time.Now()
			wg.Wait()
			if took := time.Since(back); took > 5*time.Second {
				t.Errorf("the creates under way took %v after the database came back, want at most 5 s", took)
			}
			close(errs)
			for err := range errs {
				t.Error(err)
			}

			var rows []struct {
				Name string `bun:"name"`
				N    int    `bun:"n"`
			}
			if err := directDB.NewRaw("SELECT name, COUNT(*) AS n FROM pets GROUP BY name").Scan(ctx, &rows); err != nil {
				t.Fatal(err)
			}
			stored := map[string]int{}
			for _, r := range rows {
				stored[r.Name] = r.N
				if r.N != 1 {
					t.Errorf("%s: stored %d times", r.Name, r.N)
				}
			}
			for name, n := range acked {
				if n != 1 || stored[name] != 1 {
					t.Errorf("%s: acknowledged %d times, stored %d times; want once and once", name, n, stored[name])
				}
			}
			for name := range stored {
				if acked[name] == 0 {
					t.Errorf("%s: stored but never acknowledged", name)
				}
			}
			t.Logf("%d creates acknowledged through 2 pauses, a cut, a slow link and a final pause", len(acked))
		})
	}
}

// TestOrphanedCreateFreesItsKey (issue 26): a create whose link goes
// into a black hole after the record's insert, and stays there, leaves a
// transaction the database still holds open. The key must be free again
// once the request's time has run out twice over (the request plus the
// database timeout), not when the link is repaired: another server's
// create with the same key runs within that bound.
func TestOrphanedCreateFreesItsKey(t *testing.T) {
	for _, b := range linkedBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			directDB, s, proxy := throughProxy(t, b.dsn(t))
			other := bunstore.New(directDB) // another server, with a healthy link
			ctx := context.Background()

			rec := petstore.IdempotencyRecord{Scope: "key_orphan", Key: "k", RequestHash: "h", CreatedAt: time.Now()}
			const timeout = time.Second
			rctx, cancel := context.WithTimeout(ctx, timeout)
			_, _, err := s.CreateOnce(rctx, rec, func(ctx context.Context) (petstore.IdempotencyRecord, bool) {
				proxy.Pause() // the record is inserted; nothing more reaches the database
				return rec, true
			})
			cancel()
			if err == nil {
				t.Fatal("a create whose link went into a black hole succeeded")
			}
			t.Cleanup(proxy.Restore)

			start := time.Now()
			octx, cancel := context.WithTimeout(ctx, 10*timeout)
			defer cancel()
			_, ran, err := other.CreateOnce(octx, rec, func(context.Context) (petstore.IdempotencyRecord, bool) {
				out := rec
				out.Status = 201
				return out, true
			})
			if err != nil || !ran {
				t.Fatalf("the other server's create with the key: ran %v, %v after %v; want it to run", ran, err, time.Since(start))
			}
			// The orphan ended at most a timeout after its last statement,
			// which came before the request's own timeout.
			if took := time.Since(start); took > 2*timeout+time.Second {
				t.Fatalf("the key was held %v after the request ended, want at most the database timeout (%v)", took, timeout)
			}
		})
	}
}

// faultAfterCreate is a PetService whose CreatePet, once the pet's
// insert has gone out, strikes the link with fault, the first time.
type faultAfterCreate struct {
	petstore.PetService
	once  sync.Once
	fault func()
}

func (f *faultAfterCreate) CreatePet(ctx context.Context, p petstore.NewPet) (petstore.Pet, error) {
	pet, err := f.PetService.CreatePet(ctx, p)
	f.once.Do(f.fault)
	return pet, err
}

// TestFaultAsTheWriteGoesOut (issue 26): the link is cut, or paused, the
// moment the pet's insert has gone out, before the record's response and
// the commit: the request cannot learn the outcome and answers 503; once
// the link is back, the retry with the same key gets a 201 within 5 s,
// and one pet exists.
func TestFaultAsTheWriteGoesOut(t *testing.T) {
	for _, b := range linkedBackends {
		for _, fault := range []string{"cut", "pause"} {
			t.Run(b.name+"/"+fault, func(t *testing.T) {
				t.Parallel()
				directDB, store, proxy := throughProxy(t, b.dsn(t))
				ctx := context.Background()
				strike := proxy.Cut
				if fault == "pause" {
					strike = proxy.Pause
				}
				h, err := httpx.New(httpx.Config{
					Service:     &faultAfterCreate{PetService: petstore.NewService(store), fault: strike},
					Auth:        staticAuth{petstore.APIKey{ID: "key_faults", ProjectID: "prj_faults", Plan: petstore.PlanEnterprise}},
					Idempotency: store,
					Timeout:     time.Second,
				})
				if err != nil {
					t.Fatal(err)
				}
				post := func() *httptest.ResponseRecorder {
					r := httptest.NewRequest("POST", "/v1/pets", strings.NewReader(`{"name":"Struck","categoryId":1}`))
					r.Header.Set("Authorization", "Bearer t")
					r.Header.Set("Content-Type", "application/json")
					r.Header.Set("Idempotency-Key", "struck-1")
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					return w
				}
				if w := post(); w.Code != http.StatusServiceUnavailable {
					t.Fatalf("the struck create: %d %s, want 503: its outcome is unknown", w.Code, w.Body)
				}
				proxy.Restore()
				w := retryUntilCreated(t, post)
				if again := post(); again.Code != http.StatusCreated || again.Header().Get("Idempotent-Replayed") != "true" || again.Body.String() != w.Body.String() {
					t.Fatalf("the replay: %d %s", again.Code, again.Body)
				}
				var n int
				if err := directDB.NewRaw("SELECT COUNT(*) FROM pets WHERE name = 'Struck'").Scan(ctx, &n); err != nil || n != 1 {
					t.Fatalf("%d pets named Struck (%v), want 1", n, err)
				}
			})
		}
	}
}

// On MySQL and MariaDB the timeouts that bound a create's transaction are
// the session's: a connection must get the defaults back before another
// transaction draws it from the pool, or that one inherits the request's
// second or two of lock wait.
func TestCreateOnceLeavesNoSessionTimeouts(t *testing.T) {
	db := openMySQL(t)
	db.SetMaxOpenConns(1) // the next query gets the create's connection
	s := bunstore.New(db)
	ctx := context.Background()
	var before int
	if err := db.QueryRowContext(ctx, "SELECT @@SESSION.innodb_lock_wait_timeout").Scan(&before); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rec := petstore.IdempotencyRecord{Scope: "key_session", Key: "k", RequestHash: "h", CreatedAt: time.Now()}
	if _, _, err := s.CreateOnce(rctx, rec, func(ctx context.Context) (petstore.IdempotencyRecord, bool) {
		rec.Status = http.StatusCreated
		return rec, true
	}); err != nil {
		t.Fatal(err)
	}
	var after int
	if err := db.QueryRowContext(ctx, "SELECT @@SESSION.innodb_lock_wait_timeout").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("innodb_lock_wait_timeout after an idempotent create: %d s, want the session's %d s back", after, before)
	}
}

// linkedBackends are the databases reached over a TCP link, which a
// fault proxy can cut or pause.
var linkedBackends = []struct {
	name string
	dsn  func(testing.TB) string
}{
	{"PostgreSQL", testenv.PostgresSchema},
	{"MariaDB", testenv.MySQLDatabase},
}

// throughProxy opens dsn's database twice: directly (migrated), for the
// counts and for other servers with a healthy link, and through a fault
// proxy, as the store whose link the test breaks.
func throughProxy(t *testing.T, dsn string) (*bun.DB, *bunstore.Store, *faultproxy.Proxy) {
	t.Helper()
	proxy, through := faultproxy.StartFor(t, dsn)
	direct := openDSN(t, dsn)
	proxied, err := bunopen.Open(context.Background(), through)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxied.Close() })
	return direct, bunstore.New(proxied), proxy
}

// TestWaitersOfAFirstCallNotKept: calls waiting on one Idempotency-Key
// while the first call's response is not kept (a 5xx) run after it, or
// replay one of them that ran: none fails. On MariaDB the first's rollback
// deadlocks the waiters' inserts, and they must try again.
func TestWaitersOfAFirstCallNotKept(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := bunstore.New(b.open(t))
			ctx := context.Background()
			for round := range 3 {
				rec := petstore.IdempotencyRecord{Scope: "key_a", Key: fmt.Sprintf("waiters-%d", round), RequestHash: "h", CreatedAt: time.Now().UTC()}
				started := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() {
					_, _, err := s.CreateOnce(ctx, rec, func(ctx context.Context) (petstore.IdempotencyRecord, bool) {
						if _, err := s.CreatePet(ctx, petstore.NewPet{Name: "first", CategoryID: 1}); err != nil {
							t.Errorf("first create: %v", err)
						}
						close(started)
						time.Sleep(300 * time.Millisecond) // the waiters queue on the key meanwhile
						return rec, false
					})
					if err != nil {
						t.Errorf("first call: %v", err)
					}
				})
				<-started
				errs := make([]error, 4)
				for i := range errs {
					wg.Go(func() {
						_, _, errs[i] = s.CreateOnce(ctx, rec, func(ctx context.Context) (petstore.IdempotencyRecord, bool) {
							if _, err := s.CreatePet(ctx, petstore.NewPet{Name: "waiter", CategoryID: 1}); err != nil {
								return rec, false
							}
							out := rec
							out.Completed, out.Status, out.Body = true, 201, []byte("{}")
							return out, true
						})
					})
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Errorf("round %d, waiter %d: %v", round, i, err)
					}
				}
			}
		})
	}
}

// retryUntilCreated repeats post, as a client retries with the same
// Idempotency-Key, while it answers 503 (the link just came back), for 5 s
// at most, and fails unless it ends with 201.
func retryUntilCreated(t *testing.T, post func() *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	t.Helper()
	back := time.Now()
	w := post()
	for w.Code == http.StatusServiceUnavailable && time.Since(back) < 5*time.Second {
		time.Sleep(20 * time.Millisecond)
		w = post()
	}
	if w.Code != http.StatusCreated {
		t.Fatalf("the retry %v after the link came back: %d %s, want 201", time.Since(back), w.Code, w.Body)
	}
	return w
}
