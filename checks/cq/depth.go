package cq

import (
	"context"
	"fmt"
	"sort"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/internal/rdmares"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "cq.depth",
		Description: "CQ depth (cqe) against the work requests that can complete on it (--wr-concurrency, --wr-profile, --raw-contexts)",
		Fault:       "cq-eq",
		Run:         runDepth,
	})
}

// Concurrency says how many work requests can complete on one CQ and where that number came from.
type Concurrency struct {
	N int64
	// Profile is the --wr-profile entry that declared N; empty when --wr-concurrency did.
	Profile string
	// Derived, when set, is where N came from instead: the raw-context layout the capacity of
	// the attached QPs was read with (see Capacity).
	Derived string
	// Cap is the derived capacity (N is its WRs).
	Cap Capacity
}

// Source says where N came from, for evidence. (Built only for findings: a judge pass over
// 50k CQs must not format a string per CQ.)
func (c Concurrency) Source() string {
	if c.Derived != "" {
		cp := c.Cap
		s := fmt.Sprintf("capacity of the %d QP queue(s) attached, from the drivers' raw contexts (%s)", cp.QPs, c.Derived)
		if cp.Upper() {
			s += fmt.Sprintf("; %d of it exact, the rest send queues counted in 64-byte WQE blocks, an upper bound on "+
				"their work requests (a request with inline data or several SGEs takes more than one block)", cp.Exact)
		}
		if cp.SRQ > 0 {
			s += fmt.Sprintf("; receives of %d QP(s) from a shared receive queue not counted (its depth is not in the QP context)", cp.SRQ)
		}
		if cp.RQAmbiguous > 0 {
			s += fmt.Sprintf("; %d hns receive queue(s) read as none (RQ_SHIFT 15 is also a 32768-entry RQ)", cp.RQAmbiguous)
		}
		return s
	}
	if c.Profile != "" {
		return fmt.Sprintf("declared by --wr-profile entry %q", c.Profile)
	}
	return "declared by --wr-concurrency"
}

// Declared decides a CQ's concurrency from what the operator declared: a profile entry for its
// owner wins, else --wr-concurrency, which covers application CQs only. Kernel consumers size
// their own CQs for their own work (ib_core's MAD CQ, nvme-rdma's queues), so an application
// figure applied to them would be a false alarm; a profile can still name them as "[module]".
func Declared(c *nldev.CQ, comm string, flag int64, prof *Profile) (Concurrency, bool) {
	if prof != nil {
		key := comm
		if c.KernName != "" || c.PID == 0 {
			key = "[" + c.KernName + "]"
		}
		if n, ok := prof.Applications[key]; ok {
			return Concurrency{N: n, Profile: key}, true
		}
	}
	if flag > 0 && c.KernName == "" && c.PID != 0 {
		return Concurrency{N: flag}, true
	}
	return Concurrency{}, false
}

type depthKey struct {
	pid  uint32
	kern string
	cqe  uint32
	conc int64
	prof string
	cap  Capacity
	sev  report.Severity
}

// DepthGroup is the undersized CQs of one owner with one depth and one concurrency.
type DepthGroup struct {
	PID         uint32
	Kern        string
	CQE         uint32
	Concurrency Concurrency
	// Severity is critical for a declared concurrency; for a derived capacity a warning when
	// its exact part alone exceeds the CQ, info when only the WQE-block upper bound does.
	Severity report.Severity
	CQNs     []uint32
	Users    uint64
}

// DeviceDepth is one device's CQs judged.
type DeviceDepth struct {
	Total, Judged, Unjudged int
	Under                   []*DepthGroup
	MinCQE, MaxCQE          uint32
}

