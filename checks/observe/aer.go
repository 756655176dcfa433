package observe

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
)

// AERFiles are a PCI function's AER counter files (drivers/pci/pcie/aer.c, aer_stats_attrs), in
// severity order, with the kind each counts.
var AERFiles = []struct{ File, Kind string }{
	{"aer_dev_fatal", "fatal"},
	{"aer_dev_nonfatal", "non-fatal"},
	{"aer_dev_correctable", "correctable"},
}

// aerRootFiles are a root port's totals of what the functions below it reported
// (aer_rootport_total_err_*, the same file).
var aerRootFiles = []struct{ File, Kind string }{
	{"aer_rootport_total_err_fatal", "fatal"},
	{"aer_rootport_total_err_nonfatal", "non-fatal"},
	{"aer_rootport_total_err_cor", "correctable"},
}

// AERCounters is one reading of a PCI function's AER counters.
type AERCounters struct {
	// Dir is the function's sysfs directory the files were read in.
	Dir string
	// Totals by kind ("fatal", "non-fatal", "correctable"); Bits the non-zero bits of each, as
	// "Name=n" in file order.
	Totals map[string]uint64
	Bits   map[string][]string
	// Root holds aer_rootport_total_err_* by kind (root ports only).
	Root map[string]uint64
	// Present is false when the function has no aer_dev_* file at all (no AER capability, or a
	// kernel without CONFIG_PCIEAER).
	Present bool
	// Errs are the files that could not be read or parsed, each naming its path.
	Errs []error
}

// aerReads keeps each function's first reading of the run, one read per function even when
// several checks or devices ask.
type aerReads struct {
	h  *host.Host
	mu sync.Mutex
	m  map[string]func() AERCounters
}

var aerFact = checks.NewFact("AER counters", func(env *checks.Env) *aerReads {
	return &aerReads{h: env.Host, m: map[string]func() AERCounters{}}
})

// AER returns the AER counters of the PCI function whose sysfs directory is dir, as first read
// in this run. A check that compares two readings (--interval) takes its second with ReadAER.
func AER(env *checks.Env, dir string) AERCounters {
	r := aerFact.Get(env)
	r.mu.Lock()
	f := r.m[dir]
	if f == nil {
		f = sync.OnceValue(func() AERCounters { return ReadAER(r.h, dir) })
		r.m[dir] = f
	}
	r.mu.Unlock()
	return f()
}

// ReadAER reads a function's AER counters now, without sharing the reading.
func ReadAER(h *host.Host, dir string) AERCounters {
	s := AERCounters{Dir: dir, Totals: map[string]uint64{}, Bits: map[string][]string{}, Root: map[string]uint64{}}
	for _, a := range AERFiles {
		p := path.Join(dir, a.File)
		b, err := h.ReadFile(p)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				s.Errs = append(s.Errs, err)
			}
			continue
		}
		s.Present = true
		c, order, err := ParseAER(b)
		if err != nil {
			s.Errs = append(s.Errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		s.Totals[a.Kind] = c.Total
		s.Bits[a.Kind] = c.NonZero(order)
	}
	for _, k := range aerRootFiles {
		p := path.Join(dir, k.File)
		v, err := h.ReadString(p)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				s.Errs = append(s.Errs, err)
			}
			continue
		}
		c, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			s.Errs = append(s.Errs, fmt.Errorf("%s: counter %q: not an unsigned number", p, v))
			continue
		}
		s.Root[k.Kind] = c
	}
	return s
}

// AERCounts is one aer_dev_* file: each named bit's count and the TOTAL_ERR_* line.
type AERCounts struct {
	Bits  map[string]uint64
	Total uint64
	// HasTotal is false on files without a TOTAL_ line; Total is then the sum of the bits.
	HasTotal bool
}

// NonZero lists the bits with a count, as "Name=n", in file order.
func (a AERCounts) NonZero(order []string) []string {
	var out []string
	for _, n := range order {
		if v := a.Bits[n]; v > 0 {
			out = append(out, fmt.Sprintf("%s=%d", n, v))
		}
	}
	return out
}

// ParseAER reads an aer_dev_correctable/nonfatal/fatal file: "Name count" lines then
// "TOTAL_ERR_<kind> count" (drivers/pci/pcie/aer.c). Bit names vary between kernels, so any name
// is accepted. It also returns the names in file order.
func ParseAER(b []byte) (AERCounts, []string, error) {
	c := AERCounts{Bits: map[string]uint64{}}
	var order []string
	var sum uint64
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 64*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return c, order, fmt.Errorf("AER counter line %q: want \"<name> <count>\"", line)
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return c, order, fmt.Errorf("AER counter line %q: count is not a number", line)
		}
		if strings.HasPrefix(f[0], "TOTAL_ERR_") {
			c.Total, c.HasTotal = v, true
			continue
		}
		if _, dup := c.Bits[f[0]]; !dup {
			order = append(order, f[0])
		}
		c.Bits[f[0]] = v
		sum += v
	}
	if err := sc.Err(); err != nil {
		return c, order, fmt.Errorf("AER counters: %w", err)
	}
	if len(c.Bits) == 0 && !c.HasTotal {
		return c, order, fmt.Errorf("AER counters: no counter lines")
	}
	if !c.HasTotal {
		c.Total = sum
	}
	return c, order, nil
}
