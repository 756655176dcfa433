package sigscan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
)

// Result is what the table makes of one print.
type Result struct {
	DriverPrint
	// Sample is the log line formatted from the print, its driver's lead before it.
	Sample string
	// Skip says why the print is not counted: below warning, no literal format, no words
	// of its own. "" for a counted print.
	Skip string
	// By is the entry that recognises Line, nil when none does (a missing format).
	By *kevent.Signature
	// Notice: the print is below warning (info, notice) but worth knowing (noticeable): it is
	// given an entry of information, and not counted in the coverage of prints at warning or
	// graver.
	Notice bool
}

// Covered reports a counted print the table recognises.
func (r *Result) Covered() bool { return r.Skip == "" && r.By != nil }

// Missing reports a counted print the table does not recognise.
func (r *Result) Missing() bool { return r.Skip == "" && r.By == nil }

// Message is the print's format as the table keeps it: its first line (the table matches a
// record, one line), with a macro's text before it when that has no conversions (esw_warn's
// "E-Switch: "), or when the format alone is too short to be specific and the macro's text
// names the function (mlx5_core_warn(dev, "start") is "%s:%d:(pid %d): start" with the
// function's name as the first conversion's value).
func (p *Print) Message() string {
	m, _ := p.Entry()
	return m
}

// Entry is Message and the values its conversions are held to: a conversion printing
// __func__ prints the function's name.
func (p *Print) Entry() (string, map[int][]string) {
	f, values, _ := p.entry()
	return f, values
}

// entry is Entry, and whether the macro's text is kept in the format.
func (p *Print) entry() (string, map[int][]string, bool) {
	f := p.Format
	if i := strings.IndexByte(f, '\n'); i >= 0 {
		f = f[:i]
	}
	f = strings.TrimRight(f, " \t")
	values := map[int][]string{}
	verbs := convVerbs(f)
	for i, a := range p.Args {
		if i < len(verbs) && verbs[i] == 's' && isFunc(a) && p.Func != "" {
			values[i+1] = []string{p.Func}
		}
	}
	kept := true
	switch {
	case p.Prefix == "":
		kept = false
	case !strings.Contains(p.Prefix, "%"):
		f = p.Prefix + f
	case len(strings.ReplaceAll(literalText(f), " ", "")) < kevent.MinLiteral && p.Func != "" && slices.ContainsFunc(p.PrefixArgs, isFunc):
		pv := convVerbs(p.Prefix)
		shifted := map[int][]string{}
		for i, v := range values {
			shifted[i+len(pv)] = v
		}
		for i, a := range p.PrefixArgs {
			if i < len(pv) && pv[i] == 's' && isFunc(a) {
				shifted[i+1] = []string{p.Func}
			}
		}
		f, values = p.Prefix+f, shifted
	default:
		kept = false
	}
	return f, values, kept
}

// prefixKept reports whether Entry keeps the macro's text in the format.
func (p *Print) prefixKept() bool {
	_, _, kept := p.entry()
	return kept
}

func isFunc(a string) bool { return a == "__func__" || a == "__FUNCTION__" }

// convVerbs are the verbs of a format's conversions, in order.
func convVerbs(f string) []byte {
	var out []byte
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		j := convEnd(f, i)
		if f[i:j] != "%%" {
			v := f[j-1]
			if k := strings.LastIndexByte(f[i:j], 'p'); k > 0 {
				v = 'p'
			}
			out = append(out, v)
		}
		i = j - 1
	}
	return out
}

// severe are the levels the scanner counts: what the classifier reports when unknown.
var severe = map[string]bool{"emerg": true, "alert": true, "crit": true, "err": true, "warn": true, "": true}

var levelNum = map[string]int{"emerg": 0, "alert": 1, "crit": 2, "err": 3, "warn": 4, "notice": 5, "info": 6, "debug": 7, "": 3}

// skipReason is why a print is not counted, "" when it is.
func skipReason(p *Print) string {
	switch {
	case p.Unresolved != "":
		return p.Unresolved
	case !severe[p.Level]:
		return "level " + p.Level
	}
	return wordsSkip(p)
}

// noticeable says a print below warning is worth an entry of information: it names a failure,
// a link or module change, or a reset or recovery ("srpt_add_one(%s) failed." at KERN_INFO,
// cxgb4's "%s module inserted"). A line quoted from a syslog file carries no level; without
// the entry, its words would read as an error no entry knows. Debug prints (pr_debug and its
// kind, compiled out without dynamic debug) are not.
func noticeable(p *Print) bool {
	return (p.Level == "info" || p.Level == "notice") && p.Unresolved == "" && worthKnowing.MatchString(literalText(p.Message()))
}

var worthKnowing = re(`(?i)fail|error|\berr\b|timeout|timed out|unable|couldn't|could not|\blink (is )?(up|down)\b|\bmodule (inserted|unplugged|removed)\b|\breset\b|\brecover`)

