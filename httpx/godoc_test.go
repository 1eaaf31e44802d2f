package httpx_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// TestGoDocNamesNoUnexportedCode keeps what go doc and pkg.go.dev show of
// this package readable by its users: the package comment and the
// comments of exported names (and of exported struct fields) never send
// the reader to an unexported function, type or variable, or to a source
// file, none of which they show.
func TestGoDocNamesNoUnexportedCode(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	pkg := pkgs["httpx"]
	hidden := map[string]bool{}
	var docs []*ast.CommentGroup
	for _, f := range pkg.Files {
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
	word := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*(\.go\b)?`)
	for _, cg := range docs {
		if cg == nil {
			continue
		}
		for _, w := range word.FindAllString(cg.Text(), -1) {
			if strings.HasSuffix(w, ".go") || hidden[w] && len(w) > 4 && strings.ToLower(w) != w {
				t.Errorf("%s: the documentation names %s, which go doc does not show", fset.Position(cg.Pos()), w)
			}
		}
	}
}
