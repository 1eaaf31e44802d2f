// Package client is a Go client for the Petstore /v1 API. *Client
// implements petstore.PetService, so code written against that interface
// runs against a local petstore.Service or a remote petstore alike.
//
// The client does what the spec asks of well-behaved clients: on 429 it
// waits for Retry-After (or X-RateLimit-Reset; a time either names is read
// against the answer's Date, not the client's clock), on 5xx (but 501),
// idempotency_key_in_use and network errors it backs off exponentially
// with full jitter, at least for the answer's Retry-After, and it stops
// after a bounded number of attempts and a bounded total time. Until a
// 429's Retry-After has passed, the client's other calls send nothing
// either: they wait too, or return that 429 at once when the wait is past
// WithMaxWait, since each request refused meanwhile counts towards a ban.
// It never retries a request answered with api_key_banned, and it retries
// a POST only because every CreatePet carries an Idempotency-Key, reused
// across that call's attempts, so a retry never creates a second pet on a
// server that keeps those keys (httpx.Config.Idempotency, as
// examples/server does); one that ignores them may create two when an
// answer is lost.
//
// WithCache makes the client revalidate the GET answers it has seen
// (If-None-Match) instead of fetching them again.
//
// The client reports what the server marks deprecated through the logger
// of WithLogger: one warning per Client and operation.
//
// Error responses come back as *petstore.Error (use errors.As) with the
// HTTP status in Status. When the client gives up on an answer that said
// when to try again (a 429, or a 5xx with Retry-After), the
// *petstore.Error comes wrapped in a *RetryAfterError, which tells how
// long the server asked to wait.
package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"math"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"golang.org/x/net/idna"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/httpcode"
	"github.com/petstorekit/petstore/internal/redact"
)

// Defaults of the retry policy; see the With* options.
const (
	DefaultMaxAttempts = 4
	DefaultMaxWait     = 2 * time.Minute
	DefaultBaseDelay   = 200 * time.Millisecond
	DefaultMaxDelay    = 10 * time.Second
	DefaultUserAgent   = "petstore-go-client/1"
)

// maxResponse bounds a response body read into memory. A page of 100 pets
// is a few KB; anything near this is not a petstore answering.
const maxResponse = 4 << 20

// Client calls a Petstore /v1 API. It is safe for concurrent use.
type Client struct {
	base      *url.URL // ends with the API's base path, without a trailing slash
	apiKey    string
	hc        *http.Client
	attempts  int
	maxWait   time.Duration
	baseDelay time.Duration
	maxDelay  time.Duration
	now       func() time.Time
	sleep     func(ctx context.Context, d time.Duration) error
	userAgent string
	logger    *slog.Logger
	cache     *Cache // nil: none
	keyHash   string // the credentials' SHA-256, for cache keys (see cacheKey)

	mu   sync.Mutex
	rl   RateLimit
	rlOK bool
	// sent counts the requests sent; rlSent is the count of the one rl
	// came from, so that a slow answer to an earlier request does not
	// replace the figures of a later one.
	sent, rlSent uint64
	// No call sends a request before hold: the end of the latest
	// Retry-After of a 429 rate_limited, which holdErr is. Every 429 is a
	// strike towards a ban, so the client's other calls wait it out too.
	hold    time.Time
	holdErr *petstore.Error
	// No request is conditional (If-None-Match) before condHold: the
	// latest end of the Retry-Afters of conditional requests' 429s (see
	// attempt).
	condHold time.Time
	// warned holds the operations whose deprecation has been logged.
	warned map[string]bool
}

var _ petstore.PetService = (*Client)(nil)

// String describes the client by its base URL only, so that a client
// printed in a log line or a test failure (%v, %+v, slog) never shows its
// API key, as fmt would print the struct's fields otherwise.
func (c *Client) String() string { return "petstore client for " + c.base.Redacted() }

// GoString is String, for %#v, which would print the fields otherwise.
func (c *Client) GoString() string { return c.String() }

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client used for every attempt, for example
// petstoretest's in-memory one. Its Timeout bounds each attempt. The
// client uses a copy that follows no redirect leaving the base URL's
// origin (scheme, host and port, compared as browsers do: case aside, a
// host name in Unicode or punycode alike, an IPv6 address however
// written, a trailing dot another host,
// and a default port written or not), so the key never goes elsewhere,
// nor a 301 or 302 to a create, which net/http would follow with a GET.
// A call stopped by the redirect policy (past 10 redirects: a loop, or
// hc's own CheckRedirect) fails at once, not retried: a retry would meet
// the same redirects. nil keeps the default (30 s Timeout,
// http.DefaultTransport).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// WithMaxAttempts sets how many times one call may be tried in all
// (default 4). 1 disables retries.
func WithMaxAttempts(n int) Option {
	return func(c *Client) { c.attempts = max(n, 1) }
}

