// Package doccheck finds the commands the documentation tells a reader to
// type, so that tests can check them against the code: every `go run` and
// `go test` in a fenced sh block of README.md and docs/*.md must name a
// package that exists and flags that exist.
//
// It reads shell the way the documentation writes it, not all of POSIX
// sh: quotes, backslash escapes and line continuations, `$(...)`, comments,
// leading VAR=value assignments, the `$ ` prompt of a transcript, and
// commands joined by &&, ||, ;, | or &.
package doccheck

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Command is one shell command found in the documentation.
type Command struct {
	File string   // relative to the root, such as docs/operating.md
	Line int      // where the command starts, 1-based
	Args []string // the words after any VAR=value assignments: "go", "run", "./examples/server", ...
}

// String gives the command as a test failure names it: where it is, then
// its words.
func (c Command) String() string {
	return fmt.Sprintf("%s:%d: %s", c.File, c.Line, strings.Join(c.Args, " "))
}

// Docs returns README.md and docs/*.md under root, relative to it.
func Docs(root string) ([]string, error) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files := []string{"README.md"}
	for _, p := range pages {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, err
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files, nil
}

// GoCommands returns every command of the documentation under root that
// starts with "go run" or "go test".
func GoCommands(root string) ([]Command, error) {
	files, err := Docs(root)
	if err != nil {
		return nil, err
	}
	var out []Command
	for _, f := range files {
		cmds, err := FileCommands(root, f)
		if err != nil {
			return nil, err
		}
		for _, c := range cmds {
			if len(c.Args) >= 2 && c.Args[0] == "go" && (c.Args[1] == "run" || c.Args[1] == "test") {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// FileCommands returns the commands of the fenced sh blocks of the
// Markdown file name (relative to root). In a block where some lines start
// with "$ ", only those are commands; the other lines are their output.
func FileCommands(root, name string) ([]Command, error) {
	data, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		return nil, err
	}
	var out []Command
	var block []string
	start, inBlock := 0, false
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case !inBlock && (trimmed == "```sh" || trimmed == "```bash" || trimmed == "```shell"):
			inBlock, start, block = true, n+1, nil
		case inBlock && trimmed == "```":
			cmds, err := blockCommands(block)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, start, err)
			}
			for _, c := range cmds {
				c.File, c.Line = name, start+c.Line
				out = append(out, c)
			}
			inBlock = false
		case inBlock:
			block = append(block, line)
		}
	}
	if inBlock {
		return nil, fmt.Errorf("%s:%d: sh block never closed", name, start-1)
	}
	return out, sc.Err()
}

