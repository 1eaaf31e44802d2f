package dashboard

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/petstorekit/petstore"
)

// FuzzDecodeNewWebhook: the dashboard's new-webhook decoder accepts only
// a JSON object whose url is a non-empty string, with every string valid
// UTF-8, and reads the url encoding/json reads; anything else is
// invalid_request.
func FuzzDecodeNewWebhook(f *testing.F) {
	for _, s := range []string{
		`{"url":"https://example.com/hook"}`, `{"url":"a","URL":"b"}`, `{"url":null}`, `{"url":""}`, `{"url":7}`,
		"{\"url\":\"https://example.com\",\"x\":\"\xff\"}", `{"url":"\ud800"}`, `[]`, ``, `{}{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		u, err := decodeNewWebhook(body)
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("error %v is not invalid_request", err)
			}
			return
		}
		var want struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal(body, &want); err != nil || want.URL != u {
			t.Fatalf("accepted %q as %q; encoding/json reads %q (%v)", body, u, want.URL, err)
		}
		if u == "" || !utf8.ValidString(u) || !utf8.Valid(body) {
			t.Fatalf("accepted %q as %q", body, u)
		}
	})
}
