package cq

import (
	"context"
	"fmt"
	"sort"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/qp/rdmares"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/report"
)

func init() {
	checks.Register(checks.Check{
		ID:          "cq.depth",
		Description: "CQ depth (cqe) against the work requests that can complete on it (--wr-concurrency, --wr-profile)",
		Fault:       "cq-eq",
		Run:         runDepth,
	})
}

// Concurrency says how many work requests can complete on one CQ and where that number came from.
type Concurrency struct {
	N int64
	// Profile is the --wr-profile entry that declared N; empty when --wr-concurrency did.
	Profile string
}

// Source says where N came from, for evidence. (Built only for findings: a judge pass over
// 50k CQs must not format a string per CQ.)
func (c Concurrency) Source() string {
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
}

// DepthGroup is the undersized CQs of one owner with one depth and one concurrency.
type DepthGroup struct {
	PID         uint32
	Kern        string
	CQE         uint32
	Concurrency Concurrency
	CQNs        []uint32
	Users       uint64
}

// DeviceDepth is one device's CQs judged.
type DeviceDepth struct {
	Total, Judged, Unjudged int
	Under                   []*DepthGroup
	MinCQE, MaxCQE          uint32
}

// JudgeDepth judges every CQ of a device in one pass; comm names a process owner.
func JudgeDepth(cqs []nldev.CQ, comm func(pid uint32) string, flag int64, prof *Profile) DeviceDepth {
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
		if !ok {
			r.Unjudged++
			continue
		}
		r.Judged++
		if !Overruns(int64(c.CQE), conc.N) {
			continue
		}
		k := depthKey{c.PID, c.KernName, c.CQE, conc.N, conc.Profile}
		g := idx[k]
		if g == nil {
			g = &DepthGroup{PID: c.PID, Kern: c.KernName, CQE: c.CQE, Concurrency: conc}
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

// derivedNote says why concurrency is never derived here: netlink gives a CQ's users (how many
// QPs attach) but not each QP's max_send_wr/max_recv_wr, which only the admin-only raw driver
// contexts (RES_QP_GET_RAW) hold, in a per-driver layout this version does not decode.
const derivedNote = "not derivable: netlink reports how many QPs use a CQ but not their max_send_wr/max_recv_wr " +
	"(only raw driver contexts have them, not decoded here)"

func runDepth(_ context.Context, env *checks.Env) ([]report.Finding, error) {
	var prof *Profile
	if env.Opts.WRProfile != "" {
		p, err := LoadProfile(env.Opts.WRProfile)
		if err != nil {
			return nil, fmt.Errorf("--wr-profile: %w", err)
		}
		prof = p
	}
	t := rdmares.CQs(env)
	if t.Err != nil {
		return rdmares.Unavailable(env, t.Err), nil
	}
	if len(t.Devices) == 0 {
		return rdmares.NoDevices(), nil
	}
	owners := rdmares.SharedOwners(env)
	flag := int64(env.Opts.WRConcurrency)
	var out []report.Finding
	for _, d := range t.Devices {
		subj := rdmares.DevSubject(env, d.Dev.Name)
		src := rdmares.Source("CQ", d.Dev.Name)
		if d.Err != nil {
			out = append(out, report.Finding{Subject: subj, Severity: report.Unknown,
				Summary:  fmt.Sprintf("%s: CQ table could not be read: %v", d.Dev.Name, d.Err),
				Evidence: []report.Evidence{report.Ev("CQ dump", d.Err.Error(), src)}})
			continue
		}
		r := JudgeDepth(d.Objs, owners.Comm, flag, prof)
		for _, g := range r.Under {
			out = append(out, underFinding(env, d.Dev.Name, g, owners.Name(g.PID, g.Kern), src))
		}
		depths := fmt.Sprintf("%d..%d", r.MinCQE, r.MaxCQE)
		if r.Total == 0 {
			depths = "no CQs"
		}
		switch {
		case r.Total == 0:
			out = append(out, report.Finding{Subject: subj, Severity: report.OK,
				Summary: d.Dev.Name + ": no CQs to judge", Evidence: []report.Evidence{report.Ev("CQs", "0", src)}})
		case r.Judged == 0:
			out = append(out, report.Finding{Subject: subj, Severity: report.Skipped,
				Summary: fmt.Sprintf("%s: %d CQ(s) not judged: the work-request concurrency is unknown (declare it with "+
					"--wr-concurrency N or --wr-profile FILE)", d.Dev.Name, r.Total),
				Evidence: []report.Evidence{
					report.Ev("CQ depths (cqe)", depths, src),
					report.Ev("concurrency", derivedNote, src),
				}})
		case len(r.Under) == 0:
			f := report.Finding{Subject: subj, Severity: report.OK,
				Summary: fmt.Sprintf("%s: %d CQ(s) judged, none smaller than its declared concurrency", d.Dev.Name, r.Judged),
				Evidence: []report.Evidence{report.Ev("CQ depths (cqe)", depths, src),
					report.Ev("concurrency", declaredSummary(flag, prof), "options")}}
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

func underFinding(env *checks.Env, dev string, g *DepthGroup, owner, src string) report.Finding {
	subj := rdmares.DevSubject(env, dev)
	subj.Kind = "cq"
	subj.Name = fmt.Sprintf("%s %s cqe %d", dev, owner, g.CQE)
	rec := Recommended(g.Concurrency.N)
	return report.Finding{Subject: subj, Severity: report.Critical,
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
	}
}

// cqnList formats CQ numbers like the QP lists: sorted, at most 32, then a count.
func cqnList(n []uint32) string { return rdmares.NumList(n) }