// WithMaxWait bounds the total time of one call, attempts and waits
// together (default 2 minutes). The client gives up at once, returning the
// last error, when a wait would take it past the bound, or past the
// deadline of the call's context; an attempt still running when the bound
// passes is cut short, an error IsRetryable reports true for. Zero means
// one attempt, never retried, bounded only by the HTTP client's Timeout.
func WithMaxWait(d time.Duration) Option { return func(c *Client) { c.maxWait = d } }

// WithBackoff sets the exponential backoff after 5xx and network errors:
// the n-th retry waits a random time in [0, min(maxDelay, base·2ⁿ⁻¹)]
// ("full jitter"), so many clients failing together do not retry together.
func WithBackoff(base, maxDelay time.Duration) Option {
	return func(c *Client) { c.baseDelay, c.maxDelay = base, maxDelay }
}

// WithClock replaces the clock and the wait between attempts, so tests can
// run retries without waiting. sleep must return ctx.Err() as soon as ctx
// is done. Either may be nil to keep the default.
func WithClock(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Client) {
		if now != nil {
			c.now = now
		}
		if sleep != nil {
			c.sleep = sleep
		}
	}
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithLogger sets the logger of the client's warnings (default: none).
// The client logs at Warn, once per Client and operation, the first answer
// that marks the operation deprecated (a Deprecation header, RFC 9745),
// with its operation name (such as getPet), the deprecation and Sunset
// (RFC 8594) dates, and the successor Link's target when the server names
// them. It never logs the key or a body. nil keeps the default.
func WithLogger(l *slog.Logger) Option {
	return func(c *Client) {
		if l != nil {
			c.logger = l
		}
	}
}

// New returns a client for the API at baseURL (such as
// "https://api.example.com/v1"), authenticating with apiKey; without
// one, with the base URL's user info, if any, as Basic authentication
// (for a proxy in front, say), sent like the key with every request and
// redirect within the base URL's origin, and only there. It refuses a
// key or a User-Agent (WithUserAgent) with a control character, which no
// request could carry.
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("petstore client: base URL %q must be an absolute http or https URL", redact.URL(baseURL))
	}
	u.RawQuery, u.Fragment = "", ""
	if i := strings.IndexFunc(apiKey, isControl); i >= 0 {
		// net/http would refuse every request, an error the client would
		// take for the network's and retry. The key itself is not shown.
		return nil, fmt.Errorf("petstore client: the API key has a control character at byte %d (a trailing newline, read from a file?)", i)
	}
	c := &Client{
		base:      u,
		apiKey:    apiKey,
		hc:        &http.Client{Timeout: 30 * time.Second},
		attempts:  DefaultMaxAttempts,
		maxWait:   DefaultMaxWait,
		baseDelay: DefaultBaseDelay,
		maxDelay:  DefaultMaxDelay,
		now:       time.Now,
		sleep:     sleepContext,
		userAgent: DefaultUserAgent,
		logger:    slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(c)
	}
	if i := strings.IndexFunc(c.userAgent, isControl); i >= 0 {
		return nil, fmt.Errorf("petstore client: the User-Agent %q has a control character at byte %d", c.userAgent, i)
	}
	c.hc = c.keepKeyHome(c.hc)
	// The base URL's user info is a credential too (net/http sends it
	// as Basic authentication when there is no key): answers stay apart
	// per user as they did when it was in the cache's keys.
	h := sha256.Sum256([]byte(apiKey + "\x00" + u.User.String()))
	c.keyHash = string(h[:])
	return c, nil
}

// isControl reports whether r may not appear in a header value: an ASCII
// control character other than tab, as net/http checks.
func isControl(r rune) bool { return (r < ' ' && r != '\t') || r == 0x7f }

