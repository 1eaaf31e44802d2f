package httpx

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"
)

// accessLogCases are entries whose lines must match slog's byte for byte,
// with every way a value can need escaping or quoting.
func accessLogCases() map[string]RequestLog {
	at := time.Date(2026, 11, 25, 17, 4, 30, 123456789, time.UTC)
	base := RequestLog{
		Time: at, Client: netip.MustParseAddr("203.0.113.7"), Method: "GET", Route: "GET /v1/pets",
		Path: "/v1/pets", Status: 200, Bytes: 1223, Duration: 48250 * time.Nanosecond,
		UserAgent: "Go-http-client/1.1", RequestID: "01a213aa-7e73-7d29-80c6-c4e00508c21b", KeyID: "key_abc",
	}
	cases := map[string]RequestLog{"plain": base}
	add := func(name string, f func(e *RequestLog)) {
		e := base
		f(&e)
		cases[name] = e
	}
	add("no key, store error", func(e *RequestLog) { e.KeyID, e.StoreError, e.Status = "", "timeout", 503 })
	add("no route, no client", func(e *RequestLog) { e.Route, e.Client, e.Status = "", netip.Addr{}, 404 })
	add("IPv6 with zone", func(e *RequestLog) { e.Client = netip.MustParseAddr("fe80::1%eth 0") })
	add("IPv4-mapped", func(e *RequestLog) { e.Client = netip.MustParseAddr("::ffff:192.0.2.1") })
	add("quotes and control characters", func(e *RequestLog) {
		e.UserAgent = "a \"b\" c\\d\n\r\t\b\f\x00\x1f\x7f = e"
		e.Path = "/v1/pets/%22x%22"
	})
	add("unicode", func(e *RequestLog) { e.UserAgent = "naïve/1.0 \u2028\u2029 \u00a0 \u200b 日本" })
	add("invalid UTF-8", func(e *RequestLog) { e.UserAgent = "bad \xff\xfe end"; e.Path = "/\xc3" })
	add("empty user agent", func(e *RequestLog) { e.UserAgent = "" })
	add("durations", func(e *RequestLog) { e.Duration = 0 })
	add("seconds", func(e *RequestLog) { e.Duration = 3*time.Minute + 1500*time.Millisecond })
	add("nanoseconds", func(e *RequestLog) { e.Duration = 999 })
	add("time zone and whole second", func(e *RequestLog) {
		e.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", 5*3600+1800))
	})
	add("monotonic clock reading", func(e *RequestLog) { e.Time = time.Now() })
	return cases
}

// slogLine is the line Logger's handler writes for e.
func slogLine(t testing.TB, e RequestLog, json bool) string {
	var buf bytes.Buffer
	var h slog.Handler = slog.NewTextHandler(&buf, nil)
	if json {
		h = slog.NewJSONHandler(&buf, nil)
	}
	slogAccessLog{slog.New(h)}.LogRequest(context.Background(), &e)
	return buf.String()
}

func ownLine(e RequestLog, json bool) string {
	var buf bytes.Buffer
	l := NewTextAccessLog(&buf)
	if json {
		l = NewJSONAccessLog(&buf)
	}
	l.LogRequest(context.Background(), &e)
	return buf.String()
}

// The hand-formatted lines are the ones slog's built-in handlers write, so
// that switching Config.AccessLog on changes nothing a log reader sees.
func TestAccessLogWritesSlogsLine(t *testing.T) {
	for name, e := range accessLogCases() {
		for _, json := range []bool{true, false} {
			want, got := slogLine(t, e, json), ownLine(e, json)
			if got != want {
				t.Errorf("%s (json %v):\n got %q\nwant %q", name, json, got, want)
			}
		}
	}
}

