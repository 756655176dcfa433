package port

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "port.pkeys",
		Description: "InfiniBand partitions: each active port's P_Key table holds the default partition (0xffff), a full membership to talk to peers, the keys the policy expects, and the same keys as the identical ports of the node",
		Fault:       "port-link",
		Run:         runPKeys,
	})
}

// A P_Key is a partition (its low 15 bits) and a membership (bit 15: full, else limited); two
// limited members of a partition cannot talk to each other, and 0x0000/0x8000 is the invalid
// key that marks an empty table entry (IBTA Volume 1, 10.9 Partitioning). The subnet manager
// writes the table when it brings the port up (opensm's partitions.conf "Default=0x7fff,ipoib:
// ALL=full"); the kernel prints each entry as "0x%04x" in ports/N/pkeys/<index>
// (show_port_pkey, drivers/infiniband/core/sysfs.c).
const (
	pkeyFull        = 0x8000 // membership bit
	pkeyBaseMask    = 0x7fff
	pkeyDefaultFull = 0xffff // IB_DEFAULT_PKEY_FULL, include/rdma/ib_mad.h
	pkeyDefaultPart = 0x7fff // IB_DEFAULT_PKEY_PARTIAL
)

// maxPKeyEntries bounds the table read from one port: NodeInfo's PartitionCap, the table's
// size, is a 16-bit count (IBTA Volume 1, NodeInfo); ConnectX has 128 entries. A snapshot
// claiming more is refused rather than read.
const maxPKeyEntries = 1 << 16

// pkeyTable is one port's table: the valid keys by index.
type pkeyTable struct {
	byIndex map[int]uint16
	indices []int // sorted
}

func (t pkeyTable) has(k uint16) bool {
	for _, v := range t.byIndex {
		if v == k {
			return true
		}
	}
	return false
}

// keys lists the distinct valid keys, sorted.
func (t pkeyTable) keys() []uint16 {
	var out []uint16
	for _, i := range t.indices {
		if k := t.byIndex[i]; !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func pkeyString(k uint16) string { return fmt.Sprintf("0x%04x", k) }

func pkeyList(ks []uint16) string {
	if len(ks) == 0 {
		return "none"
	}
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = pkeyString(k)
	}
	return strings.Join(s, ", ")
}

// ParsePKey reads one pkeys/<index> file: "0x%04x".
func ParsePKey(s string) (uint16, error) {
	t := strings.TrimSpace(s)
	h, ok := strings.CutPrefix(t, "0x")
	if !ok || h == "" || len(h) > 4 {
		return 0, fmt.Errorf("%q is not a P_Key (0x%%04x)", t)
	}
	v, err := strconv.ParseUint(h, 16, 16)
	if err != nil {
		return 0, fmt.Errorf("%q is not a P_Key (0x%%04x)", t)
	}
	return uint16(v), nil
}

// readPKeys reads a port's table; fs.ErrNotExist (wrapped) when the port has none.
func readPKeys(h *host.Host, p portRef) (pkeyTable, error) {
	dir := p.file("pkeys")
	names, err := h.ReadDir(dir)
	if err != nil {
		return pkeyTable{}, err
	}
	if len(names) > maxPKeyEntries {
		return pkeyTable{}, fmt.Errorf("%s: %d entries, more than a P_Key table holds (%d)", dir, len(names), maxPKeyEntries)
	}
	t := pkeyTable{byIndex: map[int]uint16{}}
	for _, n := range names {
		i, err := strconv.Atoi(n)
		if err != nil || i < 0 || i >= maxPKeyEntries {
			return pkeyTable{}, fmt.Errorf("%s/%s: not a table index", dir, n)
		}
		s, err := h.ReadString(dir + "/" + n)
		if err != nil {
			return pkeyTable{}, err
		}
		k, err := ParsePKey(s)
		if err != nil {
			return pkeyTable{}, fmt.Errorf("%s/%s: %w", dir, n, err)
		}
		if k&pkeyBaseMask != 0 {
			t.byIndex[i] = k
			t.indices = append(t.indices, i)
		}
	}
	slices.Sort(t.indices)
	return t, nil
}

type pkeyPort struct {
	p   portRef
	t   pkeyTable
	idx int // of the finding in out
}

func runPKeys(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	ports := allPorts(inv)
	if len(ports) == 0 {
		return noPorts(inv), nil
	}
	h := env.Host
	pol := portsPolicy(env.Opts)
	var out []engine.Finding
	var judged []pkeyPort
	for _, p := range ports {
		f := engine.Finding{Finding: report.Finding{Subject: p.subject()}}
		if !p.ib() {
			f.Severity, f.Summary = report.Skipped, p.name()+" is "+orNone(p.port.LinkLayer)+": partitions are InfiniBand's (RoCE carries the default P_Key)"
			out = append(out, f)
			continue
		}
		st, _, err := states(h, p)
		if err != nil {
			f.Severity, f.Summary = report.Unknown, p.name()+": port state unreadable, P_Keys not judged: "+err.Error()
			out = append(out, f)
			continue
		}
		if st.Num != stateActive {
			f.Severity, f.Summary = report.Skipped, fmt.Sprintf("%s is %s: the subnet manager writes the P_Key table when the port becomes ACTIVE (see port.state)", p.name(), st.Name)
			out = append(out, f)
			continue
		}
		t, err := readPKeys(h, p)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !h.Repeatable():
			f.Summary = p.name() + ": the source holds no P_Key table for this port (a tree made of ibstat or ibv_devinfo output has none)"
			out = append(out, f.SkippedBy(report.LimitSource, "record a snapshot with `rdmadiag record` on the host, which reads ports/N/pkeys"))
			continue
		case errors.Is(err, fs.ErrNotExist):
			f.Severity, f.Summary = report.Skipped, p.name()+": the device exposes no P_Key table (no ports/"+strconv.Itoa(p.port.Num)+"/pkeys)"
			out = append(out, f)
			continue
		case err != nil:
			f.Severity, f.Summary = report.Unknown, p.name()+": P_Key table unreadable: "+err.Error()
			out = append(out, f)
			continue
		}
		judgePKeys(env, pol != nil && len(pol.PKeys) > 0, p, t, &f)
		judged = append(judged, pkeyPort{p: p, t: t, idx: len(out)})
		out = append(out, f)
	}
	comparePKeys(judged, out)
	return out, nil
}

