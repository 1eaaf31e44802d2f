package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// versionUsage describes the version subcommand.
const versionUsage = `usage:
  version    print the module's version, the VCS revision it was built from and the Go version (also -version)`

// printVersion writes what the binary was built from, as
// runtime/debug.ReadBuildInfo reports it: the module and its version
// ("(devel)" for a build from a checkout), the VCS revision and its time,
// whether the work tree had uncommitted changes, and the Go version.
func printVersion(w io.Writer, info *debug.BuildInfo, ok bool) {
	if !ok {
		fmt.Fprintln(w, "petstore server: no build information (built without module support)")
		return
	}
	mod, version := info.Main.Path, info.Main.Version
	if mod == "" {
		mod = "github.com/petstorekit/petstore"
	}
	if version == "" {
		version = "(unknown)"
	}
	revision, at, modified := "unknown (not built by go build from a checkout)", "", ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			at = " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " with uncommitted changes"
			}
		}
	}
	fmt.Fprintf(w, "%s %s\nrevision %s%s%s\n%s\n", mod, version, revision, at, modified, info.GoVersion)
}
