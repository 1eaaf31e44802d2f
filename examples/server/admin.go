package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/statuswriter"
	"github.com/petstorekit/petstore/ratelimit"
)

// adminUsage is the operator commands' usage text.
const adminUsage = `usage:
  server [flags] bans list             the bans in force
  server [flags] bans lift KEY_ID|IP   end a key's or an address's ban
  server [flags] keys usage KEY_ID     a key's counts in both windows
With -redis they work on the shared counters directly; with in-memory
limits they ask the running server at its -admin-addr.
`

// errAdminCommand refuses an operator command that is none of
// adminUsage's. It does not quote the arguments: one may be a key's
// secret pasted in the wrong place.
var errAdminCommand = usageError{err: errors.New("unknown command, or not its number of arguments (they are not shown, as one may be a secret)"), usage: adminUsage}

// adminSlack is how much longer than -db-timeout a command waits for the
// running server's admin endpoint, which answers within its own.
const adminSlack = 5 * time.Second

// adminAddr resolves -admin-addr: a bare ":port" listens on loopback
// only; another host must be given explicitly.
func adminAddr(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// usageReport is a key's counts, as the admin endpoint answers them.
type usageReport struct {
	KeyID   string             `json:"keyId"`
	Windows []ratelimit.Window `json:"windows"`
}

// adminOps are the operator operations over a ratelimit.Admin.
type adminOps struct {
	admin ratelimit.Admin
	keys  *petstore.Keys
	now   func() time.Time
	// timeout bounds each operation the endpoint serves (-db-timeout),
	// as a request's store calls are; zero: none (a command bounds its
	// own).
	timeout time.Duration
}

func (o adminOps) bans(ctx context.Context) ([]ratelimit.Ban, error) {
	return o.admin.Bans(ctx, o.now())
}

// lift ends the bans of a key id or an address; it reports whether any
// was in force.
func (o adminOps) lift(ctx context.Context, who string) (bool, error) {
	found := false
	for _, sub := range httpx.LimitSubjects(who) {
		ok, err := o.admin.Lift(ctx, sub, o.now())
		if err != nil {
			return false, err
		}
		found = found || ok
	}
	return found, nil
}

func (o adminOps) usage(ctx context.Context, keyID string) (usageReport, error) {
	all, err := o.keys.List(ctx)
	if err != nil {
		return usageReport{}, err
	}
	for _, k := range all {
		if k.ID == keyID {
			w, err := o.admin.Usage(ctx, "key:"+keyID, ratelimit.Rates(k.EffectiveLimits()), o.now())
			return usageReport{KeyID: keyID, Windows: w}, err
		}
	}
	return usageReport{}, petstore.Errorf(petstore.CodeNotFound, "no key with id %s", keyID)
}

// adminHandler serves the operations for the commands, on -admin-addr
// only: never on the public listener. Each one ends within o.timeout: a
// database or Redis that stopped answering makes it a 503, not a call
// that the command waits on for ever.
func adminHandler(o adminOps) http.Handler {
	mux := http.NewServeMux()
	bounded := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if o.timeout > 0 {
				ctx, cancel := context.WithTimeout(r.Context(), o.timeout)
				defer cancel()
				r = r.WithContext(ctx)
			}
			h(w, r)
		}
	}
	mux.HandleFunc("GET /admin/bans", bounded(func(w http.ResponseWriter, r *http.Request) {
		bans, err := o.bans(r.Context())
		if err != nil {
			writeAdminError(w, r, err)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"bans": bans})
	}))
	mux.HandleFunc("DELETE /admin/bans/{who}", bounded(func(w http.ResponseWriter, r *http.Request) {
		lifted, err := o.lift(r.Context(), r.PathValue("who"))
		if err != nil {
			writeAdminError(w, r, err)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"lifted": lifted})
	}))
	mux.HandleFunc("GET /admin/keys/{id}/usage", bounded(func(w http.ResponseWriter, r *http.Request) {
		u, err := o.usage(r.Context(), r.PathValue("id"))
		if err != nil {
			writeAdminError(w, r, err)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, u)
	}))
	return mux
}

