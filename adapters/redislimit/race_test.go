//go:build race

package redislimit_test

// raceEnabled: the race detector slows every call about tenfold, so the
// figures of the load test mean nothing under it.
const raceEnabled = true
