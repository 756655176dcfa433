package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmadiag/rdmadiag/internal/relit"
)

// The manual page is generated here from the command tree rather than with cobra/doc: cobra/doc
// renders help text as Markdown (go-md2man), which joins the indented tables of the help (exit
// codes, formats) into one paragraph. This writer keeps the help's structure: paragraphs are
// filled, "term  description" tables become .TP entries, and anything else indented is kept
// verbatim.

func (a *App) manCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "man",
		Short: "Print the manual page (roff) of every command, for man(1)",
		Long: "Print the manual page rdmadiag(1), generated from the commands and flags of this binary, on\n" +
			"standard output. The packages and `make install` install it; after `go install`, read it with\n" +
			"`rdmadiag man | man -l -`.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeManPage(a.Stdout, cmd.Root(), a.Version, manDate(a.BuildDate))
		},
	}
}

// manDate is the date in the page's header: the build date when stamped, else
// SOURCE_DATE_EPOCH (reproducible builds), else today.
func manDate(buildDate string) time.Time {
	if t, err := time.Parse(time.RFC3339, buildDate); err == nil {
		return t.UTC()
	}
	if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		return time.Unix(s, 0).UTC()
	}
	return time.Now().UTC()
}

// writeManPage writes rdmadiag(1): every available command with its description and flags, the
// exit status and where to read more.
func writeManPage(w io.Writer, root *cobra.Command, version string, date time.Time) error {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	var b strings.Builder
	fmt.Fprintf(&b, ".TH RDMADIAG 1 %q %q %q\n", date.Format("2006-01-02"), "rdmadiag "+version, "User Commands")
	// No hyphenation and a ragged right edge: option names and paths must read as typed.
	b.WriteString(".nh\n.ad l\n")
	b.WriteString(".SH NAME\nrdmadiag \\- " + roffText(lowerFirst(root.Short)) + "\n")
	b.WriteString(".SH SYNOPSIS\n")
	for _, c := range manCommands(root) {
		b.WriteString(".B " + roffText(c.CommandPath()) + "\n")
		if rest := strings.TrimPrefix(c.UseLine(), c.CommandPath()); strings.TrimSpace(rest) != "" {
			b.WriteString(roffText(strings.TrimSpace(rest)) + "\n")
		}
		b.WriteString(".br\n")
	}
	b.WriteString(".SH DESCRIPTION\n")
	writeHelpText(&b, withoutExitCodes(root.Long))
	b.WriteString(".SH COMMANDS\n")
	for _, c := range manCommands(root) {
		fmt.Fprintf(&b, ".SS %s\n", roffText(c.UseLine()))
		switch {
		case c.Parent() != root && c.Parent().Name() == "completion":
			// cobra's own long help for these gives installation steps for other systems; the
			// packages and make install put the scripts where each shell finds them.
			writeHelpText(&b, c.Short+".")
		case c.Long != "":
			writeHelpText(&b, withoutExitCodes(c.Long))
		default:
			writeHelpText(&b, c.Short+".")
		}
		writeFlags(&b, c.LocalFlags())
	}
	b.WriteString(".SH OPTIONS\n.TP\n" + `\fB\-h\fR, \fB\-\-help\fR` + "\nthe help of any command\n")
	writeFlags(&b, root.PersistentFlags())
	b.WriteString(".TP\n" + `\fB\-\-version\fR` + "\nprint the version (" + roffText("rdmadiag version") +
		" adds the commit, build date and Go version)\n")
	b.WriteString(".SH EXIT STATUS\n")
	writeHelpText(&b, strings.TrimPrefix(exitCodesHelp, "Exit codes:\n"))
	b.WriteString(".SH FILES\n")
	for _, f := range [][2]string{
		{"/usr/lib/systemd/system/rdmadiag-textfile.service", "writes the node_exporter textfile; started by " +
			"rdmadiag-textfile.timer every 5 minutes once enabled (the packages do not enable it)"},
		{"/usr/lib/systemd/system/rdmadiag-watch.service", "runs rdmadiag watch (Type=notify, with a watchdog) once " +
			"enabled; its conditions are kept in /var/lib/rdmadiag within a boot"},
		{"/usr/share/doc/rdmadiag/examples/", "option files (--policy, --matrix, --wr-profile) and the " +
			"node-problem-detector, Slurm, LBNL NHC and Kubernetes configurations"},
	} {
		b.WriteString(".TP\n" + `\fI` + roffText(f[0]) + `\fR` + "\n" + roffLine(f[1]) + "\n")
	}
	b.WriteString(".SH SEE ALSO\n")
	b.WriteString(".BR ibstat (8),\n.BR ibv_devinfo (1),\n.BR rdma (8),\n.BR devlink (8),\n.BR dmesg (1),\n.BR lspci (8)\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// manCommands lists the commands a user can run, depth first in the help's order.
func manCommands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if !s.IsAvailableCommand() || s.IsAdditionalHelpTopicCommand() {
				continue
			}
			s.InitDefaultHelpFlag() // as when it runs: the usage line then says [flags]
			out = append(out, s)
			walk(s)
		}
	}
	walk(root)
	return out
}