func FuzzAccessLogLine(f *testing.F) {
	for _, e := range accessLogCases() {
		f.Add(e.Method, e.Route, e.Path, e.UserAgent, e.RequestID, e.KeyID, e.StoreError, e.Client.String(), int64(e.Duration), e.Bytes, e.Status, e.Time.UnixNano())
	}
	f.Fuzz(func(t *testing.T, method, route, path, ua, id, key, storeErr, client string, d, n int64, status int, unixNano int64) {
		e := RequestLog{
			Time: time.Unix(0, unixNano).UTC(), Method: method, Route: route, Path: path, Status: status, Bytes: n,
			Duration: time.Duration(d), UserAgent: ua, RequestID: id, KeyID: key, StoreError: storeErr,
		}
		if y := e.Time.Year(); y < 0 || y >= 10000 {
			t.Skip() // slog writes an error marker for such times; the chain never logs them
		}
		e.Client, _ = netip.ParseAddr(client)
		for _, json := range []bool{true, false} {
			if want, got := slogLine(t, e, json), ownLine(e, json); got != want {
				t.Fatalf("json %v:\n got %q\nwant %q", json, got, want)
			}
		}
	})
}

// Formatting a line allocates nothing, so the access log's cost is the
// formatting itself (BenchmarkAccessLog measures it).
func TestAccessLogLineAllocatesNothing(t *testing.T) {
	e := accessLogCases()["plain"]
	for _, l := range []AccessLogger{NewJSONAccessLog(io.Discard), NewTextAccessLog(io.Discard)} {
		l.LogRequest(context.Background(), &e) // fill the pool
		if n := testing.AllocsPerRun(100, func() { l.LogRequest(context.Background(), &e) }); n != 0 {
			t.Errorf("%T: %v allocations per line", l, n)
		}
	}
}

func BenchmarkAccessLog(b *testing.B) {
	e := accessLogCases()["plain"]
	for _, bc := range []struct {
		name string
		log  AccessLogger
	}{
		{"slog JSON", slogAccessLog{slog.New(slog.NewJSONHandler(io.Discard, nil))}},
		{"slog text", slogAccessLog{slog.New(slog.NewTextHandler(io.Discard, nil))}},
		{"NewJSONAccessLog", NewJSONAccessLog(io.Discard)},
		{"NewTextAccessLog", NewTextAccessLog(io.Discard)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e.Time = time.Now()
				bc.log.LogRequest(context.Background(), &e)
			}
		})
	}
}

// appendRFC3339Nano writes what time.RFC3339Nano writes, in any zone,
// whichever second it formatted before: the cached second must never
// leak into another second, zone or location.
func FuzzAppendRFC3339Nano(f *testing.F) {
	for _, t := range []time.Time{
		time.Date(2026, 11, 25, 23, 49, 1, 0, time.UTC),
		time.Date(2026, 11, 25, 23, 49, 1, 120_000_000, time.UTC),
		time.Date(2026, 11, 25, 23, 49, 1, 1, time.UTC),
		time.Date(2026, 3, 29, 1, 59, 59, 999_999_999, time.UTC),
	} {
		f.Add(t.UnixNano(), int64(0), 0)
		f.Add(t.UnixNano(), int64(1), 5*3600+30*60)
		f.Add(t.UnixNano(), int64(999_999_999), -7*3600)
	}
	f.Fuzz(func(t *testing.T, unixNano, step int64, offset int) {
		zones := []*time.Location{time.UTC, time.Local, time.FixedZone("X", offset%(18*3600))}
		if paris, err := time.LoadLocation("Europe/Paris"); err == nil {
			zones = append(zones, paris) // a zone whose offset changes
		}
		for i := range 3 {
			for _, loc := range zones {
				tm := time.Unix(0, unixNano+int64(i)*step).In(loc)
				want := string(tm.AppendFormat(nil, time.RFC3339Nano))
				if got := string(appendRFC3339Nano([]byte("x"), tm)); got != "x"+want {
					t.Fatalf("%v: got %q, want %q", tm, got[1:], want)
				}
			}
		}
	})
}