// keepKeyHome returns a copy of hc that follows a redirect only within
// the base URL's origin (see sameOrigin). net/http forwards Authorization to any
// port and scheme of the same host name (and to its subdomains), which
// would send the key to another service, or in clear text after a
// redirect from https to http; such a redirect is returned as the answer
// instead, an error. So is a 301 or 302 to a POST, which net/http would
// follow with a GET without the body: a create would become a list. hc's
// own CheckRedirect, if any, still applies.
func (c *Client) keepKeyHome(hc *http.Client) *http.Client {
	cp := *hc
	check := hc.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !sameOrigin(req.URL, c.base) {
			return http.ErrUseLastResponse
		}
		// A 303 See Other leads to the answer of the POST, to be read
		// with a GET; a 301 or 302 to the place the POST should go.
		if req.Method != via[len(via)-1].Method && req.Response != nil && req.Response.StatusCode != http.StatusSeeOther {
			return http.ErrUseLastResponse
		}
		// net/http compares host names as written, and drops the key
		// on the way from EXAMPLE.com to example.com: within the origin
		// it goes on.
		c.authorize(req)
		if check != nil {
			return check(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &cp
}

// authorize sets req's credentials: the API key, else the base URL's
// user info as Basic authentication. net/http sends the user info only
// with a URL that holds it, which an absolute Location or next link
// within the origin does not; the key's rules keep it on the origin.
func (c *Client) authorize(req *http.Request) {
	switch {
	case c.apiKey != "":
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	case c.base.User != nil:
		pass, _ := c.base.User.Password()
		req.SetBasicAuth(c.base.User.Username(), pass)
	}
}

// sameOrigin reports whether a and b have the same origin as the URL
// standard (and every browser) compares them: the same scheme, ignoring
// case, the same host name in its IDNA ASCII form (see asciiHost), and
// the same port, where a default one (80 for http, 443 for https) is the
// same written or not. A trailing dot makes another host, as for
// browsers and net/http, which drops the key on a redirect to it. The key
// goes only to the base URL's origin.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && asciiHost(a) == asciiHost(b) && port(a) == port(b)
}

// asciiHost is u's host name as net/http dials it and names it in the
// Host header: Unicode labels in punycode (IDNA lookup, as the URL
// standard's host parser), and in lower case, so "bücher.example" and
// "XN--BCHER-KVA.example" are one host. An IP address is in its shortest
// form, as the URL standard serializes it ("[0:0::1]" is "[::1]"; an
// IPv4-mapped address stays apart from the IPv4 one). A name IDNA
// refuses (an underscore) is only lowered.
func asciiHost(u *url.URL) string {
	h := u.Hostname()
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.String()
	}
	if a, err := idna.Lookup.ToASCII(h); err == nil {
		return a
	}
	return strings.ToLower(h)
}

// port is u's port, or its scheme's default when it names none.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RateLimit returns the rate-limit figures of the response to the latest
// request sent that carried them, even when the answer to an earlier one
// arrives after it; ok is false before any did. A 304 Not Modified (see
// WithCache) leaves them as they were, as does a conditional request's
// 429 (sent again without If-None-Match): their figures are those of the
// separate allowance of conditional requests, not the plan's.
func (c *Client) RateLimit() (rl RateLimit, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rl, c.rlOK
}

type idemKeyCtx struct{}

// WithIdempotencyKey returns a context under which CreatePet (and
// CreateOrder) sends key as its Idempotency-Key instead of a fresh random
// one, so that a caller retrying a whole operation later (after a crash,
// say) still creates the pet only once. The server keeps keys for 24 hours.
// An empty key (a job id never set), which the server would not take, or
// one with a control character, which no request can carry, makes the
// create fail with invalid_request, without a request (so the error has
// no Status), rather than send a random key in its place.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idemKeyCtx{}, key)
}

// idempotencyKey is the Idempotency-Key of a create under ctx: the
// caller's (WithIdempotencyKey), else a fresh random one. A caller's key
// with a control character is refused as invalid_request: no request can
// carry it, and net/http's refusal of each attempt would look like the
// network's, retried and retryable. So is an empty one: a random key in
// its place would create the pet again on each run.
func idempotencyKey(ctx context.Context) (string, error) {
	if key, ok := ctx.Value(idemKeyCtx{}).(string); ok {
		if key == "" {
			return "", petstore.Errorf(petstore.CodeInvalidRequest, "the Idempotency-Key is empty")
		}
		if i := strings.IndexFunc(key, isControl); i >= 0 {
			return "", petstore.Errorf(petstore.CodeInvalidRequest, "the Idempotency-Key has a control character at byte %d", i)
		}
		return key, nil
	}
	return uuid.NewString(), nil
}

// ListPets implements petstore.PetService: it fetches one page. The next
// page's cursor comes from the response's Link rel="next"; a link back to
// the page itself, or to any page with its cursor, is an error, as it
// would hand the same cursor back forever. So are a next link without a cursor that parses and a Link
// header that does not parse (it may hold the next link), which would
// otherwise read as the last page.
func (c *Client) ListPets(ctx context.Context, f petstore.PetFilter) (petstore.PetPage, error) {
	pets, next, at, err := fetchPage[petstore.Pet](ctx, c, c.listURL(f), "listPets", "pets")
	if err != nil {
		return petstore.PetPage{}, err
	}
	cursor, err := nextCursor(next, at)
	if err != nil {
		return petstore.PetPage{}, err
	}
	return petstore.PetPage{Pets: pets, NextCursor: cursor}, nil
}

// nextCursor is the cursor of the next link next of the page at, "" when
// there is none. A link back to the page itself (an empty one, say), or
// to any page with its cursor (another limit, say), is an error: a caller
// paging by cursor would read the page forever. So is a link without a
// cursor that parses: its "" would end the caller's paging early.
func nextCursor(next, at *url.URL) (string, error) {
	if next == nil {
		return "", nil
	}
	// A pair that does not parse is dropped, the rest kept.
	q, _ := url.ParseQuery(next.RawQuery)
	atQuery, _ := url.ParseQuery(at.RawQuery)
	cursor := q.Get("cursor")
	if requestKey(next) == requestKey(at) || cursor != "" && cursor == atQuery.Get("cursor") {
		return "", fmt.Errorf("petstore client: next link %s leads back to the same page", next.Redacted())
	}
	if cursor != "" {
		return cursor, nil
	}
	// "" would say this is the last page.
	return "", fmt.Errorf("petstore client: next link %s has no cursor that parses", next.Redacted())
}

