package report

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestNaturalLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{{"mlx5_2", "mlx5_10", true}, {"mlx5_10", "mlx5_2", false}, {"a", "b", true}, {"x1", "x1", false}, {"p", "p1", true}} {
		if got := NaturalLess(c.a, c.b); got != c.less {
			t.Errorf("NaturalLess(%q,%q)=%v", c.a, c.b, got)
		}
	}
}

func TestSeverityText(t *testing.T) {
	for _, s := range []Severity{OK, Skipped, Info, Unknown, Warning, Critical} {
		b, _ := s.MarshalText()
		var back Severity
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("%v round-trips to %v (%v)", s, back, err)
		}
	}
	var s Severity
	if err := s.UnmarshalText([]byte("fatal")); err == nil {
		t.Error("unknown severity accepted")
	}
}

// The document's package is what programs reading rdmadiag's JSON import: it must not pull in
// the engine, the renderers or anything else of the tool (nor any other module).
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
				t.Errorf("%s imports %s", name, p)
			}
		}
	}
}
