package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// root is the module root, where README.md and docs/ are.
const root = "../.."

// TestDocumentedCommands checks every go run and go test command of
// README.md and docs/*.md: packages and flags that exist. The server's
// subcommands and its real FlagSet are checked by examples/server's
// TestDocumentedServerCommands.
func TestDocumentedCommands(t *testing.T) {
	cmds, err := GoCommands(root)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		t.Log(c)
		seen[strings.Join(c.Args, " ")] = true
		if err := Check(root, c); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
	for _, want := range []string{"go run ./examples/server", "go test ./..."} {
		if !seen[want] {
			t.Errorf("README and docs never say %q in an sh block; found %d go commands", want, len(cmds))
		}
	}
}

// TestCheckFindsMistakes plants documentation naming what does not exist
// and expects each mistake to be reported.
func TestCheckFindsMistakes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cmd/app/main.go", "package main\n\nimport \"flag\"\n\nfunc main() {\n\tfs := flag.NewFlagSet(\"app\", flag.ExitOnError)\n\tfs.String(\"addr\", \":80\", \"\")\n\tfs.Bool(\"quiet\", false, \"\")\n\tflag.Int(\"n\", 1, \"\")\n}\n")
	write("lib/lib.go", "package lib\n")
	write("README.md", "# x\n\n```sh\n"+
		"go run ./cmd/app -addr :81 -quiet -n 2   # fine\n"+
		"go test -race -count=1 ./lib ./...\n"+
		"go run ./cmd/app -adr :81\n"+
		"go run ./cmd/nothing\n"+
		"go run ./lib\n"+
		"go test -rcae ./lib\n"+
		"go test ./nowhere/...\n"+
		"```\n")
	write("docs/page.md", "```sh\n$ X='a b' go run ./cmd/app \\\n    -quiet -verbose\noutput\n$ echo fine\n```\n")
	cmds, err := GoCommands(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cmds {
		if err := Check(dir, c); err != nil {
			got = append(got, fmt.Sprintf("%s:%d: %v", c.File, c.Line, err))
		}
	}
	want := []string{
		"README.md:6: the program has no flag -adr",
		"README.md:7: package ./cmd/nothing: no such directory",
		"README.md:8: package ./lib: not a main package, so go run cannot run it",
		"README.md:9: go test has no flag -rcae",
		"README.md:10: package ./nowhere/...: no such directory",
		"docs/page.md:2: the program has no flag -verbose",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reported:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want [][]string
	}{
		{`go run ./x -a 'b c' "d $(e | f)" # comment`, [][]string{{"go", "run", "./x", "-a", "b c", "d $(e | f)"}}},
		{`a && b | c; d & e`, [][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}}},
		{`x -k "$(openssl rand -base64 32 | tr -d =):free"`, [][]string{{"x", "-k", "$(openssl rand -base64 32 | tr -d =):free"}}},
		{`a\ b $(c d)e`, [][]string{{"a b", "$(c d)e"}}},
	} {
		got, err := Split(tc.in)
		if err != nil {
			t.Fatalf("Split(%q): %v", tc.in, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Split(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestLinks checks the relative links of README.md and docs/*.md.
func TestLinks(t *testing.T) {
	for _, err := range CheckLinks(root) {
		t.Error(err)
	}
}

func TestCheckLinksFindsMistakes(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"README.md": "# Top\n\n## Read on, now\n\n[a](docs/a.md) [b](docs/a.md#the-part) [c](docs/gone.md) [d](#read-on-now) [e](#nowhere) [f](https://example.com/x)\n",
		"docs/a.md": "# A\n\n```sh\n# not a heading\n```\n\n## The part\n\n[up](../README.md#top) [bad](../README.md#not-a-heading)\n",
		"docs/b.md": "[img](picture.png)\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, err := range CheckLinks(dir) {
		got = append(got, err.Error())
	}
	want := []string{
		"README.md:5: link to docs/gone.md: no such file",
		"README.md:5: link to #nowhere: no such heading in README.md",
		"docs/a.md:9: link to ../README.md#not-a-heading: no such heading in README.md",
		"docs/b.md:1: link to picture.png: no such file",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reported:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
