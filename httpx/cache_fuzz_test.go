package httpx

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzParsePetsChange: a pets change another process published reads
// back as it was written, and any payload at all reads as an id it holds
// (0, every page, for one it cannot read) and only valid statuses.
func FuzzParsePetsChange(f *testing.F) {
	for _, s := range []string{"31:available,pending", "7", "0:sold", "-3:sold", "9223372036854775808:sold", "99999999999999999999", "x:sold", "5:sold,", "5:Sold", ":"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, statuses := parsePetsChange(s)
		idText, _, _ := strings.Cut(s, ":")
		if n, err := strconv.ParseInt(idText, 10, 64); (err != nil && id != 0) || (err == nil && id != n) {
			t.Fatalf("parsePetsChange(%q) = id %d, want 0 for an id it cannot read", s, id)
		}
		for _, st := range statuses {
			if !st.Valid() {
				t.Fatalf("parsePetsChange(%q) = %v", s, statuses)
			}
		}
		if gotID, got := parsePetsChange(petsChange(id, statuses)); gotID != id || !slices.Equal(got, statuses) {
			t.Fatalf("%d, %v written as %q reads %d, %v", id, statuses, petsChange(id, statuses), gotID, got)
		}
	})
}
