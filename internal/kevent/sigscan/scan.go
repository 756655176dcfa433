package sigscan

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// srcFile is one file of the tree, lexed.
type srcFile struct {
	path     string
	toks     []token
	defines  []*macro
	includes []string // resolved paths of the tree
}

// Tree is an extracted kernel source subtree, read once.
type Tree struct {
	Root  string
	files map[string]*srcFile
}

// maxFile bounds what is read of one file: no driver source comes near it.
const maxFile = 4 << 20

// ReadTree lexes every .c and .h file under root (a kernel tree or the part of one extracted
// with git archive: drivers/..., include/linux/mlx5).
func ReadTree(root string) (*Tree, error) {
	t := &Tree{Root: root, files: map[string]*srcFile{}}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !(strings.HasSuffix(p, ".c") || strings.HasSuffix(p, ".h")) {
			return nil
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() || info.Size() > maxFile {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		t.files[rel] = parseFile(rel, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, f := range t.files {
		f.includes = t.resolveIncludes(f)
	}
	return t, nil
}

func parseFile(rel string, b []byte) *srcFile {
	toks, dirs := lex(b)
	f := &srcFile{path: rel, toks: toks}
	defined := map[string]bool{}
	for _, d := range dirs {
		// A name defined twice in one file is defined in the two branches of an #if; the first
		// is kept (ksmbd's glob.h: pr_fmt with SUBMOD_NAME, then without it).
		if m := parseDefine(d, rel); m != nil && !defined[m.name] {
			defined[m.name] = true
			f.defines = append(f.defines, m)
		}
		if inc, ok := includeOf(d.text); ok {
			f.includes = append(f.includes, inc)
		}
	}
	return f
}

// includeOf reads an #include directive: the name as written, "<...>" kept as "<name".
func includeOf(text string) (string, bool) {
	s := strings.TrimSpace(text)
	rest, ok := strings.CutPrefix(s, "include")
	if !ok {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	if len(rest) < 3 {
		return "", false
	}
	switch rest[0] {
	case '"':
		if j := strings.IndexByte(rest[1:], '"'); j >= 0 {
			return rest[1 : 1+j], true
		}
	case '<':
		if j := strings.IndexByte(rest, '>'); j >= 0 {
			return "<" + rest[1:j], true
		}
	}
	return "", false
}

// resolveIncludes finds the headers a file includes in the tree: "x.h" in its directory or any
// directory above it (the drivers' Makefiles add their top directory, -I$(src)), <x.h> under
// include/.
func (t *Tree) resolveIncludes(f *srcFile) []string {
	var out []string
	for _, inc := range f.includes {
		if sys, ok := strings.CutPrefix(inc, "<"); ok {
			if p := path.Join("include", sys); t.files[p] != nil {
				out = append(out, p)
			}
			continue
		}
		for dir := path.Dir(f.path); ; dir = path.Dir(dir) {
			if p := path.Join(dir, inc); t.files[p] != nil {
				out = append(out, p)
				break
			}
			if dir == "." || dir == "/" {
				break
			}
		}
	}
	return out
}

// envOf is what file sees: the defines of the headers it includes, transitively, then its own.
func (t *Tree) envOf(f *srcFile, modname string) *env {
	e := &env{macros: map[string]*macro{}, printers: map[*macro]*printer{}, modname: modname}
	seen := map[string]bool{}
	var add func(p string, depth int)
	add = func(p string, depth int) {
		if seen[p] || depth > 32 {
			return
		}
		seen[p] = true
		h := t.files[p]
		for _, inc := range h.includes {
			add(inc, depth+1)
		}
		for _, m := range h.defines {
			e.macros[m.name] = m
		}
	}
	add(f.path, 0)
	return e
}

// Prints returns the print calls of every file that rules assign to a driver, in file and line
// order, each with its driver's name.
func (t *Tree) Prints() []DriverPrint {
	names := make([]string, 0, len(t.files))
	for p := range t.files {
		names = append(names, p)
	}
	sort.Strings(names)
	var out []DriverPrint
	for _, p := range names {
		drv := DriverOf(p)
		if drv == nil {
			continue
		}
		f := t.files[p]
		for _, pr := range extract(p, f.toks, t.envOf(f, drv.Module)) {
			out = append(out, DriverPrint{Print: pr, Driver: drv})
		}
	}
	return out
}

// DriverPrint is a print call with the driver whose source it is.
type DriverPrint struct {
	Print
	Driver *SourceDriver
}

// ExtractFile reads one C file on its own (no headers): the prints whose printers it defines or
// the kernel's. For tests and for a quick look at one file.
func ExtractFile(name string, src []byte, modname string) []Print {
	f := parseFile(name, src)
	e := &env{macros: map[string]*macro{}, printers: map[*macro]*printer{}, modname: modname}
	for _, m := range f.defines {
		e.macros[m.name] = m
	}
	return extract(name, f.toks, e)
}

// Foreign is the driver every file of a tree outside SourceDrivers is read as: other vendors'
// drivers, whose lines a generated entry must not claim.
var Foreign = &SourceDriver{Name: "foreign", Module: "foreign",
	Lead: map[string]string{"dev": "foreign " + pciLead, "net": "foreign 0000:3b:00.0 eth0: ", "ib": "infiniband foo0: ", "en": "foreign: "}}

// ForeignPrints returns the print calls of the files no SourceDriver of family claims.
func (t *Tree) ForeignPrints(family string) []DriverPrint {
	names := make([]string, 0, len(t.files))
	for p := range t.files {
		if d := DriverOf(p); d == nil || d.Family != family {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	var out []DriverPrint
	for _, p := range names {
		f := t.files[p]
		mod := path.Base(path.Dir(p))
		for _, pr := range extract(p, f.toks, t.envOf(f, mod)) {
			out = append(out, DriverPrint{Print: pr, Driver: Foreign})
		}
	}
	return out
}
