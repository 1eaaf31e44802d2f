package dashboard

import (
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/webhook"
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

// FuzzDecodeRollSecret: the dashboard's roll-secret decoder accepts an
// empty body, or a JSON object (every string valid UTF-8) whose
// expiresInSeconds is absent, null or a whole number from 0 to 604800,
// and reads the overlap encoding/json reads (24 hours when there is
// none); anything else is invalid_request.
func FuzzDecodeRollSecret(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"expiresInSeconds":null}`, `{"expiresInSeconds":0}`, `{"expiresInSeconds":3600}`,
		`{"expiresInSeconds":604800}`, `{"expiresInSeconds":604801}`, `{"expiresInSeconds":-1}`,
		`{"expiresInSeconds":1.5}`, `{"expiresInSeconds":1e3}`, `{"expiresInSeconds":"60"}`,
		`{"expiresInSeconds":99999999999999999999}`, `{"expiresInSeconds":1,"ExpiresInSeconds":2}`,
		"{\"x\":\"\xff\"}", `[]`, `null`, `{}{}`, ` `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		overlap, err := decodeRollSecret(body)
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("error %v is not invalid_request", err)
			}
			return
		}
		if len(body) == 0 {
			if overlap != webhook.DefaultSecretOverlap {
				t.Fatalf("an empty body means %v, want %v", overlap, webhook.DefaultSecretOverlap)
			}
			return
		}
		var want struct {
			ExpiresInSeconds *int64 `json:"expiresInSeconds"`
		}
		if err := json.Unmarshal(body, &want); err != nil || !utf8.Valid(body) {
			t.Fatalf("accepted %q (%v), which encoding/json refuses or is not UTF-8", body, err)
		}
		if want.ExpiresInSeconds == nil {
			if overlap != webhook.DefaultSecretOverlap {
				t.Fatalf("accepted %q as %v, want the default %v", body, overlap, webhook.DefaultSecretOverlap)
			}
			return
		}
		if n := *want.ExpiresInSeconds; n < 0 || n > 604800 || overlap != time.Duration(n)*time.Second {
			t.Fatalf("accepted %q as %v; encoding/json reads %d seconds", body, overlap, n)
		}
	})
}