// judgePKeys holds one table to the default partition, to a full membership and to the policy.
func judgePKeys(env *checks.Env, withPolicy bool, p portRef, t pkeyTable, f *engine.Finding) {
	src := p.file("pkeys")
	keys := t.keys()
	f.Evidence = append(f.Evidence, report.Ev("P_Keys", pkeyList(keys), src+"/*"))
	idx0 := "empty (0x0000)"
	if k, ok := t.byIndex[0]; ok {
		idx0 = pkeyString(k)
	}
	f.Evidence = append(f.Evidence, report.Ev("P_Key index 0", idx0, src+"/0"))
	var crit, warn, fixes []string
	switch {
	case !t.has(pkeyDefaultFull) && !t.has(pkeyDefaultPart):
		// ib_sa finds the default key's index for its queries to the SA (update_sm_ah in
		// drivers/infiniband/core/sa_query.c: "Couldn't find index for default PKey").
		crit = append(crit, "no default partition key (0xffff or 0x7fff): path record queries to the subnet administrator, which rdma_cm, IPoIB and MPI need, cannot be sent")
		fixes = append(fixes, "Make the subnet manager give this port the default partition (opensm partitions.conf: Default=0x7fff,ipoib : ALL=full;), then check the port's table again.")
	case !t.has(pkeyDefaultFull) && !slices.ContainsFunc(keys, func(k uint16) bool { return k&pkeyFull != 0 }):
		warn = append(warn, "a limited member of every partition it is in (no full-member key): it can talk to full members only (the subnet manager, storage), not to other compute ports")
		fixes = append(fixes, "If this port must talk to peers, make it a full member of their partition in the subnet manager's partitions.conf (ALL=full, or its port GUID with =full).")
	}
	if _, ok := t.byIndex[0]; !ok {
		// Most verbs applications use P_Key index 0 unless told (perftest's --pkey_index default
		// 0; NCCL_IB_PKEY, default 0).
		warn = append(warn, "its P_Key index 0 is empty: applications that use index 0 (perftest, NCCL by default) cannot connect")
		fixes = append(fixes, "Have the subnet manager put the default partition at index 0 (opensm does unless partitions.conf is broken), or set the applications' P_Key index (NCCL_IB_PKEY).")
	}
	if withPolicy {
		pol := portsPolicy(env.Opts)
		for i, want := range pol.PKeys {
			ev := report.EvExp("policy P_Key", presentOr(t, want), pkeyString(want), fmt.Sprintf("policy %s ports.pkeys[%d]", env.Opts.PolicyFile, i))
			f.Evidence = append(f.Evidence, ev)
			if t.has(want) {
				continue
			}
			other := want ^ pkeyFull
			if t.has(other) {
				crit = append(crit, fmt.Sprintf("holds %s where the policy expects %s: %s membership of partition 0x%04x", pkeyString(other), pkeyString(want), membership(other), want&pkeyBaseMask))
			} else {
				crit = append(crit, fmt.Sprintf("lacks the P_Key %s the policy expects: traffic in that partition cannot use this port", pkeyString(want)))
			}
			fixes = append(fixes, fmt.Sprintf("Add this port (its port GUID, or ALL) to partition 0x%04x with %s membership in the subnet manager's partitions.conf, or correct the policy.", want&pkeyBaseMask, membership(want)))
		}
	}
	switch {
	case len(crit) > 0:
		f.Severity = report.Critical
		f.Summary = p.name() + ": " + strings.Join(append(crit, warn...), "; ")
	case len(warn) > 0:
		f.Severity = report.Warning
		f.Summary = p.name() + ": " + strings.Join(warn, "; ")
	default:
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s is in the default partition and holds %d P_Key(s): %s", p.name(), len(keys), pkeyList(keys))
	}
	if len(fixes) > 0 {
		f.Remediation = strings.Join(fixes, " ")
	}
	if f.Severity.Problem() {
		f.Action = report.ActionFixConfiguration // the subnet manager's partitions, not the hardware
	}
}

