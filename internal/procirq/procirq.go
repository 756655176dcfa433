// Package procirq parses /proc/interrupts into a typed table of numbered interrupts.
package procirq

import (
	"fmt"
	"strconv"
	"strings"
)

// Path is where the kernel shows the interrupt table.
const Path = "/proc/interrupts"

// IRQ is one numbered line of /proc/interrupts: the interrupt number, its total count over all
// CPUs and the action name (the last field: "mlx5_comp3@pci:0000:3b:00.0",
// "irdma-0000:5e:00.0-AEQ").
type IRQ struct {
	Num   int
	Total uint64
	Name  string
}

// Table is the parsed file: the numbered interrupts in file order, and how many numbered lines
// did not parse (too few fields, a count that is not a number).
type Table struct {
	IRQs []IRQ
	Bad  int
}

// ByName groups the interrupts by action name; an action shared by several lines lists all.
func (t Table) ByName() map[string][]IRQ {
	out := make(map[string][]IRQ, len(t.IRQs))
	for _, q := range t.IRQs {
		out[q.Name] = append(out[q.Name], q)
	}
	return out
}

// Parse reads /proc/interrupts (kernel/irq/proc.c show_interrupts): a header of CPU names, then
// "N:" followed by one count per CPU in the header, the chip, the hardware irq and the actions.
// Hand-written because the host view hands over bytes (snapshot-mapped and size-bounded), and
// only numbered lines matter: NMI, LOC, ERR... are not device interrupts. A numbered line without
// a count for every CPU and a name after them is counted in Bad, never taken with a partial total
// or a count for its name, and never fatal; only a missing CPU header is an error.
func Parse(b []byte) (Table, error) {
	var t Table
	lines := strings.Split(string(b), "\n")
	if !strings.Contains(lines[0], "CPU") {
		return t, fmt.Errorf("%s: first line %q is not the CPU header", Path, truncate(lines[0], 60))
	}
	ncpu := len(strings.Fields(lines[0]))
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		num, ok := strings.CutSuffix(f[0], ":")
		n, err := strconv.ParseUint(num, 10, 31) // irq numbers are unsigned ints
		if !ok || err != nil {
			continue
		}
		if len(f) < 1+ncpu+1 {
			t.Bad++
			continue
		}
		q := IRQ{Num: int(n), Name: f[len(f)-1]}
		okCounts := true
		for _, c := range f[1 : 1+ncpu] {
			v, err := strconv.ParseUint(c, 10, 64)
			if err != nil {
				okCounts = false
				break
			}
			q.Total += v
		}
		if !okCounts {
			t.Bad++
			continue
		}
		t.IRQs = append(t.IRQs, q)
	}
	return t, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
