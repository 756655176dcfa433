package sigscan

import (
	"path"
	"strings"
)

// Print is one print call of a driver's source with a literal format.
type Print struct {
	File string // relative to the scanned tree: drivers/net/ethernet/mellanox/mlx5/core/health.c
	Func string // the enclosing function, "" at file scope
	Line int
	// Call is the macro or function called (mlx5_core_err, pr_warn).
	Call string
	// Level is the printk level ("err", "warn", ...), "" when the call takes it from a
	// variable (mlx5_log(dev, severity, ...)).
	Level string
	// Kind is what the print names before the text: "dev" (dev_printk: driver and device),
	// "net" (netdev_printk: driver, bus id and netdev), "ib" (ibdev_printk), "en" (mlx4_en's
	// en_print: "mlx4_en: <netdev>: "), "" (printk, pr_*: nothing but pr_fmt).
	Kind string
	// Format is the call's own format string, C concatenation joined and the trailing newline
	// dropped.
	Format string
	// Prefix is the text the macros write before Format (pr_fmt, mlx5_core_err's
	// "%s:%d:(pid %d): ", esw_warn's "E-Switch: "), with PrefixArgs the C expressions of its
	// conversions.
	Prefix     string
	PrefixArgs []string
	// Args are the C expressions of the format's conversions, in order.
	Args []string
	// Unresolved says why no format was read: the argument is no literal ("format is a
	// variable"), or names a macro the scanned tree does not define.
	Unresolved string
	// Ratelimited: the call goes through the kernel's ratelimit, whose "<function>: N callbacks
	// suppressed" (lib/ratelimit.c ___ratelimit()) names Func when it drops lines.
	Ratelimited bool
}

// macro is a #define: object-like (params nil) or function-like.
type macro struct {
	name     string
	funcLike bool
	params   []string
	variadic string // the name the variadic arguments go by: __VA_ARGS__ or arg of "arg..."
	body     []token
	file     string
}

// printer is a function or macro that prints its format argument.
type printer struct {
	fmtArg   int
	level    string // fixed level, "" when levelArg says where it is
	levelArg int    // -1: none
	kind     string
	prFmt    bool // pr_*(): the caller's pr_fmt() is applied
	devFmt   bool // dev_*(): the caller's dev_fmt() is applied (include/linux/dev_printk.h)
	prefix   string
	pargs    []string
	// levelWords, when set, reads the level argument as a driver's own words (log_rdma's ERR).
	levelWords map[string]string
	// rl: the print goes through the kernel's ratelimit (dev_err_ratelimited and its kind), which
	// names the calling function when it drops lines.
	rl bool
}

// kernLevel maps a level macro to its name.
func kernLevel(s string) string {
	switch s {
	case "KERN_EMERG", "LOGLEVEL_EMERG":
		return "emerg"
	case "KERN_ALERT", "LOGLEVEL_ALERT":
		return "alert"
	case "KERN_CRIT", "LOGLEVEL_CRIT":
		return "crit"
	case "KERN_ERR", "LOGLEVEL_ERR":
		return "err"
	case "KERN_WARNING", "LOGLEVEL_WARNING":
		return "warn"
	case "KERN_NOTICE", "LOGLEVEL_NOTICE":
		return "notice"
	case "KERN_INFO", "LOGLEVEL_INFO":
		return "info"
	case "KERN_DEBUG", "LOGLEVEL_DEBUG":
		return "debug"
	}
	return ""
}