// JudgeDepth judges every CQ of a device in one pass; comm names a process owner. A declared
// concurrency wins; otherwise, when der holds capacities (--raw-contexts), an application CQ
// is judged against the capacity of the QPs attached to it (kernel consumers are left alone
// for the reason Declared gives).
func JudgeDepth(cqs []nldev.CQ, comm func(pid uint32) string, flag int64, prof *Profile, der *Derived) DeviceDepth {
	r := DeviceDepth{Total: len(cqs)}
	idx := map[depthKey]*DepthGroup{}
	comms := map[uint32]string{}
	for i := range cqs {
		c := &cqs[i]
		if i == 0 || c.CQE < r.MinCQE {
			r.MinCQE = c.CQE
		}
		r.MaxCQE = max(r.MaxCQE, c.CQE)
		name := ""
		if c.KernName == "" && c.PID != 0 && prof != nil {
			n, ok := comms[c.PID]
			if !ok {
				n = comm(c.PID)
				comms[c.PID] = n
			}
			name = n
		}
		conc, ok := Declared(c, name, flag, prof)
		if !ok && der != nil && der.ByCQN != nil && c.KernName == "" && c.PID != 0 {
			// A CQ in the dump that no QP uses has capacity 0; one missing from it was
			// created after the raw dumps and stays unjudged.
			if cp, found := der.ByCQN[c.CQN]; found {
				conc, ok = Concurrency{N: cp.WRs, Derived: der.Layout, Cap: cp}, true
			}
		}
		if !ok {
			r.Unjudged++
			continue
		}
		r.Judged++
		sev := report.Critical
		if conc.Derived != "" {
			// The hardware ring holds cqe+1 completions (mlx5 and hns allocate cqe+1 entries
			// rounded to a power of two and report the rest as cqe).
			depth := int64(c.CQE) + 1
			switch {
			case conc.Cap.Exact > depth:
				sev = report.Warning
			case conc.Cap.WRs > depth:
				sev = report.Info
			default:
				continue
			}
		} else if !Overruns(int64(c.CQE), conc.N) {
			continue
		}
		k := depthKey{c.PID, c.KernName, c.CQE, conc.N, conc.Profile, conc.Cap, sev}
		g := idx[k]
		if g == nil {
			g = &DepthGroup{PID: c.PID, Kern: c.KernName, CQE: c.CQE, Concurrency: conc, Severity: sev}
			idx[k] = g
			r.Under = append(r.Under, g)
		}
		g.CQNs = append(g.CQNs, c.CQN)
		g.Users += c.Users
	}
	sort.Slice(r.Under, func(i, j int) bool {
		a, b := r.Under[i], r.Under[j]
		if a.Kern != b.Kern {
			return a.Kern > b.Kern
		}
		if a.PID != b.PID {
			return a.PID < b.PID
		}
		return a.CQE < b.CQE
	})
	return r
}

// derivedNote says why concurrency was not derived without --raw-contexts: netlink's plain
// dumps give a CQ's users (how many QPs attach) but not each QP's queue sizes, which only the
// admin-only raw driver contexts hold.
const derivedNote = "not derived: netlink's plain dumps say how many QPs use a CQ but not their queue sizes; " +
	"--raw-contexts reads them from the drivers' raw contexts (root; mlx5, hns)"

