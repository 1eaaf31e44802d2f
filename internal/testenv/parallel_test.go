package testenv

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

func TestRaiseParallel(t *testing.T) {
	f := flag.Lookup("test.parallel")
	before := f.Value.String()
	t.Cleanup(func() { _ = f.Value.Set(before) })
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })

	// Below the cores, it never lowers -parallel.
	RaiseParallel(1)
	if got := f.Value.String(); got != before {
		t.Fatalf("RaiseParallel(1) set -parallel from %s to %s", before, got)
	}
	more := runtime.GOMAXPROCS(0) + 3
	RaiseParallel(more)
	want := strconv.Itoa(more)
	if given {
		want = before // the command line's value rules
	}
	if got := f.Value.String(); got != want {
		t.Fatalf("RaiseParallel(%d) left -parallel at %s, want %s (given on the command line: %v)", more, got, want, given)
	}
}
