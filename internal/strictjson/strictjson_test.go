package strictjson_test

import (
	"encoding/json"
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