// All iterates over every pet matching f, page by page, following the
// Link rel="next" of each response. f.Limit sets the page size. Iteration
// stops after the first error, which is yielded with a zero Pet; a next
// link back to a page already read is one, an empty link ("<>", the page
// itself) included, and so is a Link header that does not parse, which
// may hold the next link: the list may go on. Each loop over the sequence
// reads the list again from its first page.
func (c *Client) All(ctx context.Context, f petstore.PetFilter) iter.Seq2[petstore.Pet, error] {
	return allPages[petstore.Pet](ctx, c, c.listURL(f), "listPets", "pets")
}

// allPages iterates over every item of the list at first (its first
// page), page by page, following the Link rel="next" of each response.
// Iteration stops after the first error, which is yielded with a zero T;
// a next link back to a page already read is one, as it would loop
// forever. A page is the request the server gets (see requestKey), at
// the URL asked for and at the one a redirect led to. op and what name
// the operation and its items. Each range over the sequence starts again
// at first.
func allPages[T any](ctx context.Context, c *Client, first *url.URL, op, what string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		read := map[string]bool{}
		for u := first; u != nil; {
			read[requestKey(u)] = true
			items, next, at, err := fetchPage[T](ctx, c, u, op, what)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			read[requestKey(at)] = true
			if next != nil && read[requestKey(next)] {
				yield(zero, fmt.Errorf("petstore client: next link %s leads back to a page already read", next.Redacted()))
				return
			}
			u = next
		}
	}
}

func (c *Client) listURL(f petstore.PetFilter) *url.URL {
	return c.pageURL("/pets", f.Limit, string(f.Status), f.Cursor)
}

// pageURL is the URL of a list (path under the base) with its query:
// limit, status and cursor, each only when set.
func (c *Client) pageURL(path string, limit int, status, cursor string) *url.URL {
	u := c.endpoint(path)
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if status != "" {
		q.Set("status", status)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	u.RawQuery = q.Encode()
	return u
}

// fetchPage fetches one page of a list at u, the operation op, and
// returns its items (what names them in errors), the resolved next link,
// nil on the last page, and the URL the page came from, which after a
// redirect is not u. A Link header that does not parse is an error, not
// the last page: it may have held the next link.
func fetchPage[T any](ctx context.Context, c *Client, u *url.URL, op, what string) ([]T, *url.URL, *url.URL, error) {
	resp, body, err := c.do(ctx, op, http.MethodGet, u, nil, "")
	if err != nil {
		return nil, nil, nil, err
	}
	at := resp.Request.URL
	// Decoded as pointers, so that a null item, which encoding/json
	// would take for a zero value with id 0, shows as nil: an error, as
	// a null object is (decodeObject).
	var ptrs []*T
	if err := decodeBody(resp, body, &ptrs, what); err != nil {
		return nil, nil, nil, err
	}
	// A null list (a server other than the API's) is an empty page, as
	// the API's own [] is: never nil.
	items := make([]T, 0, len(ptrs))
	for i, p := range ptrs {
		if p == nil {
			return nil, nil, nil, fmt.Errorf("petstore client: %s %s: %s: %s[%d] is null", resp.Request.Method, resp.Request.URL.EscapedPath(), resp.Status, what, i)
		}
		items = append(items, *p)
	}
	link, ok, bad := parseLinkNext(resp.Header.Values("Link"))
	if bad != "" {
		// It may have been the next link: the list may go on.
		return nil, nil, nil, fmt.Errorf("petstore client: %s %s: %s: Link %q does not parse, so the next page cannot be told from none", resp.Request.Method, resp.Request.URL.EscapedPath(), resp.Status, bad)
	}
	if !ok {
		return items, nil, at, nil
	}
	// RFC 8288: relative to the URL the page came from, which after a
	// redirect is not u; an empty link is that page itself (RFC 3986).
	next, err := at.Parse(link)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("petstore client: malformed next link %q", link)
	}
	// The key goes with every request: never follow a link elsewhere.
	if !sameOrigin(next, c.base) {
		return nil, nil, nil, fmt.Errorf("petstore client: next link %q leaves %s://%s", link, c.base.Scheme, c.base.Host)
	}
	return items, next, at, nil
}

