package changefeed_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/changefeed"
)

// The creates published together name the lowest id among them and their
// statuses, or none when one had no status; ParsePetsID reads them back.
func TestPetsIDRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		id       int64
		statuses []petstore.PetStatus
		want     string
	}{
		{31, nil, "31"},
		{31, []petstore.PetStatus{"pending"}, "31:pending"},
		{31, []petstore.PetStatus{"available", "sold"}, "31:available,sold"},
	} {
		got := changefeed.PetsID(tc.id, tc.statuses)
		if got != tc.want {
			t.Errorf("PetsID(%d, %v) = %q, want %q", tc.id, tc.statuses, got, tc.want)
		}
		if id, statuses := changefeed.ParsePetsID(got); id != tc.id || !slices.Equal(statuses, tc.statuses) {
			t.Errorf("ParsePetsID(%q) = %d, %v", got, id, statuses)
		}
	}
}

// FuzzParsePetsID: a pets change another process published reads back as
// it was written, and any payload at all reads as an id it holds (0,
// every page, for one it cannot read) and only valid statuses.
func FuzzParsePetsID(f *testing.F) {
	for _, s := range []string{"31:available,pending", "7", "0:sold", "-3:sold", "9223372036854775808:sold", "99999999999999999999", "x:sold", "5:sold,", "5:Sold", ":"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, statuses := changefeed.ParsePetsID(s)
		idText, _, _ := strings.Cut(s, ":")
		if n, err := strconv.ParseInt(idText, 10, 64); (err != nil && id != 0) || (err == nil && id != n) {
			t.Fatalf("ParsePetsID(%q) = id %d, want 0 for an id it cannot read", s, id)
		}
		for _, st := range statuses {
			if !st.Valid() {
				t.Fatalf("ParsePetsID(%q) = %v", s, statuses)
			}
		}
		if gotID, got := changefeed.ParsePetsID(changefeed.PetsID(id, statuses)); gotID != id || !slices.Equal(got, statuses) {
			t.Fatalf("%d, %v written as %q reads %d, %v", id, statuses, changefeed.PetsID(id, statuses), gotID, got)
		}
	})
}