// adminLogKey is the context key of an operator request's logger: the
// server's, with the request's id.
type adminLogKey struct{}

// adminLog gives each request to the operator endpoint what the API's
// chain gives its requests: a request id, answered in X-Request-Id (the
// caller's own when it is a sane token, so that a caller can match its
// logs with the server's), and a "request" line in the server's log once
// it is answered. The handlers log why a request failed through the same
// logger, with the id (writeAdminError).
func adminLog(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		begun := time.Now()
		id := adminRequestID(r.Header.Get("X-Request-Id"))
		w.Header().Set("X-Request-Id", id)
		sw := &statuswriter.Writer{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), adminLogKey{}, logger.With("request_id", id)))
		next.ServeHTTP(sw, r)
		client, _, _ := net.SplitHostPort(r.RemoteAddr)
		logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("client", client),
			slog.String("method", r.Method),
			slog.String("route", r.Pattern), // the mux sets it on r, as on /readyz's
			slog.String("path", r.URL.Path),
			slog.Int("status", cmp.Or(sw.Status, http.StatusOK)),
			slog.Int64("bytes", sw.Bytes),
			slog.Duration("duration", time.Since(begun)),
			slog.String("user_agent", r.UserAgent()),
			slog.String("request_id", id))
	})
}

// adminRequestID keeps a caller's own request id when it is a sane token
// (the API's rule), else makes a UUID v7.
func adminRequestID(sent string) string {
	notToken := func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
	}
	if n := len(sent); n > 0 && n <= 128 && !strings.ContainsFunc(sent, notToken) {
		return sent
	}
	return uuid.Must(uuid.NewV7()).String()
}

// writeAdminError answers err as httpx.WriteError does (an expired
// deadline is 503 with Retry-After, an error that is not the
// application's is a bare 500), and logs why a request failed through the
// request's logger (adminLog): WriteError, outside the API's chain, would
// log through Go's default logger, without the server's format or the
// request's id.
func writeAdminError(w http.ResponseWriter, r *http.Request, err error) {
	logger, _ := r.Context().Value(adminLogKey{}).(*slog.Logger)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e := petstore.AsError(err)
	attrs := []slog.Attr{slog.String("method", r.Method), slog.String("error", err.Error())}
	switch {
	case e.Code == petstore.CodeInternal && errors.Is(err, context.DeadlineExceeded):
		logger.LogAttrs(r.Context(), slog.LevelWarn, "deadline exceeded", attrs...)
		e = petstore.Errorf(petstore.CodeUnavailable, "the request timed out; try again later")
	case e.Code == petstore.CodeInternal && errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		logger.LogAttrs(r.Context(), slog.LevelDebug, "request canceled", attrs...)
		e = petstore.Errorf(petstore.CodeUnavailable, "the request was canceled")
	case e.Code == petstore.CodeInternal:
		logger.LogAttrs(r.Context(), slog.LevelError, "internal error", attrs...)
		body := *e
		body.Status = http.StatusInternalServerError
		httpx.WriteJSON(w, body.Status, &body)
		return
	case e.Code == petstore.CodeUnavailable && err != error(e):
		// A dependency failed the request: the operator must hear why.
		logger.LogAttrs(r.Context(), slog.LevelWarn, e.Message, attrs...)
	}
	// e alone, never its cause: WriteError logs none of these.
	httpx.WriteError(w, r, e)
}

