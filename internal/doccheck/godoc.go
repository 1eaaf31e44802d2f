package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Unshown returns, for the non-main Go packages under root (internal
// packages, testdata and hidden directories skipped), each place where what
// go doc shows of a package names something go doc does not show: the
// package comment, or the comment of an exported name or exported struct
// field, naming an unexported function, type, variable or constant of the
// package, or a source file. Each is "file:line: word", file relative to
// root.
//
// An unexported name counts only when it is longer than four letters and
// not all lower case, so that a word such as "limits" is not taken for a
// variable of that name.
func Unshown(root string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		switch name := d.Name(); {
		case path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "internal"):
			return filepath.SkipDir
		}
		fset := token.NewFileSet()
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		pkgs := map[string][]*ast.File{} // by package name
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(path, e.Name()), nil, parser.ParseComments)
			if err != nil {
				return err
			}
			pkgs[f.Name.Name] = append(pkgs[f.Name.Name], f)
		}
		for name, files := range pkgs {
			if name == "main" {
				continue
			}
			for _, m := range unshownIn(files) {
				pos := fset.Position(m.pos)
				rel, _ := filepath.Rel(root, pos.Filename)
				found = append(found, fmt.Sprintf("%s:%d: %s", rel, pos.Line, m.word))
			}
		}
		return nil
	})
	sort.Strings(found)
	return found, err
}

type mention struct {
	pos  token.Pos
	word string
}

var docWord = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*(\.go\b)?`)

// unshownIn is Unshown for the files of one package.
func unshownIn(files []*ast.File) []mention {
	hidden := map[string]bool{}
	var docs []*ast.CommentGroup
	for _, f := range files {
		docs = append(docs, f.Doc)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && !d.Name.IsExported() {
					hidden[d.Name.Name] = true
				}
				if d.Name.IsExported() {
					docs = append(docs, d.Doc)
				}
			case *ast.GenDecl:
				exported := false
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							hidden[s.Name.Name] = true
							continue
						}
						exported = true
						docs = append(docs, s.Doc, s.Comment)
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								if len(fl.Names) == 0 || fl.Names[0].IsExported() {
									docs = append(docs, fl.Doc, fl.Comment)
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								exported = true
								docs = append(docs, s.Doc, s.Comment)
							} else {
								hidden[n.Name] = true
							}
						}
					}
				}
				if exported {
					docs = append(docs, d.Doc)
				}
			}
		}
	}
	var found []mention
	for _, cg := range docs {
		if cg == nil {
			continue
		}
		for _, w := range docWord.FindAllString(cg.Text(), -1) {
			if strings.HasSuffix(w, ".go") || hidden[w] && len(w) > 4 && strings.ToLower(w) != w {
				found = append(found, mention{cg.Pos(), w})
			}
		}
	}
	return found
}
