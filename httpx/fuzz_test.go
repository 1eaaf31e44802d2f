package httpx

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/strictjson"
)

// FuzzDecodeNewPet: the body decoder never panics, fails only with
// invalid_request, and what it accepts is what encoding/json reads from
// the same object, with nothing replaced: a U+FFFD in an accepted name was
// sent as one, and a status key that is present holds one of the three
// values. More seeds (invalid UTF-8, surrogate escapes, empty and null
// status) are in testdata/fuzz/FuzzDecodeNewPet.
func FuzzDecodeNewPet(f *testing.F) {
	for _, s := range []string{
		`{"name":"Rex","categoryId":1}`, `{"name":"Rex","categoryId":1,"status":"sold","id":9}`,
		`{"name":null,"categoryId":1}`, `{"categoryId":9223372036854775808}`, `[]`, `null`, ``, `{}{}`,
		`{"name":"\u00e9","categoryId":-0}`, `{"name":"x","categoryId":1e3}`, ` {"name":"x","categoryId":1} `,
		"{\"name\":\"a\xff\xfeb\",\"categoryId\":1}", `{"name":"\ud800","categoryId":1}`, `{"name":"\ud83d\udc08","categoryId":1}`,
		`{"name":"x","categoryId":1,"status":""}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		np, err := strictjson.NewPet(body)
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("error %v is not invalid_request", err)
			}
			return
		}
		var want petstore.NewPet
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("accepted %q that encoding/json rejects: %v", body, err)
		}
		if np.Name != want.Name || np.CategoryID != want.CategoryID || np.Status != want.Status {
			t.Fatalf("decoded %+v, encoding/json %+v", np, want)
		}
		if strings.ContainsRune(np.Name, utf8.RuneError) &&
			!bytes.Contains(body, []byte("\uFFFD")) && !bytes.Contains(bytes.ToLower(body), []byte(`\ufffd`)) {
			t.Fatalf("accepted %q with a name that encoding/json repaired to %q", body, np.Name)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			t.Fatal(err)
		}
		if _, sent := fields["status"]; sent && !np.Status.Valid() {
			t.Fatalf("accepted %q with status %q", body, np.Status)
		}
	})
}

// FuzzParseListQuery: any raw query string either parses into a filter
// the service accepts the bounds of, or is invalid_request; a query
// url.ParseQuery cannot read whole is never accepted, and what is
// accepted is what the parsed parameters say.
func FuzzParseListQuery(f *testing.F) {
	for _, s := range []string{
		"", "limit=20", "limit=0", "limit=abc", "status=sold&limit=100", "status=Sold", "cursor=", "limit=1&limit=2", "limit=%2B5",
		"limit=%", "limit=10;status=sold", "status=sold&limit=1%ZZ", "cursor=djE6MQ%0A",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		flt, err := parseListQuery(raw)
		q, qerr := url.ParseQuery(raw)
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("error %v is not invalid_request", err)
			}
			return
		}
		if qerr != nil {
			t.Fatalf("accepted %q, which url.ParseQuery refuses: %v", raw, qerr)
		}
		if flt.Limit < 0 || flt.Limit > petstore.MaxLimit || flt.Status != "" && !flt.Status.Valid() {
			t.Fatalf("accepted %q as %+v", raw, flt)
		}
		if flt.Status != "" && q.Get("status") != string(flt.Status) || flt.Cursor != q.Get("cursor") ||
			flt.Limit != 0 && atoi(q.Get("limit")) != flt.Limit {
			t.Fatalf("%q read as %+v", raw, flt)
		}
	})
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// FuzzParsePetID: accepted ids print back to the same text.
func FuzzParsePetID(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "+1", "abc", "1.5", "9223372036854775807", "9223372036854775808", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := parsePetID(s)
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("error %v is not invalid_request", err)
			}
			return
		}
		if got := strconv.FormatInt(id, 10); got != s && "-"+got != s && !(s == "-0" && id == 0) {
			if n, _ := strconv.ParseInt(s, 10, 64); n != id {
				t.Fatalf("%q parsed as %d", s, id)
			}
		}
	})
}

// FuzzRequestID: the id is always a safe header and log value.
func FuzzRequestID(f *testing.F) {
	for _, s := range []string{"", "abc", "a b", "x\nInjected: 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id := requestID(s)
		if len(id) == 0 || len(id) > 128 {
			t.Fatalf("id %q", id)
		}
		for _, c := range []byte(id) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				t.Fatalf("id %q has %q", id, c)
			}
		}
		if id != s {
			// A generated id is an RFC 9562 UUID v7: version 7, variant 10.
			u, err := uuid.Parse(id)
			if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
				t.Fatalf("generated id %q is not a UUID v7 (%v)", id, err)
			}
			if ms := time.Until(time.Unix(u.Time().UnixTime())); ms > time.Second || ms < -time.Minute {
				t.Fatalf("generated id %q carries time %v off now", id, ms)
			}
		}
	})
}

// FuzzRequestHash: the Idempotency-Key hash is a function of what the
// operation decodes and nothing else. For any two bodies that decode,
// equal NewPets have equal hashes and different NewPets different ones;
// a body that does not decode is refused with invalid_request (and never
// hashed).
func FuzzRequestHash(f *testing.F) {
	for _, s := range [][2]string{
		{`{"name":"Alpha","categoryId":1}`, `{"categoryId":1,"name":"Alpha"}`},
		{`{"name":"Alpha","categoryId":1,"NAME":"Bravo"}`, `{"name":"Bravo","categoryId":1}`},
		{`{"name":"Rex","categoryId":1,"x":[1, 2]}`, "{ \"x\" : [1,2], \"categoryId\":1, \"name\":\"Rex\" }"},
		{`{"name":"R\u0065x","categoryId":1}`, `{"name":"Rex","categoryId":1,"status":"sold"}`},
		{`{"name":"a>b","categoryId":1}`, `{"name":"a\u003eb","categoryId":1}`},
		{"{\"name\":\"Rex\",\"categoryId\":1,\"x\":\"\xff\"}", `{"name":"Rex","categoryId":1,"x":"\ud800"}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		npA, errA := strictjson.NewPet(a)
		npB, errB := strictjson.NewPet(b)
		for _, err := range []error{errA, errB} {
			if err != nil && petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("error %v is not invalid_request", err)
			}
		}
		if errA != nil || errB != nil {
			return
		}
		hA, hB := requestHash("POST", "/v1/pets", npA), requestHash("POST", "/v1/pets", npB)
		if (npA == npB) != (hA == hB) {
			t.Fatalf("%q → %+v and %q → %+v: equal pets %v, equal hashes %v", a, npA, b, npB, npA == npB, hA == hB)
		}
	})
}
