package testenv

import (
	"flag"
	"runtime"
	"strconv"
)

// RaiseParallel raises go test's -parallel to n on a machine with fewer
// than n cores, unless the command line set -parallel, which rules. Call
// it from TestMain, after flag.Parse and before m.Run, in a package whose
// parallel tests spend most of their time waiting (for a timeout, a
// paused link, a process starting), not on a core: at go test's default
// of one per core, two on a CI machine, such a package's wall time is
// mostly waiting with both cores idle.
func RaiseParallel(n int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given && runtime.GOMAXPROCS(0) < n {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
