package httpx_test

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/httpx"
)

// TestErrorTableListsEveryCode keeps docs/errors.md's table, which binds
// every issue, equal to the codes the module has and their statuses.
func TestErrorTableListsEveryCode(t *testing.T) {
	page, err := os.ReadFile("../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]int{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (\\d{3}) \\|").FindAllStringSubmatch(string(page), -1) {
		documented[m[1]], _ = strconv.Atoi(m[2])
	}
	codes := petstore.Codes()
	for _, code := range codes {
		status, ok := documented[code]
		if !ok {
			t.Errorf("docs/errors.md has no row for %s", code)
		} else if want := httpx.StatusOf(code); status != want {
			t.Errorf("docs/errors.md gives %s status %d; httpx.StatusOf says %d", code, status, want)
		}
	}
	for code := range documented {
		if !slices.Contains(codes, code) {
			t.Errorf("docs/errors.md lists %s, which petstore.Codes does not", code)
		}
	}
}