// requestKey is what the server gets of a GET of u, the same for every
// way of writing it: the origin as sameOrigin compares it, the path
// decoded (the API's pages differ only in their query), and the query's
// parameters in order of name, decoded and encoded again ("cursor=a+b"
// and "cursor=a%2Bb" stay apart). The fragment is never sent, nor the
// user info.
func requestKey(u *url.URL) string {
	query := u.RawQuery
	if q, err := url.ParseQuery(query); err == nil {
		query = q.Encode()
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(asciiHost(u), port(u)) + cmp.Or(u.Path, "/") + "?" + query
}

// CreatePet implements petstore.PetService. It sends an Idempotency-Key
// (random, or the one from WithIdempotencyKey) and reuses it on every
// retry, so the pet is created once however many attempts it takes. A
// name that is not valid UTF-8 is refused as the local service refuses it,
// without a request (so the error has no Status).
func (c *Client) CreatePet(ctx context.Context, p petstore.NewPet) (petstore.Pet, error) {
	// JSON cannot carry a name that is not UTF-8 (encoding/json would send
	// U+FFFD in its place, and the pet would get another name): refuse it
	// with the service's own invalid_request.
	if !utf8.ValidString(p.Name) {
		return petstore.Pet{}, p.Validate()
	}
	key, err := idempotencyKey(ctx)
	if err != nil {
		return petstore.Pet{}, err
	}
	body, err := json.Marshal(p)
	if err != nil {
		return petstore.Pet{}, err
	}
	resp, data, err := c.do(ctx, "createPet", http.MethodPost, c.endpoint("/pets"), body, key)
	if err != nil {
		return petstore.Pet{}, err
	}
	var pet petstore.Pet
	if err := decodeObject(resp, data, &pet, "pet"); err != nil {
		return petstore.Pet{}, err
	}
	return pet, nil
}

// GetPet implements petstore.PetService. The API's getPet operation is
// deprecated, to be removed on 5 December 2030; WithLogger makes the
// client warn of it.
func (c *Client) GetPet(ctx context.Context, id int64) (petstore.Pet, error) {
	resp, data, err := c.do(ctx, "getPet", http.MethodGet, c.endpoint("/pets/"+strconv.FormatInt(id, 10)), nil, "")
	if err != nil {
		return petstore.Pet{}, err
	}
	var pet petstore.Pet
	if err := decodeObject(resp, data, &pet, "pet"); err != nil {
		return petstore.Pet{}, err
	}
	return pet, nil
}

// endpoint is the URL of path (unescaped, and needing no escapes, such
// as "/pets/1") under the base URL. The base path keeps its escapes: a
// "%2F" in it stays an escape and does not become a slash.
func (c *Client) endpoint(path string) *url.URL {
	u := *c.base
	u.RawPath = c.base.EscapedPath() + path
	u.Path += path
	if u.RawPath == u.Path {
		u.RawPath = ""
	}
	return &u
}

// do runs one call of the operation op (its OpenAPI operationId) with
// retries and returns the successful (2xx) response and its body, or the
// last error.
func (c *Client) do(ctx context.Context, op, method string, u *url.URL, body []byte, idemKey string) (*http.Response, []byte, error) {
	// A GET changes nothing; a POST is safe to repeat only under an
	// Idempotency-Key, which makes the server answer a repeat with the
	// first response.
	retriable := method == http.MethodGet || idemKey != ""
	start := c.now()
	// WithMaxWait bounds the attempts too: one that outlasts it (a server
	// that hangs) is cut short and not retried.
	actx := ctx
	if c.maxWait > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, c.maxWait)
		defer cancel()
	}
	var waited time.Time // the end of the latest hold this call waited out
	conditional := true  // false once the server asked for the answer in full
	var refused *conditionalRefused
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		// Wait out a hold this call has not waited for yet: one begun by
		// another call's 429 while this one backed off, or extended while
		// it waited.
		for {
			until, wait, herr := c.held()
			if wait <= 0 || !until.After(waited) {
				break
			}
			if c.now().Sub(start)+wait > c.maxWait || outlasts(ctx, wait) {
				return nil, nil, &RetryAfterError{Err: herr, RetryAfter: wait}
			}
			if serr := c.sleep(ctx, wait); serr != nil {
				return nil, nil, serr
			}
			waited = until
		}
		resp, data, err := c.attempt(actx, method, u, body, idemKey, conditional)
		if refused != nil {
			c.planRefusedBoth(refused, resp)
			refused = nil
		}
		if conditional && (errors.Is(err, errOtherETag) || errors.As(err, &refused)) {
			// The server answered; only the remembered answer is stale,
			// or a 429 came that may be the allowance's: ask again
			// in full, without spending an attempt and a back-off on it,
			// but not before a hold another call's 429 began meanwhile
			// has passed (the loop's first step).
			conditional = false
			attempt--
			continue
		}
		if err == nil {
			c.warnDeprecated(ctx, op, resp.Header)
		}
		if err == nil && resp.StatusCode/100 == 2 {
			return resp, data, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, nil, ctxErr
		}
		var wait time.Duration
		var asked time.Duration // what the answer asked for, when it did
		var perr *petstore.Error
		if err != nil { // no answer: network error, or the body broke off
			// Cut short by WithMaxWait, or an error a retry would meet
			// again (a redirect loop): given up at once.
			if na := (*noAnswer)(nil); actx.Err() != nil || !errors.As(err, &na) {
				return nil, nil, err
			}
			wait = c.backoff(attempt)
		} else {
			perr = decodeError(resp, data)
			err = perr
			ra, raOK := retryAfter(resp.Header, c.now())
			if raOK {
				asked = ra
			}
			switch {
			case perr.Code == petstore.CodeAPIKeyBanned:
				if raOK {
					return nil, nil, &RetryAfterError{Err: perr, RetryAfter: ra}
				}
				return nil, nil, perr
			case !retried(perr):
				return nil, nil, perr
			case resp.StatusCode == http.StatusTooManyRequests:
				wait = c.rateLimitWait(resp.Header, attempt)
				asked = wait
				c.holdFor(wait, perr)
			default:
				// A 5xx, or idempotency_key_in_use: our own earlier
				// attempt is still running on the server, which says
				// when to look again.
				wait = max(c.backoff(attempt), asked)
			}
		}
		until, held, _ := c.held()
		wait = max(wait, held)
		if !retriable || attempt >= c.attempts || c.maxWait <= 0 || c.now().Sub(start)+wait > c.maxWait || outlasts(ctx, wait) {
			if perr != nil && max(asked, held) > 0 {
				return nil, nil, &RetryAfterError{Err: perr, RetryAfter: max(asked, held)}
			}
			return nil, nil, err
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return nil, nil, serr
		}
		waited = until
	}
}

