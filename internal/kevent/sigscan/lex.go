// Package sigscan reads a driver's C sources for the messages it prints at warning level or
// graver and measures how many of them the kernel log table (internal/kevent) recognises; it
// also writes table entries for the ones it does not. The sources are untrusted text: the lexer
// never fails, it reads what it can.
package sigscan

import (
	"strconv"
	"strings"
)

// Token kinds of the lexer.
const (
	tokIdent = iota
	tokString
	tokChar
	tokNumber
	tokPunct
)

type token struct {
	kind int
	text string // an identifier or punctuation as written; a string literal decoded
	line int
}

// directive is one preprocessor line, continuation lines joined, comments dropped.
type directive struct {
	text string
	line int
}

// lex splits C source into tokens and preprocessor directives. Comments are dropped, string
// literals decoded (escapes resolved), and every branch of #if kept: a message printed under a
// config option is still the driver's.
func lex(src []byte) ([]token, []directive) {
	var toks []token
	var dirs []directive
	line := 1
	bol := true // only blanks since the line began: a '#' starts a directive
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			bol = true
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			line++
			i += 2
			continue
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			i = skipBlockComment(src, i, &line)
			continue
		case c == '#' && bol:
			start := line
			var b strings.Builder
			i++
			for i < len(src) && src[i] != '\n' {
				switch {
				case src[i] == '\\' && i+1 < len(src) && src[i+1] == '\n':
					line++
					i += 2
					b.WriteByte(' ')
				case src[i] == '\\' && i+2 < len(src) && src[i+1] == '\r' && src[i+2] == '\n':
					line++
					i += 3
					b.WriteByte(' ')
				case src[i] == '/' && i+1 < len(src) && src[i+1] == '*':
					i = skipBlockComment(src, i, &line)
					b.WriteByte(' ')
				case src[i] == '/' && i+1 < len(src) && src[i+1] == '/':
					for i < len(src) && src[i] != '\n' {
						i++
					}
				case src[i] == '"' || src[i] == '\'':
					j := skipQuoted(src, i)
					b.Write(src[i:j])
					i = j
				default:
					b.WriteByte(src[i])
					i++
				}
			}
			dirs = append(dirs, directive{text: b.String(), line: start})
			continue
		}
		bol = false
		switch {
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentChar(src[j]) {
				j++
			}
			// A wide or UTF-8 string's prefix (L"", u8"") is part of the literal.
			if j < len(src) && src[j] == '"' && isStringPrefix(string(src[i:j])) {
				i = j
				continue
			}
			toks = append(toks, token{kind: tokIdent, text: string(src[i:j]), line: line})
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i + 1
			for j < len(src) && (isIdentChar(src[j]) || src[j] == '.') {
				j++
			}
			toks = append(toks, token{kind: tokNumber, text: string(src[i:j]), line: line})
			i = j
		case c == '"':
			j := skipQuoted(src, i)
			end := j
			if j > i+1 && src[j-1] == '"' && !escaped(src, i+1, j-1) {
				end = j - 1 // the closing quote; an unclosed literal runs to the line's end
			}
			toks = append(toks, token{kind: tokString, text: unquote(src[i+1 : end]), line: line})
			line += strings.Count(string(src[i:j]), "\n")
			i = j
		case c == '\'':
			j := skipQuoted(src, i)
			toks = append(toks, token{kind: tokChar, text: string(src[i:j]), line: line})
			i = j
		default:
			n := 1
			if i+1 < len(src) && strings.Contains("->|&|##|==|!=|<=|>=|&&|||++|--|<<|>>", string(src[i:i+2])) {
				n = 2
			}
			toks = append(toks, token{kind: tokPunct, text: string(src[i : i+n]), line: line})
			i += n
		}
	}
	return toks, dirs
}

func skipBlockComment(src []byte, i int, line *int) int {
	i += 2
	for i < len(src) && !(src[i] == '*' && i+1 < len(src) && src[i+1] == '/') {
		if src[i] == '\n' {
			*line++
		}
		i++
	}
	return min(i+2, len(src))
}

// skipQuoted returns the index just past the literal that opens at i (its quote), or the end
// of the line when it is not closed.
func skipQuoted(src []byte, i int) int {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case q:
			return j + 1
		case '\n':
			return j
		}
	}
	return len(src)
}

// escaped reports whether src[k] is escaped by the backslashes before it, back to from.
func escaped(src []byte, from, k int) bool {
	n := 0
	for k-1-n >= from && src[k-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || c >= '0' && c <= '9' }
func isStringPrefix(s string) bool {
	return s == "L" || s == "u" || s == "U" || s == "u8"
}

// unquote resolves a C string literal's escapes. An unknown escape keeps its character, as C
// compilers do (with a warning).
func unquote(s []byte) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a', 'b', 'f', 'v':
			b.WriteByte(' ')
		case 'x':
			j := i + 1
			for j < len(s) && j < i+3 && strings.IndexByte("0123456789abcdefABCDEF", s[j]) >= 0 {
				j++
			}
			if v, err := strconv.ParseUint(string(s[i+1:j]), 16, 8); err == nil {
				b.WriteByte(byte(v))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(string(s[i:j]), 8, 16)
			b.WriteByte(byte(v))
			i = j - 1
		case '\n':
			// A line continuation inside a literal.
		default:
			b.WriteByte(e)
		}
	}
	return b.String()
}
