//go:build race

package ratelimit_test

// raceEnabled: the race detector keeps shadow memory for the whole heap,
// so the process's resident size means nothing under it.
const raceEnabled = true
