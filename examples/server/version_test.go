package main

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"
)

func TestPrintVersion(t *testing.T) {
	info := &debug.BuildInfo{
		GoVersion: "go1.25.0",
		Main:      debug.Module{Path: "github.com/petstorekit/petstore", Version: "v0.1.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-26T05:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	var out bytes.Buffer
	printVersion(&out, info, true)
	want := "github.com/petstorekit/petstore v0.1.0\n" +
		"revision 0123456789abcdef0123456789abcdef01234567 2026-11-26T05:00:00Z with uncommitted changes\n" +
		"go1.25.0\n"
	if got := out.String(); got != want {
		t.Errorf("printVersion:\n%s\nwant:\n%s", got, want)
	}
}

// TestVersionFlagAndSubcommand runs the server's command line both ways:
// each prints the build's module, version and Go version, and serves
// nothing and opens no database.
func TestVersionFlagAndSubcommand(t *testing.T) {
	for _, args := range [][]string{{"-version"}, {"version"}, {"-db", "sqlite:/nonexistent/dir/x.db", "version"}} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
			t.Fatalf("run(%q): %v", args, err)
		}
		info, _ := debug.ReadBuildInfo()
		got := stdout.String()
		if !strings.Contains(got, "github.com/petstorekit/petstore") || !strings.HasSuffix(got, info.GoVersion+"\n") || !strings.Contains(got, "\nrevision ") {
			t.Errorf("run(%q) printed %q, want the module, a revision line and %s", args, got, info.GoVersion)
		}
		if stderr.Len() != 0 {
			t.Errorf("run(%q) wrote to stderr: %q", args, stderr.String())
		}
	}
}
