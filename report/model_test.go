package report

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
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

// The schema's action enum is the vocabulary, in its order.
func TestSchemaActionsAreTheVocabulary(t *testing.T) {
	var s struct {
		Defs struct {
			Action struct {
				Enum []Action `json:"enum"`
			} `json:"action"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Defs.Action.Enum, Actions) {
		t.Errorf("schema action enum %v, vocabulary %v", s.Defs.Action.Enum, Actions)
	}
	for _, a := range Actions {
		if b, err := ParseAction(string(a)); err != nil || b != a {
			t.Errorf("%q does not parse back (%v)", a, err)
		}
	}
	if _, err := ParseAction("replace-nic"); err == nil {
		t.Error("an action outside the vocabulary parsed")
	}
	// A skip for lack of privilege says what lifts it; other limits need no action.
	if f := (Finding{}).SkippedBy(LimitPrivilege, "run as root"); f.Action != ActionFixConfiguration {
		t.Errorf("privilege skip action %q", f.Action)
	}
	if f := (Finding{}).SkippedBy(LimitSource, "record it"); f.Action != "" {
		t.Errorf("source skip action %q", f.Action)
	}
}
