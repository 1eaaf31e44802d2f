package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// endpoint is one kind of request the load generator sends.
type endpoint struct {
	name   string // as in -endpoints
	label  string // as printed
	method string
	route  string // the ServeMux pattern the bare servers serve it on
	want   int    // the status of a served request
	body   []byte // POST body, nil for GET
	path   func(t *target, i int) string
}

var endpoints = []endpoint{
	{
		name: "list", label: "GET /v1/pets?limit=20", method: http.MethodGet, want: http.StatusOK,
		route: "GET /v1/pets",
		path:  func(*target, int) string { return "/v1/pets?limit=20" },
	},
	{
		name: "get", label: "GET /v1/pets/{id}", method: http.MethodGet, want: http.StatusOK,
		route: "GET /v1/pets/{petId}",
		// Cycle through the seeded pets, so no single row is the only one hot.
		path: func(t *target, i int) string { return "/v1/pets/" + t.petIDs[i%len(t.petIDs)] },
	},
	{
		name: "create", label: "POST /v1/pets", method: http.MethodPost, want: http.StatusCreated,
		route: "POST /v1/pets",
		body:  []byte(`{"name":"Rex","categoryId":1,"status":"available"}`),
		path:  func(*target, int) string { return "/v1/pets" },
	},
}

func endpointNames() []string {
	names := make([]string, len(endpoints))
	for i, e := range endpoints {
		names[i] = e.name
	}
	return names
}

func endpointByName(name string) endpoint {
	for _, e := range endpoints {
		if e.name == name {
			return e
		}
	}
	panic("unknown endpoint " + name)
}

// sample is what one period of load on one server and endpoint produced.
type sample struct {
	served    int64         // responses with the wanted status
	statuses  map[int]int64 // every response's status
	transport int64         // requests that got no response
	firstErr  string        // the first transport error, for the report
	elapsed   time.Duration
	latencies []time.Duration // of every response, served or not
	// cpu is the CPU time, user and system, the whole process (load
	// generator and every server) used during the period; 0 where the
	// platform cannot say.
	cpu time.Duration
}

func (s sample) rate() float64 { return float64(s.served) / s.elapsed.Seconds() }

// failed counts the requests that were not served: other statuses and
// transport errors.
func (s sample) failed(want int) int64 {
	var n int64
	for code, c := range s.statuses {
		if code != want {
			n += c
		}
	}
	return n + s.transport
}

