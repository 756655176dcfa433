package kevent

import (
	"fmt"
	"regexp"
	"strings"
)

// A Format is a C format string of printk as the driver's source has it, split into literal text
// and conversions: the signature table keeps the drivers' own strings, and the expression a
// record is matched with is derived from them, so that the two cannot drift apart.
type Format struct {
	Text  string
	parts []part
}

// part is a literal run of text, or one conversion (verb set).
type part struct {
	lit   string
	verb  byte   // d i u x X o c s p; 0 for a literal
	ext   string // the %p extension letters (pI4, pM, pV ...)
	flags string // "#", "-", "0", "+", " "
	width bool   // a width was given: the field may be padded with spaces
}

// lengthMods are C's length modifiers, which change the argument's type but not the text.
const lengthMods = "hlLqjzt"

// ParseFormat splits a printk format string. It accepts what vsprintf accepts of C's syntax:
// flags, width and precision (numbers or '*'), length modifiers, and %p followed by the
// kernel's extension letters (Documentation/core-api/printk-formats.rst).
func ParseFormat(text string) (Format, error) {
	f := Format{Text: text}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			f.parts = append(f.parts, part{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '%' {
			lit.WriteByte(c)
			continue
		}
		i++
		if i >= len(text) {
			return Format{}, fmt.Errorf("format %q ends in a lone %%", text)
		}
		if text[i] == '%' {
			lit.WriteByte('%')
			continue
		}
		var p part
		for i < len(text) && strings.IndexByte("#-0+ ", text[i]) >= 0 {
			p.flags += string(text[i])
			i++
		}
		for i < len(text) && (text[i] >= '0' && text[i] <= '9' || text[i] == '*') {
			p.width = true
			i++
		}
		if i < len(text) && text[i] == '.' {
			i++
			for i < len(text) && (text[i] >= '0' && text[i] <= '9' || text[i] == '*') {
				i++
			}
		}
		for i < len(text) && strings.IndexByte(lengthMods, text[i]) >= 0 {
			i++
		}
		if i >= len(text) {
			return Format{}, fmt.Errorf("format %q ends inside a conversion", text)
		}
		p.verb = text[i]
		switch p.verb {
		case 'd', 'i', 'u', 'x', 'X', 'o', 'c', 's':
		case 'p':
			// The kernel reads the letters after %p as its extension (pI4, pM, pV, pOF...);
			// printk-formats.rst lists none longer than three.
			for n := 0; n < 3 && i+1 < len(text) && isAlnum(text[i+1]); n++ {
				i++
				p.ext += string(text[i])
			}
		default:
			return Format{}, fmt.Errorf("format %q: conversion %%%c is not one printk prints", text, p.verb)
		}
		flush()
		f.parts = append(f.parts, p)
	}
	flush()
	return f, nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Conversions is the number of conversions, the largest index an argument role may name.
func (f Format) Conversions() int {
	n := 0
	for _, p := range f.parts {
		if p.verb != 0 {
			n++
		}
	}
	return n
}

// verbAt is the verb of conversion i (1-based), 0 past the last: 'd', 'i', 'u' and %pe count
// as one kind, as do 'x' and 'X'.
func (f Format) verbAt(i int) byte {
	n := 0
	for _, p := range f.parts {
		if p.verb == 0 {
			continue
		}
		if n++; n == i {
			switch {
			case p.verb == 'i', p.verb == 'u':
				return 'd'
			case p.verb == 'X':
				return 'x'
			case p.verb == 'p' && p.ext == "e":
				// %pe prints an error pointer as the errno's name, where older wordings
				// printed the number (%d, %ld).
				return 'd'
			}
			return p.verb
		}
	}
	return 0
}

// Literal counts the characters a matching line must contain as written: the literal text
// (spaces not counted) and, for a conversion held to a set of values, the shortest of them. It
// measures how specific a format is: "%s: %d" would match almost any line.
func (f Format) Literal(values map[int][]string) int {
	n, conv := 0, 0
	for _, p := range f.parts {
		if p.verb == 0 {
			n += len(strings.ReplaceAll(p.lit, " ", ""))
			continue
		}
		conv++
		if vs := values[conv]; len(vs) > 0 {
			short := len(vs[0])
			for _, v := range vs {
				short = min(short, len(v))
			}
			n += short
		}
	}
	return n
}

// Word is the longest run of literal text without spaces: every line the format prints
// contains it as written (Expr quotes literal text and only spaces may vary), so it is the
// expression's prefilter. "" when the format has no literal text.
func (f Format) Word() string {
	best := ""
	for _, p := range f.parts {
		if p.verb != 0 {
			continue
		}
		for _, w := range strings.Fields(p.lit) {
			if len(w) > len(best) {
				best = w
			}
		}
	}
	return best
}

// Lead is the literal text the format opens with, "" when it opens with a conversion.
func (f Format) Lead() string {
	if len(f.parts) == 0 || f.parts[0].verb != 0 {
		return ""
	}
	return f.parts[0].lit
}

// Words are the words of the format's literal text, each of which a line printed from it holds
// verbatim (literalExpr quotes them; only the spaces between them may differ).
func (f Format) Words() []string {
	var out []string
	for _, p := range f.parts {
		if p.verb == 0 {
			out = append(out, strings.Fields(p.lit)...)
		}
	}
	return out
}

// Role is what a conversion names, which decides how much text it may take.
type Role int

// Roles of a conversion.
const (
	RoleNone Role = iota
	RoleNetdev
	RoleIBDev
	RolePCI
	RoleModule
	RoleState
)

// Expr is the regular expression a message matching the format matches: unanchored at its start
// (the printk prefix, dev_printk's "driver BDF: " and mlx5_core_err's "func:line:(pid N): ",
// comes before it) and anchored at its end (the source's format ends the line). Each conversion
// is one capturing group, in order. values holds conversions to listed strings (a C expression
// choosing among fixed texts); roles narrows what a named conversion may hold. continued leaves
// the end open, for a line the driver goes on writing (pr_cont).
func (f Format) Expr(values map[int][]string, roles map[int]Role, continued bool) string {
	var b strings.Builder
	conv := 0
	last := len(f.parts) - 1
	for i, p := range f.parts {
		if p.verb == 0 {
			lit := p.lit
			if i == last {
				lit = strings.TrimRight(lit, " \t")
			}
			b.WriteString(literalExpr(lit))
			continue
		}
		conv++
		b.WriteString("(")
		if p.width {
			b.WriteString(` *`)
		}
		e := convExpr(p, values[conv], roles[conv])
		if i == 0 && e == `.*?` {
			// A format that opens with a string ("%s(0x%x) op_mod...") follows the printk
			// prefix, which ends in a space: the string is one word, or it would take the
			// prefix in with it. The word may end in spaces: the string is then an indentation
			// the caller passes (cper.c's newpfx, "{1}[Hardware Error]:   section_type: ...").
			e = `\S*\s*`
		}
		b.WriteString(e)
		b.WriteString(")")
		if p.width && strings.Contains(p.flags, "-") {
			b.WriteString(` *`)
		}
	}
	if !continued {
		// Quoted lines sometimes end in a full stop the source did not print.
		b.WriteString(`\.?\s*$`)
	}
	return b.String()
}

// literalExpr quotes literal text; a run of spaces matches any run of spaces, as syslog daemons
// and log shippers may fold them.
func literalExpr(s string) string {
	var b strings.Builder
	for _, w := range splitSpaces(s) {
		if w == " " {
			b.WriteString(`\s+`)
			continue
		}
		b.WriteString(regexp.QuoteMeta(w))
	}
	return b.String()
}

// splitSpaces splits s into runs of spaces (returned as " ") and runs of other text.
func splitSpaces(s string) []string {
	var out []string
	for len(s) > 0 {
		if s[0] == ' ' {
			j := 0
			for j < len(s) && s[j] == ' ' {
				j++
			}
			out, s = append(out, " "), s[j:]
			continue
		}
		j := strings.IndexByte(s, ' ')
		if j < 0 {
			j = len(s)
		}
		out, s = append(out, s[:j]), s[j:]
	}
	return out
}

// pciExpr is a PCI function address as pci_name() prints it.
const pciExpr = `[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]`

func convExpr(p part, values []string, role Role) string {
	if len(values) > 0 {
		q := make([]string, len(values))
		for i, v := range values {
			q[i] = regexp.QuoteMeta(v)
		}
		return `(?:` + strings.Join(q, "|") + `)`
	}
	switch p.verb {
	case 'd', 'i':
		return `[-+]?\d+`
	case 'u':
		return `\d+`
	case 'x', 'X':
		if strings.Contains(p.flags, "#") {
			return `(?:0[xX])?[0-9a-fA-F]+`
		}
		return `[0-9a-fA-F]+`
	case 'o':
		return `[0-7]+`
	case 'c':
		return `.`
	case 'p':
		switch p.ext {
		case "":
			return `\S+`
		}
		if strings.HasPrefix(p.ext, "V") || strings.HasPrefix(p.ext, "S") || strings.HasPrefix(p.ext, "B") {
			return `.*?`
		}
		if hexBytes(p.ext) {
			return `[0-9a-fA-F]{2}(?:[ :-][0-9a-fA-F]{2})*`
		}
		if strings.HasPrefix(p.ext, "R") || strings.HasPrefix(p.ext, "r") {
			// A struct resource, bracketed and spaced: "[mem size 0x01000000 64bit pref]"
			// (lib/vsprintf.c resource_string).
			return `\[[^\]]*\]`
		}
		return `\S+`
	}
	switch role {
	case RoleNetdev, RoleIBDev, RoleModule:
		return `[^\s:()]+`
	case RolePCI:
		return pciExpr
	case RoleState:
		return `\S+`
	}
	return `.*?`
}

// Sample is a line the format prints with plausible arguments: what the table's test classifies
// to prove that each entry recognises its own message.
func (f Format) Sample(values map[int][]string, roles map[int]Role) string {
	var b strings.Builder
	conv := 0
	for _, p := range f.parts {
		if p.verb == 0 {
			b.WriteString(p.lit)
			continue
		}
		conv++
		if vs := values[conv]; len(vs) > 0 {
			b.WriteString(vs[len(vs)-1])
			continue
		}
		switch p.verb {
		case 'd', 'i', 'u':
			b.WriteString("17")
		case 'x', 'X':
			if strings.Contains(p.flags, "#") {
				b.WriteString("0x")
			}
			b.WriteString("1f")
		case 'o':
			b.WriteString("17")
		case 'c':
			b.WriteString("z")
		case 'p':
			if strings.HasPrefix(p.ext, "R") || strings.HasPrefix(p.ext, "r") {
				b.WriteString("[mem 0xfb000000-0xfbffffff 64bit pref]")
				break
			}
			if hexBytes(p.ext) {
				b.WriteString("00 1b 21 3a")
				break
			}
			b.WriteString("00000000a1b2c3d4")
		case 's':
			switch roles[conv] {
			case RoleNetdev:
				b.WriteString("ens1f0np0")
			case RoleIBDev:
				b.WriteString("mlx5_0")
			case RolePCI:
				b.WriteString("0000:3b:00.0")
			case RoleModule:
				b.WriteString("mlx5_ib")
			case RoleState:
				b.WriteString("up")
			default:
				b.WriteString("sample text")
			}
		}
	}
	return strings.TrimRight(b.String(), " \t")
}

// hexBytes is a %p extension that prints a small buffer as hex bytes with a separator: "%*ph"
// "00 1b 21 3a", "%*phC" colons, "%*phD" dashes (lib/vsprintf.c hex_string); "%*phN" has none
// and stays one word.
func hexBytes(ext string) bool { return ext == "h" || ext == "hC" || ext == "hD" }