func membership(k uint16) string {
	if k&pkeyFull != 0 {
		return "full"
	}
	return "limited"
}

func presentOr(t pkeyTable, k uint16) string {
	if t.has(k) {
		return pkeyString(k)
	}
	return "absent"
}

// comparePKeys holds each port to the identical ports of the node (peerKey): rails of one
// GPU node are configured alike by the subnet manager, so a key some hold and one lacks is a
// port left out of a partition (docs.verda.com's cluster validation checks "same P_Key" on every
// rail). A port that is already critical keeps its judgement; the difference is added.
func comparePKeys(ports []pkeyPort, out []engine.Finding) {
	for _, g := range groupsOf(ports, func(pp pkeyPort) string { return peerKey(pp.p) }) {
		for _, pp := range g {
			var missing []string
			for _, key := range unionKeys(g) {
				if pp.t.has(key) {
					continue
				}
				var holders []string
				for _, o := range g {
					if o.t.has(key) {
						holders = append(holders, o.p.name())
					}
				}
				// A key most identical ports lack is one port's extra, not the others' gap:
				// only a key held by more than half of the group is missing here.
				if 2*len(holders) > len(g) {
					missing = append(missing, fmt.Sprintf("%s (held by %s)", pkeyString(key), strings.Join(holders, ", ")))
				}
			}
			if len(missing) == 0 {
				continue
			}
			why := fmt.Sprintf("lacks P_Key %s that most of the %d identical ports of this node hold: it is outside a partition its peers share", strings.Join(missing, "; "), len(g))
			differsFromPeers(&out[pp.idx], pp.p, "identical ports' P_Keys", why, "ports/N/pkeys of identical cards",
				"Add this port to the same partitions as its peers in the subnet manager's partitions.conf (by port GUID, or ALL).")
		}
	}
}

func unionKeys(g []pkeyPort) []uint16 {
	var out []uint16
	for _, pp := range g {
		for _, k := range pp.t.keys() {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}
