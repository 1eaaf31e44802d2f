package keyscli_test

import (
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/keyscli"
)

func TestParseSpecs(t *testing.T) {
	tests := []struct {
		in   string
		want []keyscli.Spec
		bad  bool
	}{
		{in: "", want: nil},
		{in: "a:free, b:PRO,c:business", want: []keyscli.Spec{{"a", petstore.PlanFree, petstore.Limits{}}, {"b", petstore.PlanPro, petstore.Limits{}}, {"c", petstore.PlanBusiness, petstore.Limits{}}}},
		{in: "x:y:pro", want: []keyscli.Spec{{"x:y", petstore.PlanPro, petstore.Limits{}}}},
		{in: "e:enterprise:100/5000", want: []keyscli.Spec{{"e", petstore.PlanEnterprise, petstore.Limits{PerMinute: 100, PerDay: 5000}}}},
		{in: "a:b:enterprise:1/2", want: []keyscli.Spec{{"a:b", petstore.PlanEnterprise, petstore.Limits{PerMinute: 1, PerDay: 2}}}},
		{in: "nokey", bad: true},
		{in: ":pro", bad: true},
		{in: "a:gold", bad: true},
		{in: "a:enterprise", bad: true},
		{in: "a:pro:1/2", bad: true},
		{in: "a:enterprise:10/5", bad: true},
		{in: "a:enterprise:0/5", bad: true},
		{in: "a:enterprise:x/5", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := keyscli.ParseSpecs(tt.in)
			if (err != nil) != tt.bad {
				t.Fatalf("err = %v, want error %v", err, tt.bad)
			}
			if !tt.bad && len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Fatalf("got %+v, want %+v", got[i], tt.want[i])
				}
			}
		})
	}
}

// FuzzParseSpecs checks that whatever ParseSpecs accepts is a key the
// store would accept too.
func FuzzParseSpecs(f *testing.F) {
	for _, s := range []string{"a:free", "a:enterprise:1/2,b:pro", "x:y:z", ":::", "a:enterprise:9999999999999999999/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		specs, err := keyscli.ParseSpecs(s)
		if err != nil {
			return
		}
		for _, k := range specs {
			key := petstore.APIKey{ID: "id", ProjectID: "p", Plan: k.Plan, Limits: k.Limits}
			if k.Secret == "" || key.Validate() != nil {
				t.Fatalf("%q accepted as %+v", s, k)
			}
		}
	})
}