// withoutExitCodes drops the exit-code table from a command's help: EXIT STATUS has it once.
func withoutExitCodes(s string) string {
	s = strings.ReplaceAll(s, exitCodesHelp, "")
	for strings.Contains(s, "\n\n\n") {
		s = strings.ReplaceAll(s, "\n\n\n", "\n\n")
	}
	return strings.TrimSpace(s)
}

func writeFlags(b *strings.Builder, fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" || f.Name == "help" {
			return
		}
		name, usage := pflag.UnquoteUsage(f)
		b.WriteString(".TP\n")
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			b.WriteString(`\fB` + roffText("-"+f.Shorthand) + `\fR, `)
		}
		b.WriteString(`\fB` + roffText("--"+f.Name) + `\fR`)
		if name != "" {
			b.WriteString(` \fI` + roffText(name) + `\fR`)
		}
		b.WriteString("\n" + roffLine(usage))
		if !defaultIsZero(f) {
			b.WriteString(" (default " + roffText(f.DefValue) + ")")
		}
		b.WriteString("\n")
	})
}

// defaultIsZero tells whether the flag's default is worth no mention, as cobra's help decides.
func defaultIsZero(f *pflag.Flag) bool {
	switch f.DefValue {
	case "", "false", "0", "0s", "[]", "<nil>":
		return true
	}
	return false
}

// termLine is "  term   description": at least two spaces before the term column, and the
// description starting after two or more spaces (or after a term that fills its column).
// Compiled at first use: only `rdmadiag man` needs it.
var termLine = relit.MustCompile(`^(\s+)(\S+)(\s+)(\S.*)$`)

// writeHelpText turns plain help text into roff: blank lines separate paragraphs; a run of
// unindented lines is a filled paragraph; an indented run is a table of terms when its lines
// line up so (term, description, deeper-indented continuation lines), else kept verbatim.
func writeHelpText(b *strings.Builder, text string) {
	text = strings.ReplaceAll(text, "\t", "    ")
	for _, para := range strings.Split(strings.Trim(text, "\n"), "\n\n") {
		lines := strings.Split(para, "\n")
		b.WriteString(".PP\n")
		for i := 0; i < len(lines); {
			if !indented(lines[i]) {
				b.WriteString(roffLine(lines[i]) + "\n")
				i++
				continue
			}
			j := i
			for j < len(lines) && indented(lines[j]) {
				j++
			}
			writeIndented(b, lines[i:j])
			i = j
		}
	}
}

func indented(s string) bool { return strings.HasPrefix(s, " ") }

func writeIndented(b *strings.Builder, lines []string) {
	if entries, ok := termEntries(lines); ok {
		b.WriteString(".RS 2\n")
		for _, e := range entries {
			b.WriteString(".TP\n" + `\fB` + roffText(e[0]) + `\fR` + "\n" + roffLine(e[1]) + "\n")
		}
		b.WriteString(".RE\n")
		return
	}
	b.WriteString(".RS 2\n.nf\n")
	indent := len(lines[0]) - len(strings.TrimLeft(lines[0], " "))
	for _, l := range lines {
		if len(l) >= indent && strings.TrimSpace(l[:indent]) == "" {
			l = l[indent:]
		}
		b.WriteString(roffLine(l) + "\n")
	}
	b.WriteString(".fi\n.RE\n")
}

// termEntries reads lines as a table of terms: each entry's first line has the term at the
// block's indent and its description at one column shared by every entry; continuation lines
// start at that column. ok is false for anything else (a code example, a list).
func termEntries(lines []string) (entries [][2]string, ok bool) {
	m := termLine.FindStringSubmatch(lines[0])
	if m == nil {
		return nil, false
	}
	indent, col := len(m[1]), len(m[1])+len(m[2])+len(m[3])
	if len(m[3]) < 2 && len(lines) == 1 {
		return nil, false // "  source <(...)": a command, not a term
	}
	for _, l := range lines {
		lead := len(l) - len(strings.TrimLeft(l, " "))
		switch {
		case lead == indent:
			if len(l) <= col || l[col-1] != ' ' || strings.TrimSpace(l[col:]) == "" || l[col] == ' ' {
				return nil, false
			}
			entries = append(entries, [2]string{strings.TrimSpace(l[:col]), l[col:]})
		case lead == col && len(entries) > 0:
			entries[len(entries)-1][1] += " " + strings.TrimSpace(l)
		default:
			return nil, false
		}
	}
	for _, e := range entries {
		if strings.Contains(e[0], "  ") {
			return nil, false
		}
	}
	return entries, len(entries) > 0
}

// roffText escapes text inside a line: backslashes and hyphens (so that options copy as ASCII
// hyphen-minus).
func roffText(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	return strings.ReplaceAll(s, "-", `\-`)
}

// roffLine escapes a whole output line: also a leading period or apostrophe, which roff would
// take for a request.
func roffLine(s string) string {
	s = roffText(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
