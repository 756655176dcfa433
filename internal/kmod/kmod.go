// Package kmod parses /proc/modules and the kernel build configuration
// (/proc/config.gz or /boot/config-<release>). No maintained Go library parses either (procfs
// has neither), so they are written here, small and fuzzed.
package kmod

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Module is one line of /proc/modules:
//
//	name size refcnt deps state 0xaddress [taints]
//	ib_core 458752 8 rdma_ucm,ib_uverbs,mlx5_ib, Live 0x0000000000000000
type Module struct {
	Name string
	Size uint64
	// Refcnt is -1 when the kernel was built without module unloading ("-").
	Refcnt int
	// UsedBy lists the modules that depend on this one (the kernel's source_list), without the
	// "[permanent]" marker.
	UsedBy []string
	// State is Live, Loading or Unloading.
	State string
	// Taints is the text inside the parentheses, e.g. "OE" (out-of-tree, unsigned).
	Taints string
}

// Modules maps a module name to its entry.
type Modules map[string]Module

// Has reports whether a module is loaded (in any state).
func (m Modules) Has(name string) bool { _, ok := m[name]; return ok }

// ParseModules reads /proc/modules. Lines that do not parse are returned as an error after the
// good lines, so one odd line never hides the rest.
func ParseModules(b []byte) (Modules, error) {
	out := Modules{}
	var bad []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 {
			bad = append(bad, line)
			continue
		}
		size, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			bad = append(bad, line)
			continue
		}
		m := Module{Name: f[0], Size: size, Refcnt: -1, State: f[4]}
		if f[2] != "-" {
			if m.Refcnt, err = strconv.Atoi(f[2]); err != nil {
				bad = append(bad, line)
				continue
			}
		}
		if f[3] != "-" {
			for _, u := range strings.Split(f[3], ",") {
				if u != "" && u != "[permanent]" {
					m.UsedBy = append(m.UsedBy, u)
				}
			}
		}
		if len(f) >= 7 && strings.HasPrefix(f[6], "(") {
			m.Taints = strings.Trim(f[6], "()")
		}
		out[m.Name] = m
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("/proc/modules: %w", err)
	}
	if len(bad) > 0 {
		return out, &LinesError{Lines: bad}
	}
	return out, nil
}

// LinesError lists the lines of /proc/modules that are not in the kernel's format.
type LinesError struct {
	Lines []string
}

func (e *LinesError) Error() string {
	return fmt.Sprintf("/proc/modules: %d line(s) not in the kernel's format, first: %q", len(e.Lines), e.Lines[0])
}

// UnparsedNames returns those of names that are the first field of a line err (a ParseModules
// error) lists: modules whose entry is there but could not be read, so that their absence from
// the parsed list proves nothing.
func UnparsedNames(err error, names ...string) []string {
	var le *LinesError
	if !errors.As(err, &le) {
		return nil
	}
	var out []string
	for _, n := range names {
		for _, l := range le.Lines {
			if f := strings.Fields(l); len(f) > 0 && f[0] == n {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// Config is a kernel build configuration: option name -> value ("y", "m", a string or number).
// An option that is "not set" is absent.
type Config map[string]string

// State returns "y", "m" or "" (not set) for a tristate option.
func (c Config) State(opt string) string { return c[opt] }

// ParseConfig reads a .config text; gz says whether it is gzip-compressed (/proc/config.gz).
// The text is converted to a string once and the options are substrings of it: a distribution
// config has some 10,000 lines, and a run parses it on every host it checks.
func ParseConfig(b []byte, gz bool) (Config, error) {
	if gz {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("kernel config: %w", err)
		}
		defer zr.Close()
		var buf bytes.Buffer
		// A distribution config is about 250 KB uncompressed, about 5 times its gzip size.
		buf.Grow(min(5*len(b), 16<<20))
		if _, err := io.Copy(&buf, io.LimitReader(zr, 16<<20)); err != nil {
			return nil, fmt.Errorf("kernel config: %w", err)
		}
		b = buf.Bytes()
	}
	text := string(b)
	out := make(Config, strings.Count(text, "\nCONFIG_")+1)
	lines, good := 0, 0
	for rest := text; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if len(line) > 1<<20 {
			// As bufio.Scanner with a 1 MiB buffer refused before: no config line is that long.
			return out, fmt.Errorf("kernel config: %w", bufio.ErrTooLong)
		}
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			if strings.HasPrefix(line, "# CONFIG_") && strings.HasSuffix(line, " is not set") {
				good++
			}
			continue
		}
		lines++
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.HasPrefix(k, "CONFIG_") {
			continue
		}
		good++
		out[k] = strings.Trim(v, `"`)
	}
	if good == 0 {
		return out, fmt.Errorf("kernel config: no CONFIG_ lines in %d line(s)", lines)
	}
	return out, nil
}