// measure loads t with requests of e over conns keep-alive connections for
// d: each connection sends its next request as soon as it has read the
// previous response, until d has passed (requests in flight then finish).
func measure(ctx context.Context, t *target, e endpoint, conns int, d time.Duration) sample {
	tr := &http.Transport{
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		DisableCompression:  true,
		IdleConnTimeout:     time.Minute,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	parts := make([]sample, conns)
	var wg sync.WaitGroup
	cpu0, cpuKnown := processCPU()
	start := time.Now()
	deadline := start.Add(d)
	for w := range conns {
		wg.Go(func() {
			s := sample{statuses: map[int]int64{}, latencies: make([]time.Duration, 0, 4096)}
			for i := w; ctx.Err() == nil && time.Now().Before(deadline); i += conns {
				var body io.Reader
				if e.body != nil {
					body = bytes.NewReader(e.body)
				}
				req, err := http.NewRequestWithContext(ctx, e.method, t.url+e.path(t, i), body)
				if err != nil {
					panic(err) // the URL is ours: a bug, not a measurement
				}
				if t.token != "" {
					req.Header.Set("Authorization", "Bearer "+t.token)
				}
				if e.body != nil {
					req.Header.Set("Content-Type", "application/json")
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil {
					if ctx.Err() != nil {
						break // interrupted, not a failure of the server
					}
					s.transport++
					if s.firstErr == "" {
						s.firstErr = err.Error()
					}
					continue
				}
				s.latencies = append(s.latencies, time.Since(t0))
				s.statuses[resp.StatusCode]++
				if resp.StatusCode == e.want {
					s.served++
				}
			}
			parts[w] = s
		})
	}
	wg.Wait()
	total := sample{statuses: map[int]int64{}, elapsed: time.Since(start)}
	if cpu1, ok := processCPU(); ok && cpuKnown {
		total.cpu = cpu1 - cpu0
	}
	for _, p := range parts {
		total.add(p)
	}
	return total
}

// add merges o's counts and latencies into s (elapsed is left alone).
func (s *sample) add(o sample) {
	s.served += o.served
	s.transport += o.transport
	s.cpu += o.cpu
	if s.firstErr == "" {
		s.firstErr = o.firstErr
	}
	for code, n := range o.statuses {
		s.statuses[code] += n
	}
	s.latencies = append(s.latencies, o.latencies...)
}

// result is one server's figures for one endpoint over all rounds.
type result struct {
	server   string
	endpoint endpoint
	rounds   []float64 // served req/s of each round
	all      sample    // every round's responses together
}

// median is the median served req/s over rounds.
func (r result) median() float64 {
	v := append([]float64(nil), r.rounds...)
	sort.Float64s(v)
	n := len(v)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// cpuPerRequest is the process's CPU time per served request over every
// round: the load generator's share, the same for every server, plus the
// server's own. Unlike req/s it does not fall when the machine is busy
// with other work, so it compares servers' costs more steadily; 0 when
// the platform cannot say.
func (r result) cpuPerRequest() time.Duration {
	if r.all.served == 0 {
		return 0
	}
	return r.all.cpu / time.Duration(r.all.served)
}

// percentile is the latency below or at which a fraction q of all
// responses of every round came back (nearest rank). run sorts the
// latencies before it returns the result.
func (r result) percentile(q float64) time.Duration {
	l := r.all.latencies
	if len(l) == 0 {
		return 0
	}
	rank := int(q*float64(len(l)) + 0.999999999)
	return l[min(max(rank, 1), len(l))-1]
}

// serveOnly starts the servers, prints what a load generator needs to
// call each, and serves until ctx ends.
func serveOnly(ctx context.Context, opts options, out io.Writer) error {
	targets, err := startServers(ctx, opts)
	if err != nil {
		return err
	}
	defer closeAll(targets)
	for _, t := range targets {
		fmt.Fprintf(out, "%s %s token=%q pets=%s\n", t.name, t.url, t.token, strings.Join(t.petIDs, ","))
	}
	fmt.Fprintln(out, "serving until interrupted")
	<-ctx.Done()
	return nil
}

// run starts the servers, loads them round after round, stops them, and
// returns one result per endpoint and server, endpoints first. Each
// measurement is reported on progress as it ends.
func run(ctx context.Context, opts options, progress io.Writer) ([]result, error) {
	targets, err := startServers(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer closeAll(targets)

	eps := make([]endpoint, len(opts.endpoints))
	for i, name := range opts.endpoints {
		eps[i] = endpointByName(name)
	}
	results := make([]result, 0, len(eps)*len(targets))
	for _, e := range eps {
		for _, t := range targets {
			results = append(results, result{server: t.name, endpoint: e, all: sample{statuses: map[int]int64{}}})
		}
	}

	if opts.warmup > 0 {
		fmt.Fprintf(progress, "warming up: %v per server and endpoint\n", opts.warmup)
		for _, e := range eps {
			for _, t := range targets {
				measure(ctx, t, e, opts.conns, opts.warmup)
			}
		}
	}
	for round := 1; round <= opts.rounds; round++ {
		for ei, e := range eps {
			for k := range targets {
				// Each round starts one server further on, so that no
				// server always runs first after a change of endpoint, or
				// right after the same neighbour.
				ti := (k + round - 1) % len(targets)
				t := targets[ti]
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				// Every measurement starts with the heap collected: the
				// garbage one server made is not collected on the next
				// one's time.
				runtime.GC()
				s := measure(ctx, t, e, opts.conns, opts.duration)
				r := &results[ei*len(targets)+ti]
				r.rounds = append(r.rounds, s.rate())
				r.all.add(s)
				fmt.Fprintf(progress, "round %d/%d  %-22s %-9s %9.0f req/s  not served %d\n",
					round, opts.rounds, e.label, t.name, s.rate(), s.failed(e.want))
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i := range results {
		l := results[i].all.latencies
		sort.Slice(l, func(a, b int) bool { return l[a] < l[b] })
	}
	return results, nil
}