// blockCommands splits the lines of one sh block into commands; each
// Command's Line is the 0-based index of its first line in the block.
func blockCommands(lines []string) ([]Command, error) {
	transcript := false
	for _, l := range lines {
		if strings.HasPrefix(l, "$ ") {
			transcript = true
		}
	}
	var out []Command
	for i := 0; i < len(lines); i++ {
		first, text := i, lines[i]
		if transcript {
			if !strings.HasPrefix(text, "$ ") {
				continue
			}
			text = strings.TrimPrefix(text, "$ ")
		}
		for strings.HasSuffix(text, `\`) && i+1 < len(lines) {
			i++
			text = strings.TrimSuffix(text, `\`) + " " + lines[i]
		}
		cmds, err := Split(text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", first+1, err)
		}
		for _, words := range cmds {
			if words = dropAssignments(words); len(words) > 0 {
				out = append(out, Command{Line: first, Args: words})
			}
		}
	}
	return out, nil
}

// dropAssignments removes the VAR=value words a command starts with.
func dropAssignments(words []string) []string {
	for len(words) > 0 {
		name, _, ok := strings.Cut(words[0], "=")
		if !ok || !isName(name) {
			break
		}
		words = words[1:]
	}
	return words
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// Split reads one line of shell into commands of words, removing quotes
// and escapes. `$(...)` and `$VAR` stay in the word as written.
func Split(line string) ([][]string, error) {
	var cmds [][]string
	var words []string
	var word strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	endCommand := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
			words = nil
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			endWord()
		case c == '#' && !inWord:
			endCommand()
			return cmds, nil
		case c == ';' || c == '|' || c == '&':
			endCommand()
			if i+1 < len(line) && (line[i+1] == c) {
				i++
			}
		case c == '\\':
			if i+1 < len(line) {
				i++
				word.WriteByte(line[i])
			}
			inWord = true
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unclosed '")
			}
			word.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) {
					j++
				}
				word.WriteByte(line[j])
			}
			if j >= len(line) {
				return nil, errors.New(`unclosed "`)
			}
			i = j
			inWord = true
		case c == '$' && i+1 < len(line) && line[i+1] == '(':
			depth, j := 0, i+1
			for ; j < len(line); j++ {
				if line[j] == '(' {
					depth++
				} else if line[j] == ')' {
					if depth--; depth == 0 {
						break
					}
				}
			}
			if j >= len(line) {
				return nil, errors.New("unclosed $(")
			}
			word.WriteString(line[i : j+1])
			i = j
			inWord = true
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endCommand()
	return cmds, nil
}

// testFlags are the flags of go test: those of go help testflag, and the
// build flags of go help build, each with whether it takes a value.
var testFlags = map[string]bool{
	// go help testflag
	"bench": true, "benchmem": false, "benchtime": true, "blockprofile": true, "blockprofilerate": true,
	"count": true, "cover": false, "covermode": true, "coverpkg": true, "coverprofile": true,
	"cpu": true, "cpuprofile": true, "failfast": false, "fullpath": false, "fuzz": true,
	"fuzzminimizetime": true, "fuzztime": true, "json": false, "list": true, "memprofile": true,
	"memprofilerate": true, "mutexprofile": true, "mutexprofilefraction": true, "outputdir": true,
	"parallel": true, "run": true, "short": false, "shuffle": true, "skip": true, "timeout": true,
	"trace": true, "v": false, "vet": true, "c": false, "o": true, "exec": true, "args": false,
	// go help build
	"C": true, "a": false, "n": false, "p": true, "race": false, "msan": false, "asan": false,
	"x": false, "work": false, "asmflags": true, "buildmode": true, "buildvcs": true,
	"compiler": true, "gccgoflags": true, "gcflags": true, "installsuffix": true, "ldflags": true,
	"linkshared": false, "mod": true, "modcacherw": false, "modfile": true, "overlay": true,
	"pgo": true, "pkgdir": true, "tags": true, "toolexec": true, "trimpath": false,
}

// runFlags are the build flags go run accepts before its package.
var runFlags = map[string]bool{
	"C": true, "a": false, "n": false, "p": true, "race": false, "msan": false, "asan": false,
	"x": false, "work": false, "gcflags": true, "ldflags": true, "mod": true, "tags": true,
	"trimpath": false, "exec": true, "buildvcs": true, "cover": false, "pgo": true,
}

// flagName returns the name of a flag word ("-run=x", "--v") and whether it
// carries its value after "=".
func flagName(w string) (name string, hasValue bool) {
	name, _, hasValue = strings.Cut(strings.TrimLeft(w, "-"), "=")
	return strings.TrimPrefix(name, "test."), hasValue
}

// CheckGoTest checks the words after "go test": each flag is one of go
// test's, and each package pattern names a directory under root with Go
// files (any, for a pattern ending in /...).
func CheckGoTest(root string, args []string) error {
	var pkgs []string
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !strings.HasPrefix(w, "-") {
			pkgs = append(pkgs, w)
			continue
		}
		name, hasValue := flagName(w)
		takesValue, ok := testFlags[name]
		if !ok {
			return fmt.Errorf("go test has no flag %s", w)
		}
		if name == "args" {
			break // the rest goes to the test binary
		}
		if takesValue && !hasValue {
			i++
		}
	}
	for _, p := range pkgs {
		if err := checkPackage(root, p, false); err != nil {
			return err
		}
	}
	return nil
}

// GoRun splits the words after "go run" into its package and the
// program's arguments, checking go run's own flags and that the package is
// a main package under root.
func GoRun(root string, args []string) (pkg string, progArgs []string, err error) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !strings.HasPrefix(w, "-") {
			if err := checkPackage(root, w, true); err != nil {
				return "", nil, err
			}
			return w, args[i+1:], nil
		}
		name, hasValue := flagName(w)
		takesValue, ok := runFlags[name]
		if !ok {
			return "", nil, fmt.Errorf("go run has no flag %s", w)
		}
		if takesValue && !hasValue {
			i++
		}
	}
	return "", nil, errors.New("go run names no package")
}

// checkPackage checks that the package pattern p (./dir or ./dir/...)
// names a directory under root holding Go files; main demands package main.
func checkPackage(root, p string, main bool) error {
	if !strings.HasPrefix(p, "./") && p != "." {
		return fmt.Errorf("package %q: the documentation names packages by their path from the module root (./...)", p)
	}
	dir, all := strings.CutSuffix(p, "/...")
	if dir == "." && all {
		return nil
	}
	full := filepath.Join(root, filepath.FromSlash(dir))
	st, err := os.Stat(full)
	if err != nil || !st.IsDir() {
		return fmt.Errorf("package %s: no such directory", p)
	}
	if all {
		return nil
	}
	names, err := goFiles(full)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("package %s: no Go files", p)
	}
	if main {
		f, err := parser.ParseFile(token.NewFileSet(), names[0], nil, parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		if f.Name.Name != "main" {
			return fmt.Errorf("package %s: not a main package, so go run cannot run it", p)
		}
	}
	return nil
}