// basePrinters are the kernel's print functions (include/linux/dev_printk.h, printk.h,
// netdevice.h, rdma/ib_verbs.h ibdev_*, bug.h WARN, scsi_host.h shost_printk) and two drivers' print functions that are
// no macros: mlx4_en's en_print() and mlx5's mlx5_printk().
var basePrinters = func() map[string]*printer {
	m := map[string]*printer{}
	short := map[string]string{"emerg": "emerg", "alert": "alert", "crit": "crit", "err": "err", "warn": "warn", "warning": "warn", "notice": "notice", "info": "info", "dbg": "debug", "debug": "debug", "devel": "debug"}
	for word, lvl := range short {
		for _, suf := range []string{"", "_ratelimited", "_once"} {
			rl := suf == "_ratelimited"
			m["dev_"+word+suf] = &printer{fmtArg: 1, level: lvl, levelArg: -1, kind: "dev", devFmt: true, rl: rl}
			m["netdev_"+word+suf] = &printer{fmtArg: 1, level: lvl, levelArg: -1, kind: "net", rl: rl}
			m["ibdev_"+word+suf] = &printer{fmtArg: 1, level: lvl, levelArg: -1, kind: "ib", rl: rl}
			m["pr_"+word+suf] = &printer{fmtArg: 0, level: lvl, levelArg: -1, prFmt: true, rl: rl}
		}
	}
	m["dev_printk"] = &printer{fmtArg: 2, levelArg: 0, kind: "dev", devFmt: true}
	m["dev_err_probe"] = &printer{fmtArg: 2, level: "err", levelArg: -1, kind: "dev", devFmt: true}
	// include/scsi/scsi_host.h: dev_printk() on the SCSI host ("scsi host5: ").
	m["shost_printk"] = &printer{fmtArg: 2, levelArg: 0, kind: "shost"}
	m["netdev_printk"] = &printer{fmtArg: 2, levelArg: 0, kind: "net"}
	m["ibdev_printk"] = &printer{fmtArg: 2, levelArg: 0, kind: "ib"}
	for _, p := range []string{"printk", "printk_ratelimited", "printk_once", "printk_deferred"} {
		m[p] = &printer{fmtArg: 0, levelArg: -1, rl: p == "printk_ratelimited"}
	}
	for _, w := range []string{"WARN", "WARN_ONCE", "WARN_RATELIMIT"} {
		m[w] = &printer{fmtArg: 1, level: "warn", levelArg: -1, rl: w == "WARN_RATELIMIT"}
	}
	m["en_print"] = &printer{fmtArg: 2, levelArg: 0, kind: "en"}
	m["mlx5_printk"] = &printer{fmtArg: 2, levelArg: 1, kind: "dev"}
	return m
}()

// macroPrinters are macros of a driver read as printers of their own, where the level a line
// is printed at is a word of the driver's that the macro tests rather than passes on. The SMB
// Direct client's log_rdma(level, class, fmt) (fs/smb/client/smbdirect.c, 5.x fs/cifs/) prints
// cifs_dbg(VFS, "%s:%d " fmt, __func__, __LINE__): pr_err "CIFS: VFS: " always for ERR, and
// for INFO only when the smbd_logging_level parameter asks for it, so INFO is information.
var macroPrinters = map[string]struct {
	file    string // the macro is this one only where this file defines it
	printer *printer
}{
	"log_rdma": {"smbdirect.c", &printer{fmtArg: 2, levelArg: 0, levelWords: map[string]string{"ERR": "err", "INFO": "info"}, prFmt: true, prefix: "VFS: %s:%d ", pargs: []string{"__func__", "__LINE__"}}},
}

// env is what a file sees: its own #defines and those of the headers it includes.
type env struct {
	macros   map[string]*macro
	printers map[*macro]*printer // function-like macros analysed, nil value: not a printer
	modname  string              // KBUILD_MODNAME
}

func (e *env) printer(name string) *printer {
	return e.inner(name, 0)
}

// inner is the printer name calls: a driver's macro read as its own printer, a macro that
// wraps one, or one of the kernel's.
func (e *env) inner(name string, depth int) *printer {
	m := e.macros[name]
	if p, ok := macroPrinters[name]; ok && m != nil && path.Base(m.file) == p.file {
		return p.printer
	}
	if m != nil && m.funcLike {
		return e.wrapper(m, depth)
	}
	return basePrinters[name]
}

