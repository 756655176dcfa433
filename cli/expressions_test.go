package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/relit"
)

// The program's expressions (kernel-log signatures, the other checks' patterns, the manual
// page's) are compiled at their first use, not when it starts (internal/relit): compiling every
// one here makes a typo fail the tests instead of a check on the first host whose log reaches
// that expression.
func TestEveryExpressionCompiles(t *testing.T) {
	all := relit.All()
	// The checks' own expressions (interrupt names, ethtool counters, the NVIDIA driver's
	// version line) are a handful since the kernel-log signatures became internal/kevent's
	// table, whose expressions its own tests compile: none means the listing lost them, and this
	// test would pass on nothing.
	if len(all) < 5 {
		t.Fatalf("relit.All() lists %d expressions; the checks declare more than 5", len(all))
	}
	for _, r := range all {
		if err := r.Compile(); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// Every command starts by initialising every package it links, so an expression compiled in a
// package variable is paid by `rdmadiag version` too. The checks and the command declare theirs
// with relit.MustCompile, compiled at first use; this finds a regexp compiled at initialisation
// in their non-test files (calls inside a function literal run later and are not counted).
func TestNoExpressionCompiledAtStart(t *testing.T) {
	var files []string
	for _, root := range []string{"../checks", "."} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && p != root && (root == "." || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 20 {
		t.Fatalf("found %d source files; the walk lost the checks", len(files))
	}
	fset := token.NewFileSet()
	for _, p := range files {
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			ast.Inspect(g, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncLit:
					return false
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == "regexp" && strings.Contains(sel.Sel.Name, "Compile") {
							t.Errorf("%s: regexp.%s in a package variable runs at every start: use relit.MustCompile", fset.Position(n.Pos()), sel.Sel.Name)
						}
					}
				}
				return true
			})
		}
	}
}
