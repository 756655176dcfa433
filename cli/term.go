package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/rdmadiag/rdmadiag/report/render"
)

// getenv reads the environment the App was given (os.Getenv unless a test fixes it).
func (a *App) getenv(key string) string {
	if a.Getenv != nil {
		return a.Getenv(key)
	}
	return os.Getenv(key)
}

// tableWidth is the width the table is laid out for: COLUMNS when set, else the terminal's when
// stdout is one, else render.DefaultWidth (piped, or written to a file).
func (a *App) tableWidth(toFile bool) int {
	if n, err := strconv.Atoi(strings.TrimSpace(a.getenv("COLUMNS"))); err == nil && n > 0 {
		return n
	}
	if !toFile && a.IsTerminal && a.TermWidth != nil {
		if n := a.TermWidth(); n > 0 {
			return n
		}
	}
	return render.DefaultWidth
}

// utf8Locale reports whether the locale's character set is UTF-8, looked up as setlocale(3)
// does for LC_CTYPE: LC_ALL, then LC_CTYPE, then LANG; unset, "C" and "POSIX" are ASCII.
func (a *App) utf8Locale() bool {
	for _, k := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if v := a.getenv(k); v != "" {
			return isUTF8Locale(v)
		}
	}
	return false
}

// isUTF8Locale reads the codeset of a locale name language[_territory][.codeset][@modifier].
func isUTF8Locale(name string) bool {
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name = name[:i]
	}
	i := strings.IndexByte(name, '.')
	if i < 0 {
		return false
	}
	cs := strings.ToLower(strings.ReplaceAll(name[i+1:], "-", ""))
	return cs == "utf8"
}

// colorOn decides colours: only on a terminal, never into a file, and never when --no-color or
// a non-empty NO_COLOR (https://no-color.org) asks so.
func (a *App) colorOn(noColor, toFile bool) bool {
	return a.IsTerminal && !toFile && !noColor && a.getenv("NO_COLOR") == ""
}

// renderOptions are the table's looks for this terminal.
func (a *App) renderOptions(noColor, toFile bool) render.RenderOptions {
	return render.RenderOptions{Color: a.colorOn(noColor, toFile), Width: a.tableWidth(toFile), ASCII: !a.utf8Locale()}
}

// terminalWidth is the number of columns of the terminal f is, 0 when it is none.
func terminalWidth(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// progress shows what a long step is doing (a probe, an --interval wait) as one line on
// standard error, rewritten in place and erased when the run ends, and only when standard error
// is a terminal: a log or a pipe gets nothing, standard output never.
type progress struct {
	mu     sync.Mutex
	w      io.Writer
	on     bool
	shown  bool
	suffix string
	width  int
}

func (a *App) newProgress() *progress {
	p := &progress{w: a.Stderr, on: a.StderrIsTerminal, suffix: "...", width: render.DefaultWidth}
	if a.utf8Locale() {
		p.suffix = "…"
	}
	if a.StderrWidth != nil {
		if n := a.StderrWidth(); n > 0 {
			p.width = n
		}
	}
	return p
}

// show replaces the line with msg, cut to the terminal's width so that "\r" can erase it.
func (p *progress) show(msg string) {
	if !p.on {
		return
	}
	line := []rune(msg + p.suffix)
	if len(line) > p.width-1 {
		line = line[:max(p.width-1, 0)]
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\x1b[K%s", string(line))
	p.shown = true
}

// clear erases the line, once the run's output is about to be written.
func (p *progress) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		io.WriteString(p.w, "\r\x1b[K")
		p.shown = false
	}
}