func runDepth(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	prof := env.Opts.WRProfile
	t := rdmares.CQs(env)
	if t.Err != nil {
		return rdmares.Unavailable(env, t.Err), nil
	}
	if len(t.Devices) == 0 {
		return rdmares.NoDevices(), nil
	}
	owners := rdmares.SharedOwners(env)
	flag := int64(env.Opts.WRConcurrency)
	var derived map[uint32]*Derived
	if env.Opts.RawContexts {
		derived = deriveAll(env)
	}
	var out []engine.Finding
	for _, d := range t.Devices {
		subj := rdmares.DevSubject(env, d.Dev.Name)
		src := rdmares.Source("CQ", d.Dev.Name)
		if d.Err != nil {
			out = append(out, engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.Unknown,
				Summary:  fmt.Sprintf("%s: CQ table could not be read: %v", d.Dev.Name, d.Err),
				Evidence: []report.Evidence{report.Ev("CQ dump", d.Err.Error(), src)}}})
			continue
		}
		der := derived[d.Dev.Index]
		r := JudgeDepth(d.Objs, owners.Comm, flag, prof, der)
		concNote := report.Ev("concurrency", derivedNote, src)
		rawSrc := "netlink:RES_QP_GET_RAW, RES_CQ_GET_RAW " + d.Dev.Name
		if der != nil {
			if der.Reason != "" {
				concNote = report.Ev("raw contexts", "not used: "+der.Reason, rawSrc)
			} else {
				v := fmt.Sprintf("read (%s); application CQs without a declared concurrency are judged "+
					"against the capacity of the QPs attached", der.Layout)
				if der.Skipped > 0 {
					v += fmt.Sprintf("; %d kernel-owned QP(s) whose raw context could not be read or matched were left out (their CQs are not judged)", der.Skipped)
				}
				concNote = report.Ev("raw contexts", v, rawSrc)
			}
		}
		for _, g := range r.Under {
			f := underFinding(env, d.Dev.Name, g, owners.Name(g.PID, g.Kern), src)
			f.Key = d.Dev.Name + "/cq:" + owners.Key(g.PID, g.Kern) + "/" + depthBasis(g)
			out = append(out, f)
		}
		depths := fmt.Sprintf("%d..%d", r.MinCQE, r.MaxCQE)
		if r.Total == 0 {
			depths = "no CQs"
		}
		switch {
		case r.Total == 0:
			out = append(out, engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.OK,
				Summary: d.Dev.Name + ": no CQs to judge", Evidence: []report.Evidence{report.Ev("CQs", "0", src)}}})
		case r.Judged == 0:
			out = append(out, engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.Skipped,
				Summary: fmt.Sprintf("%s: %d CQ(s) not judged: the work-request concurrency is unknown (declare it with "+
					"--wr-concurrency N or --wr-profile FILE)", d.Dev.Name, r.Total),
				Evidence: []report.Evidence{
					report.Ev("CQ depths (cqe)", depths, src),
					concNote,
				}}})
		case len(r.Under) == 0:
			f := engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.OK,
				Summary:  fmt.Sprintf("%s: %d CQ(s) judged, none smaller than the work requests that can complete on it", d.Dev.Name, r.Judged),
				Evidence: []report.Evidence{report.Ev("CQ depths (cqe)", depths, src)}}}
			if flag > 0 || prof != nil {
				f.Evidence = append(f.Evidence, report.Ev("concurrency", declaredSummary(flag, prof), "options"))
			}
			if der != nil {
				f.Evidence = append(f.Evidence, concNote)
			}
			if r.Unjudged > 0 {
				f.Evidence = append(f.Evidence, report.Ev("not judged", fmt.Sprintf("%d CQ(s) without a declared concurrency (kernel "+
					"consumers, or owners missing from the profile)", r.Unjudged), src))
			}
			out = append(out, f)
		}
	}
	return out, nil
}

func declaredSummary(flag int64, prof *Profile) string {
	s := ""
	if flag > 0 {
		s = fmt.Sprintf("--wr-concurrency %d (application CQs)", flag)
	}
	if prof != nil {
		if s != "" {
			s += "; "
		}
		s += fmt.Sprintf("--wr-profile with %d application(s)", len(prof.Applications))
	}
	return s
}

// depthBasis names what a too-small CQ was judged against, to tell apart the findings of one
// owner's CQs in refs without their sizes: the declared concurrency, the QPs' exact capacity, or
// only the WQE-block upper bound of mlx5 send queues (info).
func depthBasis(g *DepthGroup) string {
	switch {
	case g.Concurrency.Derived == "":
		return "declared"
	case g.Severity == report.Info:
		return "capacity-upper-bound"
	}
	return "capacity"
}

