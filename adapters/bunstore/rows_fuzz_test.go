package bunstore

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/petstorekit/petstore/customdomain"
)

// FuzzDomainRow: a domain row as the database returns it (the entry as
// JSON, its version and ownership token columns) either fails to decode
// or decodes into an entry whose version and token are the columns', and
// which, stored again, reads back the same.
func FuzzDomainRow(f *testing.F) {
	e := customdomain.Entry{ID: "dom_1", ProjectID: "prj_1", Name: "shop.example.com", Status: "pending"}
	data, _ := json.Marshal(e)
	f.Add(string(data), int64(3), "tok")
	f.Add(`{"createdAt":"2026-11-28T01:02:03.123456789+01:00","name":"A.example.com"}`, int64(0), "")
	f.Add(`{"outbox":[{}],"version":99}`, int64(-1), "x")
	f.Add(`null`, int64(1), "")
	f.Add(`[]`, int64(1), "")
	f.Fuzz(func(t *testing.T, data string, version int64, token string) {
		got, err := domainRow{Data: data, Version: version, OwnershipToken: token}.entry()
		if err != nil {
			return
		}
		if got.Version != version || got.OwnershipToken != token {
			t.Fatalf("row %q, version %d, token %q read as version %d, token %q", data, version, token, got.Version, got.OwnershipToken)
		}
		row, err := newDomainRow(got)
		if err != nil {
			return // not storable: the writer refuses it
		}
		again, err := row.entry()
		if err != nil || !reflect.DeepEqual(mustJSON(t, again), mustJSON(t, got)) {
			t.Fatalf("entry %+v stored as %q reads %+v, %v", got, row.Data, again, err)
		}
	})
}

// FuzzDomainConfigRow: a project's domain config row decodes, if at all,
// into the row's project with a non-nil redirect list, the same once
// stored again.
func FuzzDomainConfigRow(f *testing.F) {
	f.Add(`{"primary":"shop.example.com","redirects":[{"from":"a.example.com","to":"shop.example.com"}]}`, "prj_1")
	f.Add(`{"projectId":"other","redirects":null}`, "prj_2")
	f.Add(`{}`, "")
	f.Fuzz(func(t *testing.T, data, project string) {
		c, err := domainConfigRow{ProjectID: project, Data: data}.config()
		if err != nil {
			return
		}
		if c.ProjectID != project || c.Redirects == nil {
			t.Fatalf("config %q of %q read as %+v", data, project, c)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		again, err := domainConfigRow{ProjectID: project, Data: string(b)}.config()
		if err != nil || !reflect.DeepEqual(mustJSON(t, again), mustJSON(t, c)) {
			t.Fatalf("config %+v stored as %s reads %+v, %v", c, b, again, err)
		}
	})
}

// FuzzDeliveryRow: a webhook delivery's answers column decodes, if at
// all, into a non-nil list that reads back the same once stored again.
func FuzzDeliveryRow(f *testing.F) {
	f.Add(`[{"at":"2026-11-28T00:00:00Z","status":503,"error":"x"}]`, int64(1))
	f.Add(`null`, int64(0))
	f.Add(`[]`, int64(-1))
	f.Fuzz(func(t *testing.T, answers string, next int64) {
		d, err := webhookDeliveryRow{Answers: answers, NextAttemptNS: next}.delivery()
		if err != nil {
			return
		}
		if d.Answers == nil || (next != 0) == d.NextAttemptAt.IsZero() {
			t.Fatalf("answers %q, next %d read as %+v", answers, next, d)
		}
		b, err := json.Marshal(d.Answers)
		if err != nil {
			t.Fatal(err)
		}
		again, err := webhookDeliveryRow{Answers: string(b), NextAttemptNS: next}.delivery()
		if err != nil || !reflect.DeepEqual(mustJSON(t, again), mustJSON(t, d)) {
			t.Fatalf("delivery %+v stored as %s reads %+v, %v", d, b, again, err)
		}
	})
}

// mustJSON is v as JSON, the form the rows hold, to compare decoded
// values without the time zones' pointers.
func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