// wrapper reads a function-like macro as a printer when its body calls one with the format
// parameter as the end of the format argument: mlx5_core_err() calls dev_err() with
// "%s:%d:(pid %d): " format.
func (e *env) wrapper(m *macro, depth int) *printer {
	if p, ok := e.printers[m]; ok {
		return p
	}
	e.printers[m] = nil // a macro that names itself is no printer
	if depth > 8 {
		return nil
	}
	b := m.body
	for i := 0; i+1 < len(b); i++ {
		if b[i].kind != tokIdent || b[i+1].text != "(" {
			continue
		}
		inner := e.inner(b[i].text, depth+1)
		if inner == nil {
			continue
		}
		args, _ := splitArgs(b, i+1)
		if inner.fmtArg >= len(args) {
			continue
		}
		fa := args[inner.fmtArg]
		if len(fa) == 0 || fa[len(fa)-1].kind != tokIdent {
			continue
		}
		fi := index(m.params, fa[len(fa)-1].text)
		if fi < 0 {
			continue
		}
		p := &printer{fmtArg: fi, level: inner.level, levelArg: -1, kind: inner.kind, prFmt: inner.prFmt, devFmt: inner.devFmt, prefix: inner.prefix, pargs: inner.pargs, rl: inner.rl}
		if inner.levelArg >= 0 && inner.levelArg < len(args) {
			la := args[inner.levelArg]
			if len(la) == 1 && index(m.params, la[0].text) >= 0 {
				p.levelArg = index(m.params, la[0].text)
				p.levelWords = inner.levelWords
			} else {
				p.level = inner.levelOf(la)
			}
		}
		pre := fa[:len(fa)-1]
		if len(pre) > 0 && pre[0].kind == tokIdent && index(m.params, pre[0].text) >= 0 {
			// printk(level "%s: " format, ...): the level is a parameter.
			p.levelArg = index(m.params, pre[0].text)
			pre = pre[1:]
		}
		s, lvl, why := e.literal(pre, 0)
		if why != "" {
			continue
		}
		if lvl != "" {
			p.level = lvl
		}
		p.prefix += s
		for _, a := range args[inner.fmtArg+1:] {
			if hasIdent(a, m.variadic) {
				break
			}
			p.pargs = append(p.pargs, joinTokens(a))
		}
		e.printers[m] = p
		return p
	}
	return nil
}

// literal joins a format argument: string literals and the macros that expand to them
// (KBUILD_MODNAME, DRV_NAME), and a level macro (KERN_ERR) before them. why says what stopped it.
func (e *env) literal(toks []token, depth int) (s, level, why string) {
	var b strings.Builder
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == tokIdent && i+1 < len(toks) && toks[i+1].text == "(" && e.macros[t.text] != nil && e.macros[t.text].funcLike && depth < 8:
			// A function-like macro of literals and its parameters: pr_fmt("%s %s: ") in
			// kernel/dma/debug.c's err_printk().
			args, end := splitArgs(toks, i+1)
			v, l, w := e.literal(expand(e.macros[t.text], args), depth+1)
			if w != "" {
				return "", "", w
			}
			b.WriteString(v)
			if l != "" {
				level = l
			}
			i = end - 1
		case t.kind == tokString:
			b.WriteString(t.text)
		case t.kind == tokIdent && kernLevel(t.text) != "" && strings.HasPrefix(t.text, "KERN_"):
			level = kernLevel(t.text)
		case t.kind == tokIdent && t.text == "KERN_CONT":
		case t.kind == tokIdent && t.text == "KBUILD_MODNAME" && e.modname != "":
			b.WriteString(e.modname)
		case t.kind == tokIdent && e.macros[t.text] != nil && !e.macros[t.text].funcLike && depth < 8:
			v, l, w := e.literal(e.macros[t.text].body, depth+1)
			if w != "" {
				return "", "", w
			}
			b.WriteString(v)
			if l != "" {
				level = l
			}
		case t.kind == tokPunct && (t.text == "(" || t.text == ")"):
		case t.kind == tokIdent:
			return "", "", "format names " + t.text
		default:
			return "", "", "format is an expression"
		}
	}
	return b.String(), level, ""
}

