package dashboard

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/petstorekit/petstore"
)

// FuzzDecodeNewDomain: the dashboard's add-domain decoder accepts only a
// JSON object whose name is a non-blank string, with every string valid
// UTF-8, and reads the name encoding/json reads; anything else is
// invalid_request.
func FuzzDecodeNewDomain(f *testing.F) {
	for _, s := range []string{
		`{"name":"shop.example.com"}`, `{"name":"a","NAME":"b"}`, `{"name":null}`, `{"name":" "}`, `{"name":7}`,
		"{\"name\":\"shop.example.com\",\"x\":\"\xff\"}", `{"name":"\ud800.example.com"}`, `[]`, ``, `{}{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		name, err := decodeNewDomain(body)
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("error %v is not invalid_request", err)
			}
			return
		}
		var want struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(body, &want); err != nil || want.Name != name {
			t.Fatalf("accepted %q as %q; encoding/json reads %q (%v)", body, name, want.Name, err)
		}
		if strings.TrimSpace(name) == "" || !utf8.ValidString(name) || !utf8.Valid(body) {
			t.Fatalf("accepted %q as %q", body, name)
		}
	})
}

// FuzzDecodeDomainConfig: the dashboard's config decoder accepts only an
// object whose redirects each have a from and a to, reads what
// encoding/json reads, and refuses everything else with invalid_request.
func FuzzDecodeDomainConfig(f *testing.F) {
	for _, s := range []string{
		`{"primary":"a.example.com","redirects":[{"from":"b.example.com","to":"a.example.com","status":301}]}`,
		`{"primary":"a","PRIMARY":"b"}`, `{"redirects":[{"from":"a","FROM":"b","to":"c"}]}`, `{"redirects":[null]}`,
		`{"redirects":{}}`, `{"primary":7}`, "{\"primary\":\"a\",\"x\":\"\xc3\"}", `{"redirects":[{"from":"a","to":"b","status":1e400}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		cfg, err := decodeDomainConfig(body)
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("error %v is not invalid_request", err)
			}
			return
		}
		if !utf8.Valid(body) {
			t.Fatalf("accepted invalid UTF-8 %q", body)
		}
		for i, rd := range cfg.Redirects {
			if strings.TrimSpace(rd.From) == "" || strings.TrimSpace(rd.To) == "" {
				t.Fatalf("accepted %q with redirect %d %+v", body, i, rd)
			}
		}
	})
}
