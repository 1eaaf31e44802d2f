package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/petstorekit/petstore/keyscli"
)

// usageError is a malformed command line. main prints it, and then usage
// when there is one, on stderr and exits with status 2, as the flag
// package does; any other error exits with status 1.
type usageError struct {
	err   error
	usage string
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usageOf reports whether err is a malformed command line, and the usage
// to print after it ("" for none).
func usageOf(err error) (usage string, ok bool) {
	var ue usageError
	switch {
	case errors.As(err, &ue):
		return ue.usage, true
	case errors.Is(err, keyscli.ErrUsage):
		return keysUsage, true
	}
	return "", false
}

// subcommand is one thing the server binary does instead of serving.
type subcommand struct {
	name    string
	summary string // one line for the server's usage
	usage   string // printed by "server NAME -h"
}

// subcommands lists every subcommand, in the order the usage shows them:
// parseConfig accepts exactly these, and the usage text is made from them.
var subcommands = []subcommand{
	{name: "keys", summary: "create, list, revoke or re-plan API keys in -db, telling running servers", usage: keysUsage},
	{name: "projects", summary: "list projects with their plan and last deploy, or record a deploy", usage: projectsUsage},
	{name: "bans", summary: "list or lift rate-limit bans (Redis with -redis, else the server's -admin-addr)", usage: adminUsage},
	{name: "version", summary: "print the module version, VCS revision and Go version the binary was built with", usage: versionUsage},
}

// keysUsage is keyscli's usage with what this server adds to the keys
// subcommand.
const keysUsage = keyscli.Usage + `
This server adds:
  keys create -deployed   the key's new project counts as deployed (custom domains need it)
  keys usage ID           the key's counts in both windows (as bans, see server bans -h)`

func findSubcommand(name string) (subcommand, bool) {
	for _, sc := range subcommands {
		if sc.name == name {
			return sc, true
		}
	}
	return subcommand{}, false
}

func subcommandNames() string {
	names := make([]string, len(subcommands))
	for i, sc := range subcommands {
		names[i] = sc.name
	}
	return strings.Join(names, ", ")
}

// printUsage writes the server's usage: how to run it, its subcommands
// and its flags.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "usage: server [flags]                 serve the API, the dashboard and custom domains")
	for _, sc := range subcommands {
		fmt.Fprintf(w, "       server [flags] %s ... [flags]   %s (server %s -h for more)\n", sc.name, sc.summary, sc.name)
	}
	fmt.Fprintln(w, "\nflags (each also read from the environment variable in parentheses):")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// splitServerFlags takes the server's own flags out of a subcommand's
// arguments ("keys list -db postgres://..."), setting them in fs, and
// returns the rest for the subcommand. help is true when the arguments ask
// for the subcommand's help (-h, -help).
func splitServerFlags(fs *flag.FlagSet, args []string) (rest []string, help bool, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(rest, args[i:]...), false, nil
		}
		if len(a) < 2 || a[0] != '-' {
			rest = append(rest, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "h" || name == "help" {
			return nil, true, nil
		}
		f := fs.Lookup(name)
		if f == nil { // the subcommand's own flag
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, false, fmt.Errorf("flag needs an argument: -%s", name)
			}
			i++
			value = args[i]
		}
		if err := fs.Set(name, value); err != nil {
			return nil, false, fmt.Errorf("-%s: %w", name, err)
		}
	}
	return rest, false, nil
}
