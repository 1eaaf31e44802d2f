package doccheck

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGoDocShowsWhatItNames keeps what go doc and pkg.go.dev show of every
// package readable by its users: its documentation never sends the reader
// to unexported code or to a source file, which they do not show.
func TestGoDocShowsWhatItNames(t *testing.T) {
	found, err := Unshown(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: named by documentation go doc shows, but not shown by it", f)
	}
}

// TestUnshownFindsMistakes: a package comment naming a source file, and
// an exported function's comment naming an unexported one, are found.
func TestUnshownFindsMistakes(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "p.go", "// Package p is explained in p.go.\npackage p\n\n// Do calls doHelper.\nfunc Do() { doHelper() }\n\nfunc doHelper() {}\n\n// limits are not a name here.\nfunc Limits() {}\n\nfunc limits() {}\n")
	found, err := Unshown(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p.go:1: p.go", "p.go:4: doHelper"}
	if len(found) != len(want) || found[0] != want[0] || found[1] != want[1] {
		t.Fatalf("Unshown = %q, want %q", found, want)
	}
}

func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