// expand is a function-like macro's body with its parameters replaced by the arguments.
func expand(m *macro, args [][]token) []token {
	var out []token
	for _, t := range m.body {
		if t.kind == tokIdent {
			if i := index(m.params, t.text); i >= 0 {
				if i < len(args) {
					out = append(out, args[i]...)
				}
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

// levelOf is the level a level argument names: a KERN_ macro, or one of the printer's words.
func (p *printer) levelOf(toks []token) string {
	if p.levelWords != nil {
		if len(toks) == 1 {
			return p.levelWords[toks[0].text]
		}
		return ""
	}
	return levelOf(toks)
}

func levelOf(toks []token) string {
	for _, t := range toks {
		if l := kernLevel(t.text); l != "" {
			return l
		}
	}
	return ""
}

func hasIdent(toks []token, name string) bool {
	for _, t := range toks {
		if t.kind == tokIdent && t.text == name {
			return true
		}
	}
	return false
}

func index(ss []string, s string) int {
	for i, v := range ss {
		if v == s {
			return i
		}
	}
	return -1
}

func joinTokens(toks []token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 && (t.kind == tokIdent || t.kind == tokNumber) && (toks[i-1].kind == tokIdent || toks[i-1].kind == tokNumber) {
			b.WriteByte(' ')
		}
		if t.kind == tokString {
			b.WriteString(`"` + t.text + `"`)
			continue
		}
		b.WriteString(t.text)
	}
	return b.String()
}

// splitArgs splits the argument list whose "(" is toks[open] at its top-level commas; end is
// the index past its ")".
func splitArgs(toks []token, open int) (args [][]token, end int) {
	depth := 0
	var cur []token
	for i := open; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tokPunct {
			switch t.text {
			case "(", "[", "{":
				depth++
				if depth == 1 {
					continue
				}
			case ")", "]", "}":
				depth--
				if depth == 0 {
					return append(args, cur), i + 1
				}
			case ",":
				if depth == 1 {
					args, cur = append(args, cur), nil
					continue
				}
			case ";":
				// A statement's end inside an argument list: the call was not closed.
				return append(args, cur), i
			}
		}
		cur = append(cur, t)
	}
	return append(args, cur), len(toks)
}

// parseDefine reads a #define directive; nil when it is none.
func parseDefine(d directive, file string) *macro {
	s := strings.TrimSpace(d.text)
	rest, ok := strings.CutPrefix(s, "define")
	if !ok || rest == "" || rest[0] != ' ' && rest[0] != '\t' {
		return nil
	}
	rest = strings.TrimLeft(rest, " \t")
	j := 0
	for j < len(rest) && isIdentChar(rest[j]) {
		j++
	}
	if j == 0 {
		return nil
	}
	m := &macro{name: rest[:j], file: file}
	rest = rest[j:]
	if strings.HasPrefix(rest, "(") {
		m.funcLike = true
		k := strings.IndexByte(rest, ')')
		if k < 0 {
			return nil
		}
		for _, p := range strings.Split(rest[1:k], ",") {
			p = strings.TrimSpace(p)
			switch {
			case p == "...":
				m.variadic = "__VA_ARGS__"
			case strings.HasSuffix(p, "..."):
				p = strings.TrimSpace(strings.TrimSuffix(p, "..."))
				m.variadic = p
				m.params = append(m.params, p)
				continue
			}
			if p != "..." {
				m.params = append(m.params, p)
			}
		}
		rest = rest[k+1:]
	}
	m.body, _ = lex([]byte(rest))
	return m
}

// extract finds the print calls of one file's tokens.
func extract(file string, toks []token, e *env) []Print {
	var out []Print
	depth := 0         // braces
	fn, cand := "", "" // the function being read; the name before a file-scope "("
	paren := 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tokPunct {
			switch t.text {
			case "{":
				if depth == 0 {
					fn = cand
				}
				depth++
			case "}":
				if depth > 0 {
					depth--
				}
				if depth == 0 {
					fn, cand = "", ""
				}
			case "(":
				if depth == 0 && paren == 0 && cand == "" && i > 0 && toks[i-1].kind == tokIdent {
					cand = toks[i-1].text
				}
				if depth == 0 {
					paren++
				}
			case ")":
				if depth == 0 && paren > 0 {
					paren--
				}
			case ";", "=":
				if depth == 0 {
					cand, paren = "", 0
				}
			}
			continue
		}
		if t.kind != tokIdent || depth == 0 || i+1 >= len(toks) || toks[i+1].text != "(" {
			continue
		}
		p := e.printer(t.text)
		if p == nil {
			continue
		}
		args, end := splitArgs(toks, i+1)
		pr := Print{File: file, Func: fn, Line: t.line, Call: t.text, Level: p.level, Kind: p.kind, Prefix: p.prefix, PrefixArgs: p.pargs, Ratelimited: p.rl}
		if p.levelArg >= 0 && p.levelArg < len(args) {
			pr.Level = p.levelOf(args[p.levelArg])
		}
		if p.fmtArg >= len(args) {
			pr.Unresolved = "too few arguments"
			out = append(out, pr)
			continue
		}
		s, lvl, why := e.literal(args[p.fmtArg], 0)
		if lvl != "" {
			pr.Level = lvl
		}
		pr.Format = strings.TrimSuffix(s, "\n")
		pr.Unresolved = why
		for _, a := range args[p.fmtArg+1:] {
			pr.Args = append(pr.Args, joinTokens(a))
		}
		if p.prFmt {
			if m := e.macros["pr_fmt"]; m != nil && m.funcLike && len(m.params) == 1 {
				pre, pargs := e.prFmt(m)
				pr.Prefix = pre + pr.Prefix
				pr.PrefixArgs = append(pargs, pr.PrefixArgs...)
			}
		}
		if p.devFmt {
			if m := e.devFmt(); m != nil {
				pre, pargs := e.prFmt(m)
				pr.Prefix = pre + pr.Prefix
				pr.PrefixArgs = append(pargs, pr.PrefixArgs...)
			}
		}
		out = append(out, pr)
		i = end - 1
	}
	return out
}

// devFmt is the file's dev_fmt() as a one-parameter macro: "#define dev_fmt(fmt) "DPC: " fmt",
// or an alias of pr_fmt ("#define dev_fmt pr_fmt", "#define dev_fmt(fmt) pr_fmt(fmt)"); nil
// when the file has none.
func (e *env) devFmt() *macro {
	m := e.macros["dev_fmt"]
	if m == nil {
		return nil
	}
	if len(m.body) > 0 && m.body[0].kind == tokIdent && (!m.funcLike || len(m.body) == 4 && m.body[1].text == "(") {
		if a := e.macros[m.body[0].text]; a != nil && a != m && a.funcLike && len(a.params) == 1 {
			return a
		}
	}
	if m.funcLike && len(m.params) == 1 {
		return m
	}
	return nil
}

// prFmt reads a pr_fmt() definition: the text before fmt and the arguments after it
// ("<" MLX4_IB_DRV_NAME "> %s: " fmt, __func__).
func (e *env) prFmt(m *macro) (string, []string) {
	b := m.body
	k := -1
	for i, t := range b {
		if t.kind == tokIdent && t.text == m.params[0] {
			k = i
			break
		}
	}
	if k < 0 {
		return "", nil
	}
	s, _, why := e.literal(b[:k], 0)
	if why != "" {
		return "", nil
	}
	var args []string
	rest := b[k+1:]
	if len(rest) > 0 && rest[0].text == "," {
		cur := []token{}
		for _, t := range rest[1:] {
			if t.text == "," {
				args, cur = append(args, joinTokens(cur)), nil
				continue
			}
			cur = append(cur, t)
		}
		args = append(args, joinTokens(cur))
	}
	return s, args
}
