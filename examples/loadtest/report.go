package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// describeRun says what the figures were measured on and how, for the
// line above the table.
func describeRun(opts options) string {
	cpu := ""
	if m := cpuModel(); m != "" {
		cpu = " (" + m + ")"
	}
	return fmt.Sprintf("%s/%s, %d CPUs%s, GOMAXPROCS=%d, %s; client and servers in one process; "+
		"%d connections, %d rounds × %v per server and endpoint, each round starting one server further on; "+
		"req/s is the median over rounds, a ratio that of the medians (in brackets, the lowest and highest within one round); "+
		"latency percentiles are over every request of every round.",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpu, runtime.GOMAXPROCS(0), runtime.Version(),
		opts.conns, opts.rounds, opts.duration)
}

// describeCPU says how much of the machine the run had: the process's
// CPU time against what GOMAXPROCS processors offer in the run's wall
// time. Well under 100% means other programs were busy too: the absolute
// figures are then low, while the ratios, from alternating rounds, still
// compare servers under the same conditions.
func describeCPU(used, wall time.Duration) string {
	offered := time.Duration(runtime.GOMAXPROCS(0)) * wall
	share := 100 * used.Seconds() / offered.Seconds()
	s := fmt.Sprintf("CPU: the run used %.1f s of CPU in %.1f s on %d processors (%.0f%% of what they offer).",
		used.Seconds(), wall.Seconds(), runtime.GOMAXPROCS(0), share)
	if share < 80 {
		s += " Other programs were busy: absolute req/s are low; compare the ratios, and rerun on an idle machine for absolute figures."
	}
	return s
}

// cpuModel is the processor's name on Linux, or "" elsewhere.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// writeTable prints results as a Markdown table, one row per server and
// endpoint, with the process's CPU time per served request (load
// generator and server; see result.cpuPerRequest), each server's ratio
// to bare on the same endpoint and, when bare-headers ran, its ratio to
// that too: the ratio of the medians over rounds and, in brackets when
// there were several rounds, the lowest and highest ratio within one
// round (see roundRatios).
func writeTable(w io.Writer, results []result) {
	bare := map[string]result{}
	withHeaders := map[string]result{}
	for _, r := range results {
		switch r.server {
		case serverBare:
			bare[r.endpoint.name] = r
		case serverBareHeaders:
			withHeaders[r.endpoint.name] = r
		}
	}
	ratio := func(r result, to map[string]result) string {
		base, ok := to[r.endpoint.name]
		switch {
		case !ok || base.median() <= 0:
			return "–"
		case base.server == r.server:
			return "1.00"
		}
		s := fmt.Sprintf("%.2f", r.median()/base.median())
		if lo, hi, ok := roundRatios(r, base); ok && len(r.rounds) > 1 {
			s += fmt.Sprintf(" (%.2f–%.2f)", lo, hi)
		}
		return s
	}
	if len(withHeaders) > 0 {
		fmt.Fprintln(w, "| endpoint | server | req/s | p50 | p99 | CPU/req | ratio to bare | ratio to bare-headers | not served |")
		fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	} else {
		fmt.Fprintln(w, "| endpoint | server | req/s | p50 | p99 | CPU/req | ratio to bare | not served |")
		fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
	}
	for _, r := range results {
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s | %s | %s |", r.endpoint.label, r.server, thousands(r.median()),
			millis(r.percentile(0.50)), millis(r.percentile(0.99)), micros(r.cpuPerRequest()), ratio(r, bare))
		if len(withHeaders) > 0 {
			fmt.Fprintf(w, " %s |", ratio(r, withHeaders))
		}
		fmt.Fprintf(w, " %d |\n", r.all.failed(r.endpoint.want))
	}
}

// roundRatios returns the lowest and highest ratio of r's req/s to base's
// within one round: how far a single round strays from the ratio of the
// medians, which is what a reader should allow for on this machine. ok
// is false when the two have no round in common in which base served
// anything.
func roundRatios(r, base result) (lo, hi float64, ok bool) {
	for i := range min(len(r.rounds), len(base.rounds)) {
		if base.rounds[i] <= 0 {
			continue
		}
		q := r.rounds[i] / base.rounds[i]
		if !ok || q < lo {
			lo = q
		}
		if !ok || q > hi {
			hi = q
		}
		ok = true
	}
	return lo, hi, ok
}

// errorSummary describes every request that was not served, by server,
// endpoint and status, or returns "" when all were.
func errorSummary(results []result) string {
	var b strings.Builder
	for _, r := range results {
		if r.all.failed(r.endpoint.want) == 0 {
			continue
		}
		var parts []string
		codes := make([]int, 0, len(r.all.statuses))
		for code := range r.all.statuses {
			if code != r.endpoint.want {
				codes = append(codes, code)
			}
		}
		sort.Ints(codes)
		for _, code := range codes {
			parts = append(parts, fmt.Sprintf("%d× status %d", r.all.statuses[code], code))
		}
		if r.all.transport > 0 {
			parts = append(parts, fmt.Sprintf("%d× no response (first: %s)", r.all.transport, r.all.firstErr))
		}
		fmt.Fprintf(&b, "%s on %s: %s (want status %d)\n", r.endpoint.label, r.server, strings.Join(parts, ", "), r.endpoint.want)
	}
	if b.Len() == 0 {
		return ""
	}
	return "ERRORS: some requests were not served, so these figures do not measure successful requests only:\n" + b.String()
}

// thousands formats a rate as a whole number with comma separators.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// micros formats a CPU time per request in microseconds, or "–" when
// it is not known.
func micros(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
}

// millis formats a latency in milliseconds with two decimals.
func millis(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}
