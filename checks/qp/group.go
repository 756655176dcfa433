// Package qp holds the queue-pair layer checks over RDMA netlink: QPs in error, QP exhaustion
// against the device's max_qp, and (with --interval) QPs stuck before RTS.
package qp

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks/internal/rdmares"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
)

// groupKey is what the state findings are grouped by: rdma res show's link, owner and state.
type groupKey struct {
	port  uint32
	pid   uint32
	kern  string
	state uint8
}

// Group is the QPs of one device port, one owner and one state.
type Group struct {
	Port  uint32
	PID   uint32
	Kern  string // kernel owner; empty for a process
	State uint8
	Types map[uint8]int
	QPNs  []uint32
}

// Kernel reports whether a kernel module owns the QPs.
func (g *Group) Kernel() bool { return g.Kern != "" || g.PID == 0 }

// Census is one device's QPs by state, with the groups of those in a state of interest.
type Census struct {
	Total   int
	ByState [8]int // index = state, 7 = anything unknown
	Groups  []*Group
}

// Take counts qps and groups those whose state is selected, in one pass without per-QP
// allocation: a host with 100k QPs is judged in the time the dump takes to decode.
func Take(qps []nldev.QP, selected func(state uint8) bool) Census {
	var c Census
	c.Total = len(qps)
	idx := map[groupKey]*Group{}
	for i := range qps {
		q := &qps[i]
		s := q.State
		if s > nldev.QPStateErr {
			c.ByState[7]++
		} else {
			c.ByState[s]++
		}
		if !selected(s) {
			continue
		}
		k := groupKey{port: q.Port, pid: q.PID, kern: q.KernName, state: s}
		g := idx[k]
		if g == nil {
			g = &Group{Port: q.Port, PID: q.PID, Kern: q.KernName, State: s, Types: map[uint8]int{}}
			idx[k] = g
			c.Groups = append(c.Groups, g)
		}
		g.Types[q.Type]++
		g.QPNs = append(g.QPNs, q.LQPN)
	}
	sort.Slice(c.Groups, func(i, j int) bool {
		a, b := c.Groups[i], c.Groups[j]
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		if a.Kernel() != b.Kernel() {
			return a.Kernel()
		}
		if a.Kern != b.Kern {
			return a.Kern < b.Kern
		}
		if a.PID != b.PID {
			return a.PID < b.PID
		}
		return a.State < b.State
	})
	return c
}

// StateCounts formats the non-zero state counts in state order: "RTS 2, ERR 5".
func (c *Census) StateCounts() string {
	var parts []string
	for s, n := range c.ByState {
		if n == 0 {
			continue
		}
		name := "UNKNOWN"
		if s < 7 {
			name = nldev.QPStateName(uint8(s))
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, n))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// QPNList formats QP numbers as rdma res show does (decimal), sorted, at most 32.
func QPNList(qpns []uint32) string { return rdmares.NumList(qpns) }

// TypeCounts formats a group's QP types: "RC 4, UD 1".
func (g *Group) TypeCounts() string {
	ts := make([]int, 0, len(g.Types))
	for t := range g.Types {
		ts = append(ts, int(t))
	}
	sort.Ints(ts)
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("%s %d", nldev.QPTypeName(uint8(t)), g.Types[uint8(t)])
	}
	return strings.Join(parts, ", ")
}
