package cli

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestManPage: the page names every command a user can run and every flag of each, in that
// command's section, and roff accepts it without a warning.
func TestManPage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := stampedApp(&out, &errb).Execute(context.Background(), []string{"man"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	page := out.String()
	if !strings.HasPrefix(page, `.TH RDMADIAG 1 "2026-03-04" "rdmadiag v1.4.0"`) {
		t.Errorf("header: %.80q", page)
	}
	root := stampedApp(&out, &errb).rootCmd()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	cmds := manCommands(root)
	if len(cmds) < 8 {
		t.Fatalf("only %d commands found in the tree", len(cmds))
	}
	for _, c := range cmds {
		head := ".SS " + roffText(c.UseLine()) + "\n"
		i := strings.Index(page, head)
		if i < 0 {
			t.Errorf("no section %q", head)
			continue
		}
		section := page[i+len(head):]
		if j := strings.Index(section, "\n.SS "); j >= 0 {
			section = section[:j]
		} else if j := strings.Index(section, "\n.SH "); j >= 0 {
			section = section[:j]
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			if !strings.Contains(section, `\fB\-\-`+roffText(f.Name)+`\fR`) {
				t.Errorf("%s: flag --%s not in its section", c.CommandPath(), f.Name)
			}
		})
		if !strings.Contains(page, ".B "+roffText(c.CommandPath())+"\n") {
			t.Errorf("%s: not in the synopsis", c.CommandPath())
		}
	}
	for _, want := range []string{".SH EXIT STATUS", `\fB130\fR`, `\fB\-\-version\fR`, ".SH SEE ALSO"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, c := range []string{"version", "man", "check", "completion bash", "completion zsh", "completion fish"} {
		if !strings.Contains(page, ".SS rdmadiag "+roffText(c)) {
			t.Errorf("page has no section for %q", c)
		}
	}

	if groff, err := exec.LookPath("groff"); err == nil {
		cmd := exec.Command(groff, "-man", "-ww", "-z")
		cmd.Stdin = strings.NewReader(page)
		if msg, err := cmd.CombinedOutput(); err != nil || len(msg) > 0 {
			t.Errorf("groff -man -ww: %v\n%s", err, msg)
		}
	}
}

// TestHelpTextToRoff: the help's structures come out as roff keeps them readable.
func TestHelpTextToRoff(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"filled paragraphs", "one line\nand the next\n\nsecond", ".PP\none line\nand the next\n.PP\nsecond\n"},
		{"term table with continuation", "Codes:\n  0   fine\n  130 stopped, and\n      more",
			".PP\nCodes:\n.RS 2\n.TP\n\\fB0\\fR\nfine\n.TP\n\\fB130\\fR\nstopped, and more\n.RE\n"},
		{"a command stays verbatim", "Run:\n\tsource <(x completion bash)",
			".PP\nRun:\n.RS 2\n.nf\nsource <(x completion bash)\n.fi\n.RE\n"},
		{"misaligned lines stay verbatim", "  a  b\n c", ".PP\n.RS 2\n.nf\na  b\n c\n.fi\n.RE\n"},
		{"requests and escapes are neutralised", ".TH x\n'quoted\n--flag \\n", ".PP\n\\&.TH x\n\\&'quoted\n\\-\\-flag \\en\n"},
	} {
		var b strings.Builder
		writeHelpText(&b, c.in)
		if b.String() != c.want {
			t.Errorf("%s:\n%q\nwant\n%q", c.name, b.String(), c.want)
		}
	}
}
