package httpx

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/strictjson"
)

// FuzzDecodeNewOrder: the order body decoder never panics, fails only with
// invalid_request, and what it accepts agrees with encoding/json reading
// the same object's fields: the integers and booleans sent, a status that is one of
// the three, and a ship date that is not the zero instant.
func FuzzDecodeNewOrder(f *testing.F) {
	for _, s := range []string{
		`{"petId":1}`, `{"petId":1,"quantity":2,"shipDate":"2027-01-02T03:04:05Z","status":"approved","complete":true}`,
		`{"petId":null}`, `{"petId":9223372036854775808}`, `{"petId":1,"quantity":2147483648}`, `[]`, `null`, ``, `{}{}`,
		`{"petId":1,"shipDate":"0001-01-01T00:00:00Z"}`, `{"petId":1,"shipDate":"2027-01-02T03:04:05.999999999-23:59"}`,
		`{"petId":1,"status":""}`, `{"petId":1,"complete":null}`, "{\"petId\":1,\"status\":\"placed\xff\"}",
		`{"petId":1,"quantity":1,"quantity":0}`, `{"petId":-0,"id":5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		no, err := strictjson.NewOrder(body)
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("error %v is not invalid_request", err)
			}
			return
		}
		// encoding/json matches names without regard to case; the API
		// matches them exactly, so the reference reads the exact keys.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			t.Fatalf("accepted %q that encoding/json rejects: %v", body, err)
		}
		var want petstore.NewOrder
		for name, dst := range map[string]any{"petId": &want.PetID, "quantity": &want.Quantity, "status": &want.Status, "complete": &want.Complete} {
			if raw, ok := fields[name]; ok {
				if err := json.Unmarshal(raw, dst); err != nil {
					t.Fatalf("accepted %q whose %s encoding/json rejects: %v", body, name, err)
				}
			}
		}
		if no.PetID != want.PetID || no.Quantity != want.Quantity || no.Status != want.Status || no.Complete != want.Complete {
			t.Fatalf("decoded %+v, encoding/json %+v", no, want)
		}
		if _, sent := fields["status"]; sent && !no.Status.Valid() {
			t.Fatalf("accepted %q with status %q", body, no.Status)
		}
		if _, sent := fields["quantity"]; sent && no.Quantity < 1 {
			t.Fatalf("accepted %q with quantity %d", body, no.Quantity)
		}
		if _, sent := fields["shipDate"]; sent && no.ShipDate.IsZero() {
			t.Fatalf("accepted %q with no ship date", body)
		}
	})
}

// FuzzParseOrderListQuery: GET /store/orders's query either parses into
// a filter the order service accepts the bounds of, or is
// invalid_request; a query url.ParseQuery cannot read whole is never
// accepted, and what is accepted is what the parsed parameters say.
func FuzzParseOrderListQuery(f *testing.F) {
	for _, s := range []string{
		"", "limit=20", "limit=0", "limit=abc", "status=delivered&limit=100", "status=Placed", "status=sold", "status=",
		"cursor=", "limit=1&limit=2", "status=placed&status=placed", "limit=%2B5", "limit=%", "limit=10;status=placed",
		"status=approved&limit=1%ZZ", "cursor=djE6MQ%0A",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		flt, err := parseOrderListQuery(raw)
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
		if _, sent := q["status"]; sent != (flt.Status != "") || flt.Status != "" && q.Get("status") != string(flt.Status) ||
			flt.Cursor != q.Get("cursor") || flt.Limit != 0 && atoi(q.Get("limit")) != flt.Limit {
			t.Fatalf("%q read as %+v", raw, flt)
		}
	})
}