// wordsSkip says why a print's format cannot make an entry: it does not parse, or it has no
// words of its own.
func wordsSkip(p *Print) string {
	msg := p.Message()
	f, err := kevent.ParseFormat(msg)
	if err != nil {
		return "format does not parse"
	}
	// The words must be the call's own, not a macro's ("%s:%d:(pid %d): " before "err %d").
	own := p.Format
	if i := strings.IndexByte(own, '\n'); i >= 0 {
		own = own[:i]
	}
	if !strings.Contains(p.Prefix, "%") {
		own = p.Prefix + own
	}
	if _, err := kevent.ParseFormat(own); err != nil {
		return "format does not parse"
	}
	letters := 0
	for _, r := range literalText(own) {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			letters++
		}
	}
	if w, _ := kevent.ParseFormat(own); letters < 4 || len(w.Word()) < 3 || f.Word() == "" {
		return "no words of its own"
	}
	if strings.Contains(msg, "%pV") && letters < 10 {
		// A print function's own printk (en_print()): the words are its callers'.
		return "prints its caller's format (%pV)"
	}
	return ""
}

// literalText is a format without its conversions.
func literalText(f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		i = convEnd(f, i) - 1
	}
	return b.String()
}

// convEnd is the index past the conversion that starts at f[i] ('%').
func convEnd(f string, i int) int {
	j := i + 1
	for j < len(f) && strings.IndexByte("#-0+ 123456789.*hlLqjzt", f[j]) >= 0 {
		j++
	}
	if j < len(f) {
		j++
		if f[j-1] == 'p' {
			for n := 0; n < 3 && j < len(f) && isIdentChar(f[j]) && f[j] != '_'; n++ {
				j++
			}
		}
	}
	return j
}

// renderPrefix prints a macro's prefix as the kernel would: __func__ the function, __LINE__ the
// line, other conversions a sample value.
func renderPrefix(p *Print) string {
	var b strings.Builder
	n := 0
	pre := p.Prefix
	if p.prefixKept() {
		return "" // in Message
	}
	for i := 0; i < len(pre); i++ {
		if pre[i] != '%' {
			b.WriteByte(pre[i])
			continue
		}
		j := convEnd(pre, i)
		arg := ""
		if n < len(p.PrefixArgs) {
			arg = p.PrefixArgs[n]
		}
		n++
		switch {
		case pre[i:j] == "%%":
			b.WriteByte('%')
			n--
		case arg == "__func__" || arg == "__FUNCTION__":
			b.WriteString(p.Func)
		case arg == "__LINE__":
			fmt.Fprint(&b, p.Line)
		case pre[j-1] == 's':
			b.WriteString("ib0")
		default:
			b.WriteString("17")
		}
		i = j - 1
	}
	return b.String()
}

// sampleDevices is the host the lines are classified on, as the table's own test has it.
var sampleDevices = []kevent.Device{{Name: "mlx5_0", PCI: "0000:3b:00.0", Netdevs: map[string]int{"ens1f0np0": 1}}}

// SampleLine is the log line the print makes with sample arguments.
func (p *DriverPrint) SampleLine() (string, error) {
	msg, values := p.Entry()
	f, err := kevent.ParseFormat(msg)
	if err != nil {
		return "", err
	}
	return p.Driver.Lead[p.Kind] + renderPrefix(&p.Print) + f.Sample(values, nil), nil
}

// Check classifies a line formatted from every print with the table.
func Check(tb *kevent.Table, prints []DriverPrint) []Result {
	out := make([]Result, 0, len(prints))
	for _, p := range prints {
		r := Result{DriverPrint: p, Skip: skipReason(&p.Print)}
		if r.Skip != "" && noticeable(&p.Print) && wordsSkip(&p.Print) == "" {
			r.Skip, r.Notice = "", true
		}
		if r.Skip == "" && p.Driver.Scope != nil && !p.Driver.Scope.MatchString(p.Func+" "+p.Message()) {
			r.Skip = "outside the driver's scope (not about the RDMA function, the device's health or the PCIe path)"
		}
		if r.Skip == "" {
			line, err := p.SampleLine()
			if err != nil {
				r.Skip = "format does not parse"
			} else {
				r.Sample = line
				r.By = Recognise(tb, line, p.Level)
			}
		}
		out = append(out, r)
	}
	return out
}

// Recognise is the entry that recognises line at level, nil when none does.
func Recognise(tb *kevent.Table, line, level string) *kevent.Signature {
	evs := tb.Classify([]kmsg.Record{{Level: levelNum[level], Text: line}}, sampleDevices)
	if len(evs) == 1 && evs[0].Sig != nil {
		return evs[0].Sig
	}
	return nil
}

// Tally is one driver's counts.
type Tally struct {
	Driver                    string
	Covered, Missing, Skipped int
}

// Tallies counts results per driver, in SourceDrivers' order. A format printed by several calls
// counts once per driver.
func Tallies(rs []Result) []Tally {
	by := map[string]*Tally{}
	seen := map[string]bool{}
	for _, r := range rs {
		t := by[r.Driver.Name]
		if t == nil {
			t = &Tally{Driver: r.Driver.Name}
			by[r.Driver.Name] = t
		}
		key := r.Driver.Name + "\x00" + r.Message() + "\x00" + r.Skip
		if seen[key] {
			continue
		}
		seen[key] = true
		switch {
		case r.Skip != "" || r.Notice:
			t.Skipped++
		case r.By != nil:
			t.Covered++
		default:
			t.Missing++
		}
	}
	var out []Tally
	for _, d := range SourceDrivers {
		if t := by[d.Name]; t != nil {
			out = append(out, *t)
			delete(by, d.Name) // a driver read from two sets of files (mana) is counted once
		}
	}
	return out
}
