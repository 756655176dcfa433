package words

import (
	"strings"
	"unicode/utf8"
)

// Printable neutralises what a host's strings may carry that would act on a consumer instead of
// being read: C0 and C1 control characters and DEL (a line break starts a second status line, an
// ESC or CSI sequence moves a terminal's cursor), the Unicode bidirectional formatting characters
// that reorder what a terminal or a web page shows (Trojan Source, CVE-2021-42574: U+202A-U+202E,
// U+2066-U+2069, U+200E, U+200F, U+061C) and the line and paragraph separators U+2028 and U+2029.
// Each is written as an escape, the way JSON writes a control character: "\n", "\t", "\r", "\x1b"
// for the other C0 controls and DEL, "\u009b" for C1 and the Unicode ones; a byte that is not
// UTF-8 becomes "\xff". Every text output of rdmadiag (table, summary line, npd, Nagios,
// Prometheus, fleet's text) passes host strings through it; the JSON document keeps them as read.
func Printable(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if neutralised(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
		case !neutralised(r, n):
			b.WriteString(s[i : i+n])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			b.WriteString(`\x`)
			b.WriteString(hex2(byte(r)))
		default:
			b.WriteString(`\u`)
			b.WriteString(hex2(byte(r >> 8)))
			b.WriteString(hex2(byte(r)))
		}
		i += n
	}
	return b.String()
}

// neutralised reports whether Printable escapes the rune r that took n bytes.
func neutralised(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return true
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x200e, r == 0x200f, r == 0x061c, r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// HasUnprintable reports whether s holds anything Printable would escape: what a test of a text
// output asserts never reaches it.
func HasUnprintable(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if neutralised(r, n) {
			return true
		}
		i += n
	}
	return false
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}