// outlasts reports whether waiting d would take the call past ctx's
// deadline. The client then gives up at once with the error that asked for
// the wait, as past WithMaxWait, rather than sleeping into
// DeadlineExceeded, which would hide why it waited.
func outlasts(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return ok && time.Until(deadline) < d
}

// conditionalHeld reports whether a conditional request's 429 asked the
// client not to send another before now.
func (c *Client) conditionalHeld() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now().Before(c.condHold)
}

// held returns until when and for how long no request may be sent yet,
// and the 429 that said so (a copy).
func (c *Client) held() (time.Time, time.Duration, *petstore.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wait := c.hold.Sub(c.now())
	if wait <= 0 {
		return c.hold, 0, nil
	}
	e := *c.holdErr
	return c.hold, wait, &e
}

// holdFor keeps every call from sending for wait, as the 429 perr asked.
func (c *Client) holdFor(wait time.Duration, perr *petstore.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if until := c.now().Add(wait); until.After(c.hold) {
		e := *perr
		c.hold, c.holdErr = until, &e
	}
}

// attempt sends one request and reads its whole response. A GET is
// conditional on a remembered answer (see WithCache) only if conditional.
func (c *Client) attempt(ctx context.Context, method string, u *url.URL, body []byte, idemKey string, conditional bool) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	c.authorize(req)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	var ckey string
	var cached *cacheEntry
	if c.cache != nil && method == http.MethodGet {
		ckey = c.cacheKey(u)
		if cached = c.cache.get(ckey); cached != nil && (!conditional || c.conditionalHeld()) {
			cached = nil // asked in full: again after another ETag, or until the hold ends
		}
		if cached != nil {
			req.Header.Set("If-None-Match", cached.etag)
		}
	}
	c.mu.Lock()
	c.sent++
	seq := c.sent
	c.mu.Unlock()
	resp, err := c.hc.Do(req)
	if err == nil && cached != nil && resp.StatusCode == http.StatusTooManyRequests {
		// A conditional request's 429 may be its own allowance's
		// (docs/rate-limits.md), which leaves the plan's quota to the
		// others, and its figures are that allowance's: do sends it
		// again without If-None-Match, and no conditional one goes until
		// its Retry-After has passed. A 429 of the plan's is then the
		// answer (within the server's grace, so not a strike), and when
		// it is of the same window as this one, the plan refused both
		// (see planRefusedBoth).
		ra, _ := retryAfter(resp.Header, c.now())
		refused := &conditionalRefused{window: windowOf(resp.Header)}
		c.mu.Lock()
		refused.prev = c.condHold
		// Never shortened: a 429 of another request in flight, answered
		// earlier with a longer Retry-After (the allowance's ban), still
		// holds.
		if until := c.now().Add(max(ra, time.Second)); until.After(c.condHold) {
			c.condHold = until
		}
		refused.set = c.condHold
		c.mu.Unlock()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
		_ = resp.Body.Close()
		return nil, nil, refused
	}
	if err != nil && resp != nil {
		// The redirect policy stopped (a loop, past 10 redirects, or
		// hc's own CheckRedirect): net/http returns the last answer,
		// closed, with the error. A retry meets the same redirects, so
		// this is no network error.
		return nil, nil, fmt.Errorf("petstore client: %s %s: %w", method, u.EscapedPath(), err)
	}
	if err != nil {
		return nil, nil, &noAnswer{fmt.Errorf("petstore client: %s %s: %w", method, u.EscapedPath(), err)}
	}
	defer resp.Body.Close()
	if resp.Request == nil { // a RoundTripper of the caller's may leave it out
		resp.Request = req
	}
	// One byte more than the bound tells a body over it (decodeBody
	// refuses it) from one exactly at it.
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if rl, ok := parseRateLimit(resp.Header); ok && resp.StatusCode != http.StatusNotModified {
		c.mu.Lock()
		if seq > c.rlSent {
			c.rl, c.rlOK, c.rlSent = rl, true, seq
		}
		c.mu.Unlock()
	}
	if err != nil {
		return nil, nil, &noAnswer{fmt.Errorf("petstore client: %s %s: reading response: %w", method, u.EscapedPath(), err)}
	}
	if ckey != "" {
		if resp, data, err = c.revalidated(ckey, cached, resp, data); err != nil {
			return nil, nil, err
		}
	}
	return resp, data, nil
}

