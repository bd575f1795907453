// Package testparallel sets how many of a package's tests that call t.Parallel run at once, for
// test packages whose tests wait (heartbeats, reconnects, timeouts) far more than they compute.
package testparallel

import (
	"flag"
	"strconv"
)

// Default parses the command line (flag.Parse, as a TestMain that reads flags must) and sets
// -test.parallel to n (at least 1) unless the command line gave it. go test's default,
// GOMAXPROCS, runs two tests at once on a 2-core machine, which then sits idle while they sleep.
// Call it from TestMain, before m.Run.
func Default(n int) {
	flag.Parse()
	if !Given() {
		_ = flag.Set("test.parallel", strconv.Itoa(max(n, 1)))
	}
}

// Given reports whether the command line gave -test.parallel (go test -parallel N).
func Given() bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	return given
}
