package petstoretest_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/petstoretest"
)

// TestExpectContinueIsRefusedUnread: a request with Expect:
// 100-continue and a wrong key gets the API's 401 at once, as from the
// real server, which refuses it before reading the body: no 100 Continue
// invites the client to send a body the API never reads. With the right
// key the body is asked for, sent, and logged.
func TestExpectContinueIsRefusedUnread(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"name":"Rex","categoryId":1}`
	send := func(key string) (statusLines []string) {
		t.Helper()
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// A bound on a hang, not a wait for the outcome.
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "POST /v1/pets HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", u.Host, key, len(body))
		br := bufio.NewReader(conn)
		for {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			statusLines = append(statusLines, resp.Status)
			if resp.StatusCode != http.StatusContinue {
				io.Copy(io.Discard, resp.Body)
				return statusLines
			}
			io.WriteString(conn, body)
		}
	}
	if got, want := strings.Join(send("wrong"), ", "), "401 Unauthorized"; got != want {
		t.Errorf("wrong key: answers %q, want %q", got, want)
	}
	if got, want := strings.Join(send(srv.Key()), ", "), "100 Continue, 201 Created"; got != want {
		t.Errorf("right key: answers %q, want %q", got, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests logged, want 2", len(reqs))
	}
	if r := reqs[0]; r.Status != http.StatusUnauthorized || len(r.Body) != 0 {
		t.Errorf("wrong key: logged %d with body %q, want 401 and no body: none was sent", r.Status, r.Body)
	}
	if r := reqs[1]; r.Status != http.StatusCreated || string(r.Body) != body {
		t.Errorf("right key: logged %d with body %q, want 201 and %q", r.Status, r.Body, body)
	}
}

// TestOtherExpectationFails: a request with an Expect other than
// 100-continue gets 417 Expectation Failed before the API sees it, as Go's
// server answers it, with no listener too: no pet is created, and the
// request is not logged, since no handler ran.
func TestOtherExpectationFails(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opts []petstoretest.Option
	}{{"loopback", nil}, {"no listener", []petstoretest.Option{petstoretest.WithoutListener()}}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			srv := petstoretest.NewServer(t, mode.opts...)
			req, err := http.NewRequest("POST", srv.URL+"/pets", strings.NewReader(`{"name":"Rex","categoryId":1}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+srv.Key())
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Expect", "202-accepted")
			resp, err := srv.HTTPClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusExpectationFailed || !resp.Close {
				t.Errorf("Expect: 202-accepted: %s, connection closed %v; want 417 Expectation Failed, closing the connection", resp.Status, resp.Close)
			}
			if pets := srv.Pets(); len(pets) != 0 {
				t.Errorf("Expect: 202-accepted created %d pets, want none: the API never sees it", len(pets))
			}
			if reqs := srv.Requests(); len(reqs) != 0 {
				t.Errorf("Expect: 202-accepted: %d requests logged, want none: no handler ran", len(reqs))
			}
		})
	}
}