// cacheKey is where the cache keeps the answer to a GET of u: the hash
// of the client's credentials, then u without its user info, whose
// password would otherwise sit in the cache's keys.
func (c *Client) cacheKey(u *url.URL) string {
	k := *u
	k.User = nil
	return c.keyHash + k.String()
}

// revalidated keeps the answer (resp, data) to a GET in the cache at
// ckey, where cached was when it was sent, and returns the answer the
// call gets: for a 304, the cached one, as a 200 with the headers the
// 304 updates (RFC 9111 §4.3.4). A 304 naming another ETag than the
// one sent says the current answer is not the cached one, which must not
// be used then: the cached one is dropped and the error, errOtherETag,
// has the client ask again, without If-None-Match.
func (c *Client) revalidated(ckey string, cached *cacheEntry, resp *http.Response, data []byte) (*http.Response, []byte, error) {
	etag := resp.Header.Get("ETag")
	switch {
	case resp.StatusCode == http.StatusNotModified && cached != nil && etag != "" &&
		strings.TrimPrefix(etag, "W/") != strings.TrimPrefix(cached.etag, "W/"):
		c.cache.remove(ckey)
		return nil, nil, &noAnswer{fmt.Errorf("petstore client: GET %s: %w", resp.Request.URL.EscapedPath(), errOtherETag)}
	case resp.StatusCode == http.StatusNotModified && cached != nil:
		h := cached.header.Clone()
		for k, v := range resp.Header {
			h[k] = v
		}
		r := *resp
		r.StatusCode, r.Status, r.Header, r.Body = http.StatusOK, "200 OK", h, http.NoBody
		return &r, cached.body, nil
	case resp.StatusCode == http.StatusOK && etag != "" && len(data) <= maxResponse:
		c.cache.put(ckey, etag, resp.Header.Clone(), data)
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		c.cache.remove(ckey) // gone, or no longer cacheable: free its room
	}
	return resp, data, nil
}

// errOtherETag is a 304 naming another ETag than the one sent (see
// revalidated).
var errOtherETag = errors.New("304 Not Modified for another ETag than the one sent")

// conditionalRefused is a conditional request's 429 (see attempt), which
// do sends again without If-None-Match. It held back the client's
// conditional requests (condHold, prev before); the answer to the request
// sent again tells whether it should have (see planRefusedBoth).
type conditionalRefused struct {
	window    string // the 429's rate-limit window, "" if it named none
	prev, set time.Time
}

func (e *conditionalRefused) Error() string { return "429 for a conditional request" }

// windowOf names the rate-limit window the X-RateLimit-* headers h
// describe (its quota and reset), "" when they describe none.
func windowOf(h http.Header) string {
	if _, ok := parseRateLimit(h); !ok {
		return ""
	}
	return h.Get("X-RateLimit-Limit") + " " + h.Get("X-RateLimit-Reset")
}

// planRefusedBoth undoes the hold of conditional requests that refused
// began when resp, the answer to the same request sent unconditionally,
// is a 429 of the same window: the plan's quota refused both, the
// conditional one because its page changed. The allowance of conditional
// requests is not spent then, and while the plan is banned the client's
// conditional requests are the ones that still get answers (304s).
func (c *Client) planRefusedBoth(refused *conditionalRefused, resp *http.Response) {
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests || refused.window == "" || windowOf(resp.Header) != refused.window {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.condHold.Equal(refused.set) { // no later 429 extended it
		c.condHold = refused.prev
	}
}

// decodeBody decodes the JSON body data of the successful answer resp
// into v (what names it in errors). An answer it cannot use, over
// maxResponse or not JSON (a captive portal's or a proxy's page), is an
// error naming the request, the status and, for a body that is not JSON,
// its media type, rather than a bare syntax error. It is not retried: the
// same request would get the same answer.
func decodeBody(resp *http.Response, data []byte, v any, what string) error {
	req := resp.Request.Method + " " + resp.Request.URL.EscapedPath()
	if len(data) > maxResponse {
		return fmt.Errorf("petstore client: %s: %s: body over %d MiB, not a petstore answer", req, resp.Status, maxResponse>>20)
	}
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	if ct := resp.Header.Get("Content-Type"); !isJSON(ct) {
		return fmt.Errorf("petstore client: %s: %s: body is %q, not JSON", req, resp.Status, cmp.Or(ct, "without Content-Type"))
	}
	return fmt.Errorf("petstore client: %s: %s: decoding %s: %w", req, resp.Status, what, err)
}

// decodeObject is decodeBody for an answer that is one object (a pet, an
// order): null, which encoding/json would take for a zero value with
// id 0, is an error too.
func decodeObject(resp *http.Response, data []byte, v any, what string) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return fmt.Errorf("petstore client: %s %s: %s: body is null, not a %s", resp.Request.Method, resp.Request.URL.EscapedPath(), resp.Status, what)
	}
	return decodeBody(resp, data, v, what)
}