// isLoopback reports whether host (an IP or "localhost") is a loopback
// address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// adminGuard lets through only the requests the operator's commands make
// (issue 26): addressed to the listen address itself, so a DNS-rebinding
// page, whose requests carry its own name in Host, is refused; not from
// a browser page of another origin (Origin, Sec-Fetch-Site); and, when a
// token is configured, carrying it as a bearer token, compared in
// constant time. listen is the address the endpoint listens on; names are
// the host names the operator gave for it (-admin-addr), which the
// commands send, and which a rebinding page cannot (it sends its own).
func adminGuard(next http.Handler, listen net.Addr, token string, names ...string) http.Handler {
	host, port, _ := net.SplitHostPort(listen.String())
	allowed := map[string]bool{listen.String(): true}
	for _, n := range names {
		if n != "" && net.ParseIP(n) == nil {
			allowed[net.JoinHostPort(n, port)] = true
		}
	}
	wildcard := net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified()
	if isLoopback(host) || wildcard {
		allowed[net.JoinHostPort("localhost", port)] = true
	}
	// On a wildcard address the endpoint answers at each of the host's
	// addresses: any IP literal with its port is its own, and no
	// rebinding page can send one (it would have to name itself).
	addressed := func(h string) bool {
		if allowed[h] {
			return true
		}
		hh, p, err := net.SplitHostPort(h)
		return wildcard && err == nil && p == port && net.ParseIP(strings.Trim(hh, "[]")) != nil
	}
	want := sha256.Sum256([]byte("Bearer " + token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch site := r.Header.Get("Sec-Fetch-Site"); {
		case !addressed(r.Host):
			httpx.WriteError(w, r, petstore.Errorf(petstore.CodeInvalidRequest, "the operator endpoint answers only requests addressed to %s", listen))
			return
		case site != "" && site != "same-origin" && site != "none",
			r.Header.Get("Origin") != "" && r.Header.Get("Origin") != "http://"+r.Host:
			httpx.WriteError(w, r, petstore.Errorf(petstore.CodeInvalidRequest, "the operator endpoint refuses requests from other origins' pages"))
			return
		}
		if token != "" {
			got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="petstore-admin"`)
				httpx.WriteError(w, r, petstore.Errorf(petstore.CodeUnauthorized, "the operator endpoint needs PETSTORE_ADMIN_TOKEN as a bearer token"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// adminServer returns the server of adminHandler and its listener on
// -admin-addr (loopback unless a token is configured, checked by the
// flag); run serves it and drains it at shutdown.
func adminServer(addr, token string, o adminOps, logger *slog.Logger) (*http.Server, net.Listener, error) {
	addr = adminAddr(addr)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("-admin-addr: %w", err)
	}
	name, _, _ := net.SplitHostPort(addr)
	return newServer(adminLog(logger, adminGuard(adminHandler(o), ln.Addr(), token, name)), logger), ln, nil
}

// checkAdmin refuses an operator command that is malformed or has
// nowhere to run: neither -redis nor -admin-addr.
func checkAdmin(cfg config) error {
	args := cfg.command
	switch {
	case len(args) == 2 && args[0] == "bans" && args[1] == "list",
		len(args) == 3 && args[0] == "bans" && args[1] == "lift",
		len(args) == 3 && args[0] == "keys" && args[1] == "usage":
	default:
		return errAdminCommand
	}
	// A key's secret pasted where its id goes is neither printed back
	// nor sent to the server, whose access log has every path.
	if len(args) == 3 && !strings.HasPrefix(args[2], petstore.KeyIDPrefix) {
		want := "a key id"
		if args[0] == "bans" {
			want = "a key id or an IP address"
		}
		if _, err := netip.ParseAddr(args[2]); err != nil || args[0] == "keys" {
			return usageError{err: fmt.Errorf("%s %s wants %s (key ids begin %s; keys list shows them); what was given is not shown, as it may be a secret", args[0], args[1], want, petstore.KeyIDPrefix), usage: adminUsage}
		}
	}
	if cfg.redis == "" && cfg.adminAddr == "" {
		return usageError{err: errors.New("limits are in memory: give the running server's -admin-addr (or -redis when it uses Redis)")}
	}
	return nil
}

// runAdmin runs "bans list", "bans lift X" or "keys usage ID": on Redis
// directly with -redis, else through the running server's -admin-addr.
// keys is needed only for "keys usage" on Redis, to know the key's plan.
func runAdmin(ctx context.Context, cfg config, keys *petstore.Keys, stdout io.Writer) error {
	if err := checkAdmin(cfg); err != nil {
		return err
	}
	args := cfg.command
	var call func(method, path string, out any) error
	var ops adminOps
	switch {
	case cfg.redis != "":
		opts, err := redislimit.ParseOptions(cfg.redis)
		if err != nil {
			return fmt.Errorf("-redis: %w", err)
		}
		client := redis.NewClient(opts)
		defer client.Close()
		ops = adminOps{admin: redislimit.New(client, limitPrefix(cfg)), keys: keys, now: time.Now}
	case cfg.adminAddr != "":
		base := "http://" + adminAddr(cfg.adminAddr) + "/admin/"
		call = func(method, path string, out any) error {
			// The server answers within its -db-timeout (taken to be
			// this command's); one that does not answer at all (stopped,
			// or its address a black hole) must not hold the command.
			wait := cfg.dbTimeout + adminSlack
			ctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, method, base+path, nil)
			if cfg.adminToken != "" {
				req.Header.Set("Authorization", "Bearer "+cfg.adminToken)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("the server's admin endpoint (-admin-addr %s) gave no answer within %v (-db-timeout and %v): %w", cfg.adminAddr, wait, adminSlack, err)
			}
			if err != nil {
				return fmt.Errorf("the server's admin endpoint (-admin-addr %s): %w", cfg.adminAddr, err)
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				var e petstore.Error
				_ = json.NewDecoder(res.Body).Decode(&e)
				return fmt.Errorf("admin endpoint: %d %s", res.StatusCode, e.Message)
			}
			return json.NewDecoder(res.Body).Decode(out)
		}
	}
	switch {
	case len(args) == 2 && args[0] == "bans" && args[1] == "list":
		var bans []ratelimit.Ban
		var err error
		if call != nil {
			var body struct{ Bans []ratelimit.Ban }
			err = call("GET", "bans", &body)
			bans = body.Bans
		} else {
			bans, err = ops.bans(ctx)
		}
		if err != nil {
			return err
		}
		if len(bans) == 0 {
			fmt.Fprintln(stdout, "no bans in force")
		}
		for _, b := range bans {
			fmt.Fprintf(stdout, "%s\tuntil %s (%s left)\n", b.Subject, b.Until.UTC().Format(time.RFC3339), time.Until(b.Until).Round(time.Second))
		}
		return nil
	case len(args) == 3 && args[0] == "bans" && args[1] == "lift":
		var lifted bool
		var err error
		if call != nil {
			var body struct{ Lifted bool }
			err = call("DELETE", "bans/"+url.PathEscape(args[2]), &body)
			lifted = body.Lifted
		} else {
			lifted, err = ops.lift(ctx, args[2])
		}
		if err != nil {
			return err
		}
		if !lifted {
			fmt.Fprintf(stdout, "%s was not banned; its strikes are forgotten\n", args[2])
			return nil
		}
		fmt.Fprintf(stdout, "lifted the ban of %s\n", args[2])
		return nil
	case len(args) == 3 && args[0] == "keys" && args[1] == "usage":
		var u usageReport
		var err error
		if call != nil {
			err = call("GET", "keys/"+url.PathEscape(args[2])+"/usage", &u)
		} else {
			u, err = ops.usage(ctx, args[2])
		}
		if err != nil {
			return err
		}
		for _, w := range u.Windows {
			fmt.Fprintf(stdout, "%s\t%d of %d used, %d left, resets %s\n", w.Name, w.Quota-w.Remaining, w.Quota, w.Remaining, w.Reset.UTC().Format(time.RFC3339))
		}
		return nil
	}
	return errAdminCommand
}

// isAdminCommand reports whether args is one runAdmin runs.
func isAdminCommand(args []string) bool {
	return len(args) > 0 && args[0] == "bans" || len(args) > 1 && args[0] == "keys" && args[1] == "usage"
}
