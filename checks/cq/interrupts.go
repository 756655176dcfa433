package cq

import (
	"fmt"
	"strconv"
	"strings"
)

// IRQ is one line of /proc/interrupts: the interrupt number, its total count over all CPUs and
// the action name (the last field: "mlx5_comp3@pci:0000:3b:00.0", "irdma-0000:5e:00.0-AEQ").
type IRQ struct {
	Num   int
	Total uint64
	Name  string
}

// ParseInterrupts reads /proc/interrupts (kernel/irq/proc.c show_interrupts): a header of CPU
// names, then "N:" followed by one count per CPU, the chip, the hardware irq and the actions.
// Hand-written because the host view hands over bytes (snapshot-mapped and size-bounded), and
// only numbered lines matter; lines that do not parse are counted, never fatal.
func ParseInterrupts(b []byte) (irqs []IRQ, bad int, err error) {
	lines := strings.Split(string(b), "\n")
	if len(lines) == 0 || !strings.Contains(lines[0], "CPU") {
		return nil, 0, fmt.Errorf("/proc/interrupts: first line %q is not the CPU header", first(lines))
	}
	ncpu := len(strings.Fields(lines[0]))
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		num, ok := strings.CutSuffix(f[0], ":")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			continue // NMI, LOC, ERR... are not device interrupts
		}
		if len(f) < 1+ncpu+1 {
			bad++
			continue
		}
		q := IRQ{Num: n, Name: f[len(f)-1]}
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
			bad++
			continue
		}
		irqs = append(irqs, q)
	}
	return irqs, bad, nil
}

func first(ls []string) string {
	if len(ls) == 0 {
		return ""
	}
	if len(ls[0]) > 60 {
		return ls[0][:60]
	}
	return ls[0]
}
