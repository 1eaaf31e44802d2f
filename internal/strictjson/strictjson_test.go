package strictjson_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/strictjson"
)

// FuzzObject: what Object accepts is one JSON object of valid UTF-8 that
// encoding/json reads the same way; anything it refuses is invalid_request.
func FuzzObject(f *testing.F) {
	for _, s := range []string{`{"name":"a"}`, `{"name":"a","NAME":"b"}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{} {}`, `[1]`, ` {"a":{"b":[1,"x"]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fields, err := strictjson.Object(body)
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("%q: %v, want invalid_request", body, err)
			}
			return
		}
		var m map[string]json.RawMessage
		if !json.Valid(body) || !utf8.Valid(body) || json.Unmarshal(body, &m) != nil || len(m) != len(fields) {
			t.Fatalf("%q accepted as %v", body, fields)
		}
	})
}

func TestObject(t *testing.T) {
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`{"name":"Rex","categoryId":1}`, true},
		{`{"name":"a","NAME":"b"}`, false},
		{`{"name":"\ud800"}`, false},
		{`{"name":"\ud83d\ude00"}`, true},
		{`{"a":1} {"b":2}`, false},
		{`[]`, false},
	} {
		if _, err := strictjson.Object([]byte(tc.body)); (err == nil) != tc.ok {
			t.Errorf("Object(%s): %v, want ok %v", tc.body, err, tc.ok)
		}
	}
}

// FuzzFold: two member names fold alike exactly when encoding/json
// matches them, by simple Unicode case folding (strings.EqualFold).
func FuzzFold(f *testing.F) {
	for _, p := range [][2]string{{"categoryId", "CATEGORYID"}, {"categoryId", "categoryıd"}, {"id", "İD"}, {"kind", "\u212aind"}, {"status", "\u017ftatus"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		if got, want := strictjson.Fold(a) == strictjson.Fold(b), strings.EqualFold(a, b); got != want {
			t.Fatalf("Fold(%q) == Fold(%q) is %v, strings.EqualFold %v", a, b, got, want)
		}
	})
}
