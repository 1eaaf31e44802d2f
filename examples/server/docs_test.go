package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/petstorekit/petstore/internal/doccheck"
)

// serverFlags returns the flags of the server's real FlagSet, as its usage
// lists them, each with whether it is boolean (listed without a type).
func serverFlags(t *testing.T) map[string]bool {
	t.Helper()
	var out bytes.Buffer
	if _, err := parseConfig([]string{"-h"}, func(string) string { return "" }, &out); err != flag.ErrHelp {
		t.Fatalf("-h: %v, want flag.ErrHelp", err)
	}
	flags := map[string]bool{}
	for line := range strings.SplitSeq(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "  -"); ok {
			name, typ, _ := strings.Cut(rest, " ")
			flags[name] = typ == ""
		}
	}
	if len(flags) < 10 {
		t.Fatalf("found only %d flags in the usage:\n%s", len(flags), out.String())
	}
	return flags
}

// checkServerArgs checks a command line of the server: its flags, then a
// subcommand that exists, then flags that are the server's (they may
// follow a subcommand) or that the subcommands' usage texts name.
func checkServerArgs(args []string, flags map[string]bool) error {
	if err := doccheck.CheckProgramFlags(args, flags); err != nil {
		return err
	}
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if isBool := flags[name]; !isBool && !hasValue {
			i++
		}
		i++
	}
	if i >= len(args) {
		return nil
	}
	if _, ok := findSubcommand(args[i]); !ok {
		return fmt.Errorf("no subcommand %q (the subcommands are %s)", args[i], subcommandNames())
	}
	var usages strings.Builder
	for _, sc := range subcommands {
		usages.WriteString(sc.usage + "\n")
	}
	for _, a := range args[i+1:] {
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if _, ok := flags[name]; ok {
			continue
		}
		if !regexp.MustCompile(`(^|[^\w-])-` + regexp.QuoteMeta(name) + `($|[^\w-])`).MatchString(usages.String()) {
			return fmt.Errorf("neither the server nor its subcommands have a flag %s", a)
		}
	}
	return nil
}

// TestDocumentedServerCommands checks every "go run ./examples/server ..."
// of README.md and docs/*.md against the server's real flags and
// subcommands.
func TestDocumentedServerCommands(t *testing.T) {
	cmds, err := doccheck.GoCommands("../..")
	if err != nil {
		t.Fatal(err)
	}
	flags := serverFlags(t)
	n := 0
	for _, c := range cmds {
		if c.Args[1] != "run" {
			continue
		}
		pkg, args, err := doccheck.GoRun("../..", c.Args[2:])
		if err != nil || pkg != "./examples/server" {
			continue // internal/doccheck's test reports the rest
		}
		n++
		if err := checkServerArgs(args, flags); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
	if n < 5 {
		t.Errorf("found only %d documented server commands", n)
	}
}

// TestCheckServerArgsFindsMistakes shows that a documented flag or
// subcommand the server lacks is reported.
func TestCheckServerArgsFindsMistakes(t *testing.T) {
	flags := serverFlags(t)
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"-redis", "127.0.0.1:6379", "bans", "list"}, true},
		{[]string{"keys", "create", "-plan", "pro", "-deployed", "-db", "memory"}, true},
		{[]string{"-reddis", "127.0.0.1:6379"}, false},
		{[]string{"kees", "list"}, false},
		{[]string{"keys", "create", "-plann", "pro"}, false},
	} {
		err := checkServerArgs(tc.args, flags)
		if (err == nil) != tc.ok {
			t.Errorf("checkServerArgs(%q) = %v, want ok=%v", tc.args, err, tc.ok)
		}
	}
}

// TestConfigurationTableListsEveryFlag keeps docs/configuration.md's table
// complete: each of the server's flags has its row.
func TestConfigurationTableListsEveryFlag(t *testing.T) {
	page, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range serverFlags(t) {
		if !strings.Contains(string(page), "| `-"+name+"` |") {
			t.Errorf("docs/configuration.md has no row for -%s", name)
		}
	}
}
