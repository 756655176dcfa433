package main

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every threshold, signature and fixture value cites a source a reader can find: a kernel file
// and function, a vendor document and section, a standard or a peer project's file. Private
// study notes are not such a source, and neither are references to how the work was organised.
// The patterns are written with character classes so that this file does not match itself.
var privateCitations = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`(?i)kernel[-]interfaces|verbs[-]and-softroce|tools[-]landscape|style[-]models`), "a private study note"},
	{regexp.MustCompile(`(?i)lab[-]facts(\.md| §)`), "a private lab note"},
	{regexp.MustCompile(`(?i)shared/(reference|lab/)|/work/(notes|shared)|\.\./shared/`), "a private notes directory"},
	{regexp.MustCompile(`(?i)reference[ ]notes|\bnotes[ ]§`), "private notes"},
	{regexp.MustCompile(`(?i)\bthe[ ]issue\b|\blab[ ]engineer|\bwork[ ]items?\b`), "how the work is organised"},
	{regexp.MustCompile(`(?i)\bissue[ ]#\d`), "how the work is organised"},
}

// githubIssue is the one accepted form of an issue number: a public project's issue, named with
// its repository ("openucx/ucx issue #7738").
var githubIssue = regexp.MustCompile(`[\w.-]+/[\w.-]+\s+$`)

// TestNoPrivateCitations fails on any line of a tracked text file that cites private notes or
// speaks of how the work is organised; the message says what to cite instead.
func TestNoPrivateCitations(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := trackedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		t.Fatalf("found only %d files under %s: the repository walk is broken", len(files), root)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // deleted in the work tree, not yet committed
				continue
			}
			t.Fatal(err)
		}
		if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 || strings.HasSuffix(f, ".gz") {
			continue // binary
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 64*1024), len(b)+1)
		for n := 1; sc.Scan(); n++ {
			if what := privateCitation(sc.Text()); what != "" {
				t.Errorf("%s:%d cites %s; cite the public source instead (kernel file and function, document and section): %s",
					f, n, what, strings.TrimSpace(sc.Text()))
			}
		}
	}
}

func TestPrivateCitationPatterns(t *testing.T) {
	for _, c := range []struct {
		line string
		bad  bool
	}{
		{"// (kernel-" + "interfaces.md §2.5)", true},
		{`"see /work/` + `shared/` + `reference/verbs-` + `and-softroce.md 5.2"`, true},
		{"request (lab-" + "facts §1)", true},
		{"Synthetic: the " + "issue's documented case", true},
		{"until the lab " + "engineer has committed it", true},
		{"as issue " + "#12 asks", true},
		{"// see the reference " + "notes, section 1.1", true},
		{"// openucx/ucx issue #7738 (https://github.com/openucx/ucx/issues/7738)", false},
		{"make lab-facts      # lab/payloads/lab-facts in every scenario", false},
		{"// rate_show() in drivers/infiniband/core/sysfs.c", false},
	} {
		if got := privateCitation(c.line) != ""; got != c.bad {
			t.Errorf("privateCitation(%q) flagged %v, want %v", c.line, got, c.bad)
		}
	}
}

// privateCitation says what a line cites that it should not, or "".
func privateCitation(line string) string {
	for _, p := range privateCitations {
		for _, m := range p.re.FindAllStringIndex(line, -1) {
			if strings.HasPrefix(strings.ToLower(line[m[0]:]), "issue") && githubIssue.MatchString(line[:m[0]]) {
				continue
			}
			return p.what
		}
	}
	return ""
}

// trackedFiles lists the repository's files, relative to root: git's list where git and the
// repository are there, else a walk that leaves out what is not committed (.git, lab caches and
// outputs, built binaries).
func trackedFiles(root string) ([]string, error) {
	if out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output(); err == nil && len(out) > 0 {
		return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"), nil
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch rel {
			case ".git", "lab/cache", "lab/out", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}