// goFiles lists the non-test Go files of dir.
func goFiles(dir string) ([]string, error) {
	all, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, "_test.go") {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out, nil
}

// flagDefiners are the functions of package flag and methods of
// *flag.FlagSet that define a flag (and redact.StringFlag), with the
// position of the name among their arguments.
var flagDefiners = map[string]int{
	"Bool": 0, "Duration": 0, "Float64": 0, "Int": 0, "Int64": 0, "String": 0, "Uint": 0, "Uint64": 0,
	"Func": 0, "BoolFunc": 0,
	"BoolVar": 1, "DurationVar": 1, "Float64Var": 1, "IntVar": 1, "Int64Var": 1, "StringVar": 1,
	"UintVar": 1, "Uint64Var": 1, "Var": 1, "TextVar": 1,
	"StringFlag": 1, // internal/redact's, for flags that carry secrets
}

// Flags returns the flags the main package in dir (under root) defines,
// read from its source: the names given as string literals to package
// flag's defining functions or a FlagSet's methods, each with whether it
// is a boolean flag (which takes no separate value).
func Flags(root, pkg string) (map[string]bool, error) {
	names, err := goFiles(filepath.Join(root, filepath.FromSlash(pkg)))
	if err != nil {
		return nil, err
	}
	flags := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pos, ok := flagDefiners[sel.Sel.Name]
			if !ok || len(call.Args) <= pos {
				return true
			}
			lit, ok := call.Args[pos].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			m := sel.Sel.Name
			flags[s] = m == "Bool" || m == "BoolVar" || m == "BoolFunc"
			return true
		})
	}
	return flags, nil
}

// CheckProgramFlags checks that every flag among a program's arguments is
// one of flags (name → boolean), stopping at the first non-flag argument
// or "--", as package flag does.
func CheckProgramFlags(args []string, flags map[string]bool) error {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w == "--" || !strings.HasPrefix(w, "-") || w == "-" {
			return nil
		}
		name, hasValue := flagName(w)
		if name == "h" || name == "help" {
			continue
		}
		isBool, ok := flags[name]
		if !ok {
			return fmt.Errorf("the program has no flag %s", w)
		}
		if !isBool && !hasValue {
			i++
		}
	}
	return nil
}

// Check checks one "go run" or "go test" command: its go flags, its
// package, and for go run the program's flags up to its first argument
// that is not a flag, against those its source defines (Flags).
func Check(root string, c Command) error {
	if len(c.Args) < 2 || c.Args[0] != "go" {
		return fmt.Errorf("not a go command")
	}
	switch c.Args[1] {
	case "test":
		return CheckGoTest(root, c.Args[2:])
	case "run":
		pkg, args, err := GoRun(root, c.Args[2:])
		if err != nil {
			return err
		}
		flags, err := Flags(root, pkg)
		if err != nil {
			return err
		}
		return CheckProgramFlags(args, flags)
	}
	return fmt.Errorf("go %s is neither go run nor go test", c.Args[1])
}

// linkRE matches a Markdown link or image: [text](target), the target
// without spaces.
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// CheckLinks checks every relative link of README.md and docs/*.md: the
// file it names exists, and so does the heading its #anchor names (by
// GitHub's rule: lower case, punctuation dropped, spaces to hyphens).
// Links to other sites are not followed.
func CheckLinks(root string) []error {
	files, err := Docs(root)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return []error{err}
		}
		for n, line := range strings.Split(string(data), "\n") {
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				file := f
				if path != "" {
					file = filepath.ToSlash(filepath.Join(filepath.Dir(f), path))
				}
				if _, err := os.Stat(filepath.Join(root, file)); err != nil {
					errs = append(errs, fmt.Errorf("%s:%d: link to %s: no such file", f, n+1, target))
					continue
				}
				if anchor != "" && strings.HasSuffix(file, ".md") {
					anchors, err := headings(filepath.Join(root, file))
					if err != nil {
						return []error{err}
					}
					if !anchors[anchor] {
						errs = append(errs, fmt.Errorf("%s:%d: link to %s: no such heading in %s", f, n+1, target, file))
					}
				}
			}
		}
	}
	return errs
}

// headings returns the anchors of the headings of a Markdown file.
func headings(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	inCode := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out, nil
}
