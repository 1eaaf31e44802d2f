package main

import (
	"runtime/debug"
	"testing"
)

// TestGCPercentDefaultsUnlessGOGCIsSet: without GOGC the server collects
// at defaultGCPercent; with it, the runtime's reading of GOGC stands.
func TestGCPercentDefaultsUnlessGOGCIsSet(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)
	setGCPercent(func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Fatalf("GOGC unset: GC percent %d, want %d", got, defaultGCPercent)
	}
	setGCPercent(func(k string) (string, bool) { return "100", k == "GOGC" })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC=100 set: GC percent %d, want it left at 100", got)
	}
}