func underFinding(env *checks.Env, dev string, g *DepthGroup, owner, src string) engine.Finding {
	subj := rdmares.DevSubject(env, dev)
	subj.Kind = "cq"
	subj.Name = fmt.Sprintf("%s %s cqe %d", dev, owner, g.CQE)
	if g.Concurrency.Derived != "" {
		return underCapacityFinding(subj, dev, g, owner, src)
	}
	rec := Recommended(g.Concurrency.N)
	return engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.Critical,
		Summary: fmt.Sprintf("%s: %d CQ(s) of %s hold %d completions but %d work requests can be outstanding: the CQ "+
			"overruns, completions are lost and the CQ and its QPs go to error", dev, len(g.CQNs), owner, g.CQE, g.Concurrency.N),
		Evidence: []report.Evidence{
			report.EvExp("cqe", fmt.Sprint(g.CQE), fmt.Sprintf("at least %d (recommended %d)", g.Concurrency.N, rec), src),
			report.Ev("concurrency", fmt.Sprintf("%d, %s", g.Concurrency.N, g.Concurrency.Source()), "options"),
			report.Ev("owner", owner, src),
			report.Ev("CQ numbers (cqn)", cqnList(g.CQNs), src),
			report.Ev("users (QP queues attached; a QP using one CQ for send and receive counts twice)", fmt.Sprint(g.Users), src),
			report.Ev("recommended cqe", fmt.Sprint(rec), "rule: next power of two at or above 2 x concurrency"),
		},
		Remediation: fmt.Sprintf("Create these CQs with at least %d entries (ibv_create_cq cqe >= %d: twice the %d outstanding "+
			"work requests, rounded up to a power of two), or cap the application's outstanding work requests at %d. "+
			"If the concurrency declared is wrong, correct --wr-concurrency/--wr-profile.", rec, rec, g.Concurrency.N, g.CQE),
	}}
}

// cqnList formats CQ numbers like the QP lists: sorted, at most 32, then a count.
func cqnList(n []uint32) string { return rdmares.NumList(n) }

// underCapacityFinding is a CQ smaller than what its QPs can hold: an overrun if the application
// fills its queues, which many applications never do (see Capacity), hence a warning; info when
// only the upper bound of WQE-block-counted send queues exceeds it.
func underCapacityFinding(subj report.Subject, dev string, g *DepthGroup, owner, src string) engine.Finding {
	c := g.Concurrency
	n := c.Cap.Exact
	holds := fmt.Sprintf("the %d QP queue(s) attached can hold %d work requests", c.Cap.QPs, n)
	if c.Cap.Upper() {
		holds = fmt.Sprintf("the %d QP queue(s) attached can hold at least %d work requests (up to %d counting send queues "+
			"by WQE block)", c.Cap.QPs, n, c.Cap.WRs)
	}
	if g.Severity == report.Info {
		n = c.Cap.WRs
		holds = fmt.Sprintf("the %d QP queue(s) attached may hold up to %d work requests (send queues counted by 64-byte "+
			"WQE block, an upper bound; the exact part, %d, fits)", c.Cap.QPs, n, c.Cap.Exact)
	}
	// Capacity is already the most that can complete: the CQ needs to hold it, no headroom
	// factor on top (that rule is for a declared concurrency).
	rec := nextPow2(n)
	return engine.Finding{Finding: report.Finding{Subject: subj, Severity: g.Severity,
		Summary: fmt.Sprintf("%s: %d CQ(s) of %s hold %d completions but %s: if the application keeps them full, the CQ "+
			"overruns and it and its QPs go to error", dev, len(g.CQNs), owner, g.CQE+1, holds),
		Evidence: []report.Evidence{
			report.EvExp("cqe", fmt.Sprintf("%d (%d entries)", g.CQE, g.CQE+1), fmt.Sprintf("at least %d entries", n), src),
			report.Ev("capacity", fmt.Sprintf("%d, %s", c.N, c.Source()), rdmares.RawSource("QP", dev)),
			report.Ev("owner", owner, src),
			report.Ev("CQ numbers (cqn)", cqnList(g.CQNs), src),
			report.Ev("recommended cqe", fmt.Sprint(rec), "rule: next power of two at or above the capacity"),
		},
		Remediation: fmt.Sprintf("If the application can have all %d work requests outstanding, create these CQs with at least %d "+
			"entries (ibv_create_cq cqe >= %d). If it limits its outstanding requests itself (UCX, libfabric and most MPI "+
			"transports do), declare that limit with --wr-concurrency or --wr-profile, which is judged instead.", n, rec, rec),
	}}
}

// nextPow2 is the smallest power of two at or above n (n > 0).
func nextPow2(n int64) int64 {
	p := int64(1)
	for p < n {
		p <<= 1
	}
	return p
}
