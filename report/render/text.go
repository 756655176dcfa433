package render

import (
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/words"
)

// DefaultWidth is the width the table is laid out for when the terminal's is unknown (output
// piped or written to a file): the classic terminal size, which also fits a ticket or an e-mail.
const DefaultWidth = 80

// minWidth is the narrowest layout the table supports; a narrower terminal gets lines this long.
const minWidth = 56

// cells measures display width without East Asian ambiguous-width widening, whatever the
// environment says, so that a layout depends only on RenderOptions.
var cells = &runewidth.Condition{}

// textWidth is the number of terminal columns s takes.
func textWidth(s string) int {
	w := 0
	for _, r := range s {
		w += cells.RuneWidth(r)
	}
	return w
}

// asciiFor replaces the non-ASCII characters rdmadiag itself writes, and some that kernel and
// firmware strings carry, by ASCII stand-ins; any other non-ASCII character becomes "?".
var asciiFor = map[rune]string{
	'→': "->", '←': "<-", '↔': "<->", '…': "...", '≥': ">=", '≤': "<=", '≠': "!=", '≈': "~",
	'×': "x", 'µ': "u", 'μ': "u", '–': "-", '—': "-", '‘': "'", '’': "'", '“': `"`, '”': `"`,
	'±': "+/-", '°': " deg", '·': ".", '§': "S", '\u00a0': " ",
}

// termSafe makes s safe to print on a terminal: what could act on it (control characters,
// which could move the cursor or change colours when a hostile file's content is shown, and
// bidirectional overrides) is escaped by Printable, and with ascii set every non-ASCII character
// becomes an ASCII stand-in.
func termSafe(s string, ascii bool) string {
	s = words.Printable(s)
	if !ascii {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 0x80:
			if a, ok := asciiFor[r]; ok {
				b.WriteString(a)
			} else {
				b.WriteByte('?')
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// wrap breaks s into lines of at most width columns, at spaces; a word longer than a line is cut
// where the line ends. Spaces at a break are dropped; runs of spaces inside a line are kept.
func wrap(s string, width int) []string {
	if width < 1 {
		width = 1
	}
	var lines []string
	var line strings.Builder
	lw := 0
	flush := func() {
		lines = append(lines, strings.TrimRight(line.String(), " "))
		line.Reset()
		lw = 0
	}
	for i, word := range strings.Split(s, " ") {
		ww := textWidth(word)
		sep := 0
		if i > 0 && lw > 0 {
			sep = 1
		}
		if lw > 0 && lw+sep+ww > width {
			flush()
			sep = 0
		}
		if i > 0 && sep == 1 {
			line.WriteByte(' ')
			lw++
		} else if i > 0 && lw == 0 && word == "" {
			// A run of spaces at the start of a continuation line is dropped.
			continue
		}
		for _, piece := range splitLong(word, width) {
			if lw > 0 && lw+textWidth(piece) > width {
				flush()
			}
			line.WriteString(piece)
			lw += textWidth(piece)
		}
	}
	if line.Len() > 0 || len(lines) == 0 {
		flush()
	}
	return lines
}

// Wrap breaks s into lines of at most width columns as the table's cells are broken: at spaces,
// and a word longer than a line after a path or name separator.
func Wrap(s string, width int) []string { return wrap(s, width) }

// splitLong cuts a word wider than width into pieces that fit, each ending after a path or
// name separator ('/', '_', '-', '.', ',') where one lies in its second half, so that a long
// path breaks between its components.
func splitLong(word string, width int) []string {
	var out []string
	for {
		// One pass over at most a line's worth of the word: a 64 KiB value is cut in linear time.
		cut, w, sep, fits := 0, 0, -1, true
		for i, r := range word {
			rw := cells.RuneWidth(r)
			if w+rw > width {
				fits = false
				break
			}
			w += rw
			cut = i + len(string(r))
			if strings.ContainsRune("/_-.,", r) && w > width/2 {
				sep = cut
			}
		}
		if fits {
			return append(out, word)
		}
		if sep > 0 {
			cut = sep
		}
		if cut == 0 {
			_, n := utf8.DecodeRuneInString(word)
			cut = n
		}
		out = append(out, word[:cut])
		word = word[cut:]
	}
}

// padRight fills s with spaces to width columns.
func padRight(s string, width int) string {
	if n := width - textWidth(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

// withoutSubject drops the subject from the start of a summary for a cell next to the subject:
// "mlx5_0/1: LID 0x11" becomes "LID 0x11", "0000:3b:00.0 (mlx5_0): link ..." becomes
// "(mlx5_0) link ...", and a leading part of the subject ("rxe0/1: 3 QP(s) of pid 120" on
// "rxe0/1 pid 120 (labqp) ERR", "rxe0: ..." on "rxe0 uverbs") goes too. A summary in which the
// subject is the subject of a sentence ("mlx5_0/1 is DOWN") is kept. A skipped finding's
// "skipped: " is dropped too: the status says it.
func withoutSubject(f *report.Finding) string {
	s := f.Summary
	name := f.Subject.String()
	names := func(x string) bool {
		if len(x) < 2 || !strings.HasPrefix(name, x) {
			return false
		}
		rest := name[len(x):]
		return rest == "" || strings.ContainsRune(" :(/", rune(rest[0]))
	}
	if i := strings.Index(s, ": "); i > 0 && names(s[:i]) {
		s = s[i+2:]
	} else if i := strings.Index(s, " ("); i > 0 && names(s[:i]) {
		rest := s[i+1:]
		if end := strings.Index(rest, "): "); end > 0 && !strings.ContainsAny(rest[1:end], "()") {
			s = rest[:end+1] + " " + rest[end+3:]
		}
	}
	if f.Severity == report.Skipped {
		s = strings.TrimPrefix(s, "skipped: ")
	}
	if s == "" {
		return f.Summary
	}
	return s
}

// withSubject is a summary that names its subject once: as it is when its first word names the
// subject, else preceded by the subject.
func withSubject(f *report.Finding) string {
	if words.NamedBy(f, f.Summary) {
		return f.Summary
	}
	return f.Subject.String() + ": " + f.Summary
}
