package words

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rdmadiag/rdmadiag/report"
)

func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, é 日本 → ok", "plain text, é 日本 → ok"},
		{"a\nb\r\tc", `a\nb\r\tc`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"nul\x00 del\x7f", `nul\x00 del\x7f`},
		{"csi\u009b2J nel\u0085", `csi\u009b2J nel\u0085`},
		{"evil\u202etxt.exe", `evil\u202etxt.exe`},
		{"\u2066\u2067\u2068\u2069\u202a\u202b\u202c\u202d", `\u2066\u2067\u2068\u2069\u202a\u202b\u202c\u202d`},
		{"lrm\u200e rlm\u200f alm\u061c", `lrm\u200e rlm\u200f alm\u061c`},
		{"line\u2028para\u2029", `line\u2028para\u2029`},
		{"bad \xff\xfe byte, cut \xe6\x97", `bad \xff\xfe byte, cut \xe6\x97`},
		{"", ""},
	} {
		got := Printable(c.in)
		if got != c.want {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.want)
		}
		if HasUnprintable(got) || !utf8.ValidString(got) {
			t.Errorf("Printable(%q) = %q still holds something to neutralise", c.in, got)
		}
	}
}

func TestTruncateKeepsUTF8AndBounds(t *testing.T) {
	long := strings.Repeat("é", 60) // 120 bytes, 2 per rune
	for max := 0; max <= 125; max++ {
		got := Truncate(long, max)
		if len(got) > max || !utf8.ValidString(got) {
			t.Fatalf("max %d: %d bytes, valid %v: %q", max, len(got), utf8.ValidString(got), got)
		}
	}
	if got := Truncate("short", 80); got != "short" {
		t.Errorf("short text changed: %q", got)
	}
	if got := Truncate("rxe0/1 is DOWN because its netdev eth0 was set administratively down", 40); got != "rxe0/1 is DOWN because its netdev..." {
		t.Errorf("word boundary: %q", got)
	}
}

func TestShortTextNamesTheSubjectOnce(t *testing.T) {
	for _, c := range []struct {
		subject report.Subject
		summary string
		want    string
	}{
		{report.Subject{Kind: "port", Name: "rxe0/1", Device: "rxe0"}, "rxe0/1 is DOWN (physical Disabled)", "rxe0/1 is DOWN (physical Disabled)"},
		{report.Subject{Kind: "cq", Name: "mlx5_0 pid 1 (x) cqe 3", Device: "mlx5_0"}, "mlx5_0: 1 CQ(s) too small", "mlx5_0: 1 CQ(s) too small"},
		{report.Subject{Kind: "qp", Name: "rxe0/1 pid 1 (x) ERR", Device: "rxe0"}, "rxe0/1: 3 QP(s) in ERR", "rxe0/1: 3 QP(s) in ERR"},
		{report.Subject{Kind: "pci", Name: "0000:3b:00.0"}, "0000:3b:00.0 (mlx5_0): slow link", "0000:3b:00.0 (mlx5_0): slow link"},
		{report.Subject{Kind: "host"}, "no RDMA device registered", "host: no RDMA device registered"},
		{report.Subject{Kind: "device", Name: "mlx5_1", Device: "mlx5_1"}, "mlx5_10 is the other one", "mlx5_1: mlx5_10 is the other one"},
		{report.Subject{Kind: "port", Name: "p"}, "first; second", "p: first"},
		{report.Subject{Kind: "port", Name: "p"}, "line\nbreak", `p: line\nbreak`},
	} {
		f := report.Finding{Subject: c.subject, Summary: c.summary}
		if got := ShortText(&f, 80); got != c.want {
			t.Errorf("%+v %q: %q, want %q", c.subject, c.summary, got, c.want)
		}
	}
}

func TestJoinBounded(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, c := range []struct {
		items []string
		max   int
		want  string
	}{
		{[]string{"a", "b"}, 80, "a; b"},
		{[]string{long}, 20, "xxxxxxxxxxxxxxxxx..."},
		{[]string{"short one", long}, 60, "short one; " + strings.Repeat("x", 46) + "..."},
		{[]string{long, long, long}, 80, strings.Repeat("x", 32) + "...; " + strings.Repeat("x", 32) + "... +1 more"},
		{[]string{long, long}, 30, strings.Repeat("x", 19) + "... +1 more"},
	} {
		got := JoinBounded(c.items, "; ", c.max)
		if got != c.want || len(got) > c.max {
			t.Errorf("JoinBounded(%d items, %d) = %q (%d bytes), want %q", len(c.items), c.max, got, len(got), c.want)
		}
	}
}
