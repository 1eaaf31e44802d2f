package keyscli

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// FuzzParseInterleaved: the keys command's arguments, split at NUL, are
// read without panicking; an error names flags only, never quoting an
// argument (a secret pasted in the wrong place would be printed back),
// and arguments that are not flags come back in order.
func FuzzParseInterleaved(f *testing.F) {
	for _, s := range []string{
		"key_1\x00enterprise\x00-per-minute\x005", "-plan=pro\x00--project\x00p1", "-per-day", "-per-day=psk_secret123",
		"-psk_secret123", "--\x00-plan\x00x", "-\x00a", "-h", "--plan=", "-per-minute\x00psk_secret123",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.String("plan", "free", "")
		fs.String("project", "", "")
		fs.Int64("per-minute", 0, "")
		fs.Int64("per-day", 0, "")
		pos, err := parseInterleaved(fs, args)
		if err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return
			}
			known := []string{"unknown flag: " + flagsOf(fs)}
			fs.VisitAll(func(f *flag.Flag) {
				known = append(known, "-"+f.Name+" needs a value", "-"+f.Name+" takes a whole number")
			})
			if !slices.Contains(known, err.Error()) {
				t.Fatalf("parseInterleaved(%q): error %q is not one of those naming only flags", args, err)
			}
			return
		}
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") }) && !slices.Equal(pos, args) {
			t.Fatalf("parseInterleaved(%q) = %q", args, pos)
		}
		for _, p := range pos {
			if !slices.Contains(args, p) {
				t.Fatalf("parseInterleaved(%q) = %q, with %q it was not given", args, pos, p)
			}
		}
	})
}