// isJSON reports whether the media type ct is JSON: application/json or
// a +json suffix (RFC 6839).
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// noAnswer is a call that got no whole answer (a network error, or the
// body broke off): what the client retries besides error answers.
type noAnswer struct{ err error }

func (e *noAnswer) Error() string { return e.err.Error() }
func (e *noAnswer) Unwrap() error { return e.err }

// rateLimitWait is how long to wait after a 429: Retry-After, else until
// X-RateLimit-Reset, else the backoff; both measured from the answer's
// Date (see answerTime).
func (c *Client) rateLimitWait(h http.Header, attempt int) time.Duration {
	now := answerTime(h, c.now())
	if d, ok := parseRetryAfter(h.Get("Retry-After"), now); ok {
		return d
	}
	if rl, ok := parseRateLimit(h); ok {
		if d := rl.Reset.Sub(now); d > 0 {
			return min(d, maxRetryAfter)
		}
	}
	return c.backoff(attempt)
}

// backoff returns the full-jitter wait before attempt+1.
func (c *Client) backoff(attempt int) time.Duration {
	ceil := c.maxDelay
	// base·2ⁿ⁻¹ only while it stays under the cap, so it cannot overflow.
	if n := attempt - 1; n < 63 && c.baseDelay <= ceil>>n {
		ceil = c.baseDelay << n
	}
	if ceil <= 0 {
		return 0
	}
	return rand.N(min(ceil, math.MaxInt64-1) + 1)
}

// decodeError turns an error response into a *petstore.Error carrying the
// response's status. A body that is not a petstore Error (a proxy's HTML
// page, say) gets the code its status maps to and a generic message.
func decodeError(resp *http.Response, data []byte) *petstore.Error {
	var e petstore.Error
	if json.Unmarshal(data, &e) == nil && e.Code != "" {
		e.Status = resp.StatusCode
		return &e
	}
	msg := "unexpected response: " + resp.Status
	if loc, err := resp.Location(); err == nil && resp.StatusCode/100 == 3 {
		// A redirect leaving the base's origin, or one net/http would
		// follow with a GET, comes back (see keepKeyHome): say which,
		// naming where it went but no query (nor, elsewhere, path).
		from, m := resp.Request.URL, resp.Request.Method
		switch {
		case !sameOrigin(loc, from):
			msg += fmt.Sprintf(": a redirect to %s://%s, not followed: the API key goes only to the base URL's origin", loc.Scheme, loc.Host)
		case m != http.MethodGet && m != http.MethodHead && (resp.StatusCode == http.StatusMovedPermanently || resp.StatusCode == http.StatusFound):
			msg += fmt.Sprintf(": a redirect to %s://%s%s, not followed: it would send the %s again as a GET, without its body", loc.Scheme, loc.Host, loc.EscapedPath(), m)
		}
	}
	return &petstore.Error{Code: httpcode.Code(resp.StatusCode), Message: msg, Status: resp.StatusCode}
}

// IsRetryable reports whether err is one the client would have retried
// had it attempts and time left: a network error, a 429 or rate_limited,
// idempotency_key_in_use, or a 5xx other than 501 Not Implemented (an
// attempt that outran the http.Client's Timeout is a network error). It is
// false for api_key_banned and for the errors of the call's own context.
func IsRetryable(err error) bool {
	// First: an attempt cut short by the http.Client's Timeout matches
	// context.DeadlineExceeded too, yet the client retries it. The
	// caller's own context errors are never wrapped in a noAnswer.
	if na := (*noAnswer)(nil); errors.As(err, &na) {
		return true
	}
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var e *petstore.Error
	if !errors.As(err, &e) {
		return false // an answer the client could not use: a retry gets the same
	}
	return retried(e)
}

// retried reports whether the client sends a request again after the
// error answer e: the one rule of do and IsRetryable. Never after
// api_key_banned, since retrying while banned only prolongs the ban, nor
// after 501 Not Implemented or a 4xx, which a retry gets again.
func retried(e *petstore.Error) bool {
	switch {
	case e.Code == petstore.CodeAPIKeyBanned:
		return false
	case e.Status == http.StatusTooManyRequests, e.Code == petstore.CodeRateLimited,
		e.Code == petstore.CodeIdempotencyKeyInUse:
		return true
	}
	return e.Status >= 500 && e.Status != http.StatusNotImplemented
}
