package checks

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A check cannot tell which host it runs on: it asks what the host can do (Repeatable,
// AskingMayLoadModules, SeesOwnResources, RefusalsAreThisRun), so that a snapshot judges as the
// live host did. The kind may be named in a message, never compared.
func TestChecksDoNotBranchOnHostKind(t *testing.T) {
	compare := regexp.MustCompile(`Kind\(\)\s*[!=]=|[!=]=\s*host\.Kind|case host\.Kind`)
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.HasPrefix(p, "checktest") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if compare.MatchString(line) {
				t.Errorf("%s:%d compares the host's kind: %s", p, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
