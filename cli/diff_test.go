package cli

import (
	"fmt"
	"strings"
	"testing"
)

// maxDiffLines is how much of a golden's diff a failing test prints: enough to see what changed,
// not so much that the change drowns in the output.
const maxDiffLines = 80

// unifiedDiff is a unified diff (three lines of context) from want to got, at most maxLines lines
// of it followed by how many more there are; "" when the texts are equal.
func unifiedDiff(wantName, gotName, want, got string, maxLines int) string {
	if want == got {
		return ""
	}
	a, b := splitLines(want), splitLines(got)
	ops := diffLines(a, b)
	var out []string
	out = append(out, "--- "+wantName, "+++ "+gotName)
	for _, h := range hunks(ops, 3) {
		out = append(out, h...)
	}
	if len(out) == 2 {
		out = append(out, "(the texts differ only in the newline at the end)")
	}
	if len(out) > maxLines {
		more := len(out) - maxLines
		out = append(out[:maxLines], fmt.Sprintf("... %d more lines of diff", more))
	}
	return strings.Join(out, "\n") + "\n"
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

type diffOp struct {
	kind byte // ' ' both, '-' only in want, '+' only in got
	text string
}

// diffLines is a shortest edit script from a to b: the common prefix and suffix are kept, the
// middle is aligned by its longest common subsequence; a middle too big for the quadratic table
// is shown as removed and added whole, which is still correct, only less tidy.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []diffOp
	for _, l := range a[:pre] {
		ops = append(ops, diffOp{' ', l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if n, m := len(ma), len(mb); n*m <= 4_000_000 {
		// lcs[i][j] is the length of the longest common subsequence of ma[i:] and mb[j:].
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				ops = append(ops, diffOp{' ', ma[i]})
				i, j = i+1, j+1
			case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, diffOp{'-', ma[i]})
				i++
			default:
				ops = append(ops, diffOp{'+', mb[j]})
				j++
			}
		}
	} else {
		for _, l := range ma {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, diffOp{'+', l})
		}
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

// hunks groups the changes of ops with ctx lines of context around each, as diff -u does.
func hunks(ops []diffOp, ctx int) [][]string {
	var out [][]string
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := max(0, k-ctx)
		end := k // one past the last change of the hunk
		for i := k; i < len(ops) && i < end+2*ctx+1; i++ {
			if ops[i].kind != ' ' {
				end = i + 1
			}
		}
		stop := min(len(ops), end+ctx)
		aLine, bLine := 1, 1
		for _, op := range ops[:start] {
			if op.kind != '+' {
				aLine++
			}
			if op.kind != '-' {
				bLine++
			}
		}
		var body []string
		aN, bN := 0, 0
		for _, op := range ops[start:stop] {
			body = append(body, string(op.kind)+op.text)
			if op.kind != '+' {
				aN++
			}
			if op.kind != '-' {
				bN++
			}
		}
		if aN == 0 {
			aLine--
		}
		if bN == 0 {
			bLine--
		}
		out = append(out, append([]string{fmt.Sprintf("@@ -%d,%d +%d,%d @@", aLine, aN, bLine, bN)}, body...))
		k = stop
	}
	return out
}

func TestUnifiedDiff(t *testing.T) {
	lines := func(from, to int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, want, got, diff string
		max                   int
	}{
		{name: "equal", want: "a\nb\n", got: "a\nb\n", diff: ""},
		{name: "one line changed in the middle", want: lines(1, 10), got: strings.Replace(lines(1, 10), "line 5\n", "line five\n", 1), max: 80,
			diff: "--- want\n+++ got\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n line 8\n"},
		{name: "added at the end", want: "a\nb\n", got: "a\nb\nc\n", max: 80,
			diff: "--- want\n+++ got\n@@ -1,2 +1,3 @@\n a\n b\n+c\n"},
		{name: "removed at the start", want: "a\nb\nc\n", got: "b\nc\n", max: 80,
			diff: "--- want\n+++ got\n@@ -1,3 +1,2 @@\n-a\n b\n c\n"},
		{name: "into an empty file", want: "", got: "x\n", max: 80,
			diff: "--- want\n+++ got\n@@ -0,0 +1,1 @@\n+x\n"},
		{name: "two hunks far apart", want: lines(1, 20), got: strings.Replace(strings.Replace(lines(1, 20), "line 2\n", "two\n", 1), "line 19\n", "nineteen\n", 1), max: 80,
			diff: "--- want\n+++ got\n@@ -1,5 +1,5 @@\n line 1\n-line 2\n+two\n line 3\n line 4\n line 5\n" +
				"@@ -16,5 +16,5 @@\n line 16\n line 17\n line 18\n-line 19\n+nineteen\n line 20\n"},
		{name: "only the final newline", want: "a\n", got: "a", max: 80,
			diff: "--- want\n+++ got\n(the texts differ only in the newline at the end)\n"},
		{name: "cut after max lines", want: lines(1, 10), got: lines(11, 20), max: 5,
			diff: "--- want\n+++ got\n@@ -1,10 +1,10 @@\n-line 1\n-line 2\n... 18 more lines of diff\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unifiedDiff("want", "got", tc.want, tc.got, tc.max); got != tc.diff {
				t.Errorf("got\n%s\nwant\n%s", got, tc.diff)
			}
		})
	}
}
