// Command labqp holds RDMA queue pairs in chosen states so that the qp and cq checks can be seen
// (and fixtures recorded) on a real kernel: in the lab guest it creates RC QPs on one device
// port, connects some to themselves (RTS), moves some to ERR, leaves some in INIT, all on one CQ
// of a chosen depth, then writes a ready file and sleeps until killed. With -compare it instead
// times a command against another (the lab benchmark of rdmadiag against rdma res show).
//
//	labqp -dev rxe0 -rts 4 -err 3 -init 1 -cq-depth 128 -ready /tmp/ready &
//	labqp -compare -runs 5 -a 'rdma res show qp -j' -b 'rdmadiag check --only qp,cq --format json'
package main

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

func main() {
	dev := flag.String("dev", "rxe0", "RDMA device")
	port := flag.Int("port", 1, "port")
	gidIndex := flag.Int("gid-index", 1, "GID table index used to connect QPs to themselves (RoCE v2 on the lab's rxe0)")
	nRTS := flag.Int("rts", 0, "QPs connected to themselves (RTS)")
	nErr := flag.Int("err", 0, "QPs moved to ERR after reaching RTS")
	nInit := flag.Int("init", 0, "QPs left in INIT")
	nReset := flag.Int("reset", 0, "QPs left in RESET (cheap: use this for exhaustion)")
	cqDepth := flag.Int("cq-depth", 128, "depth of the one CQ every QP completes into")
	ready := flag.String("ready", "", "file written once every QP is in place")
	overrunN := flag.Int("overrun", 0, "also overrun a CQ: N receives and N signaled sends on one self-connected QP into a CQ of -overrun-cq entries, never polled")
	overrunCQ := flag.Int("overrun-cq", 1, "depth of the CQ that -overrun overruns")
	compare := flag.Bool("compare", false, "time command -a against command -b instead")
	a := flag.String("a", "", "-compare: baseline command (split on spaces, no shell)")
	b := flag.String("b", "", "-compare: measured command")
	runs := flag.Int("runs", 5, "-compare: runs of each command, interleaved")
	flag.Parse()
	if *compare {
		if err := runCompare(*a, *b, *runs); err != nil {
			fmt.Fprintln(os.Stderr, "labqp:", err)
			os.Exit(1)
		}
		return
	}
	h, err := hold(*dev, *port, *gidIndex, *nRTS, *nErr, *nInit, *nReset, *cqDepth)
	if err != nil {
		fmt.Fprintln(os.Stderr, "labqp:", err)
		os.Exit(1)
	}
	if *overrunN > 0 {
		state, err := h.overrun(uint8(*port), h.pattr, h.gid, uint8(*gidIndex), *overrunN, *overrunCQ)
		if err != nil {
			h.close()
			fmt.Fprintln(os.Stderr, "labqp: overrun:", err)
			os.Exit(1)
		}
		fmt.Printf("labqp: overran a CQ of %d entries with %d receives and %d sends; QP now %s\n", *overrunCQ, *overrunN, *overrunN, state)
	}
	fmt.Printf("labqp: pid %d holds %d QPs on %s/%d (cq depth %d granted %d)\n", os.Getpid(), len(h.qps), *dev, *port, *cqDepth, h.cq.CQE())
	if *ready != "" {
		if err := os.WriteFile(*ready, []byte(fmt.Sprintln(os.Getpid())), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "labqp:", err)
			os.Exit(1)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	h.close()
}

type held struct {
	ctx      *verbs.Context
	pd       *verbs.PD
	cq       *verbs.CQ
	qps      []*verbs.QP
	extraCQs []*verbs.CQ
	mrs      []*verbs.MR
	mems     []*verbs.Mem
	pattr    verbs.PortAttr
	gid      [16]byte
}

func (h *held) close() {
	for i := len(h.qps) - 1; i >= 0; i-- {
		_ = h.qps[i].Destroy()
	}
	for _, mr := range h.mrs {
		_ = mr.Dereg()
	}
	for _, m := range h.mems {
		_ = m.Free()
	}
	for _, cq := range h.extraCQs {
		_ = cq.Destroy()
	}
	if h.cq != nil {
		_ = h.cq.Destroy()
	}
	if h.pd != nil {
		_ = h.pd.Dealloc()
	}
	_ = h.ctx.Close()
}

func hold(dev string, port, gidIndex, nRTS, nErr, nInit, nReset, cqDepth int) (*held, error) {
	lib, err := verbs.Load()
	if err != nil {
		return nil, err
	}
	ctx, err := lib.OpenDevice(dev)
	if err != nil {
		return nil, err
	}
	h := &held{ctx: ctx}
	fail := func(err error) (*held, error) { h.close(); return nil, err }
	pattr, err := ctx.QueryPort(uint8(port))
	if err != nil {
		return fail(err)
	}
	gid, err := readGID(dev, port, gidIndex)
	if err != nil {
		return fail(err)
	}
	h.pattr, h.gid = pattr, gid
	if h.pd, err = ctx.AllocPD(); err != nil {
		return fail(err)
	}
	if h.cq, err = ctx.CreateCQ(cqDepth); err != nil {
		return fail(err)
	}
	// One work request each way: the QPs only have to exist in a state, and small queues let the
	// exhaustion scenario create tens of thousands of them.
	qcap := verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}
	total := nRTS + nErr + nInit + nReset
	for i := range total {
		qp, _, err := h.pd.CreateQP(verbs.QPInitAttr{SendCQ: h.cq.Addr(), RecvCQ: h.cq.Addr(), Cap: qcap, QPType: verbs.QPTypeRC})
		if err != nil {
			return fail(fmt.Errorf("QP %d of %d: %w", i+1, total, err))
		}
		h.qps = append(h.qps, qp)
		switch {
		case i < nRTS+nErr:
			if err := connectSelf(qp, uint8(port), pattr, gid, uint8(gidIndex)); err != nil {
				return fail(err)
			}
			if i >= nRTS {
				// Any state may move to ERR (IBTA 10.3.1); this is what a fatal completion error
				// does to a QP, minus the error.
				if err := qp.Modify(verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState, "ibv_modify_qp(ERR)"); err != nil {
					return fail(err)
				}
			}
		case i < nRTS+nErr+nInit:
			if err := toInit(qp, uint8(port)); err != nil {
				return fail(err)
			}
		}
	}
	return h, nil
}

func readGID(dev string, port, idx int) ([16]byte, error) {
	var g [16]byte
	p := fmt.Sprintf("/sys/class/infiniband/%s/ports/%d/gids/%d", dev, port, idx)
	b, err := os.ReadFile(p)
	if err != nil {
		return g, err
	}
	raw, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(string(b)), ":", ""))
	if err != nil || len(raw) != 16 {
		return g, fmt.Errorf("%s: %q is not a GID", p, b)
	}
	copy(g[:], raw)
	if g == ([16]byte{}) {
		return g, fmt.Errorf("%s is empty: pick a populated -gid-index", p)
	}
	return g, nil
}

func toInit(qp *verbs.QP, port uint8) error {
	at := verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: port,
		QPAccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead}
	return qp.Modify(at, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags, "ibv_modify_qp(INIT)")
}

// connectSelf is rc_pingpong's RESET->INIT->RTR->RTS with the QP as its own remote end.
func connectSelf(qp *verbs.QP, port uint8, p verbs.PortAttr, gid [16]byte, gidIndex uint8) error {
	if err := toInit(qp, port); err != nil {
		return err
	}
	rtr := verbs.QPAttr{QPState: verbs.QPStateRTR, PathMTU: p.ActiveMTU, DestQPNum: qp.Num(), RQPSN: 0, MaxDestRdAtomic: 1, MinRNRTimer: 12}
	rtr.AH.PortNum = port
	rtr.AH.IsGlobal = 1
	rtr.AH.GRH.DGID = gid
	rtr.AH.GRH.SGIDIndex = gidIndex
	rtr.AH.GRH.HopLimit = 64
	if err := qp.Modify(rtr, verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|verbs.QPAttrRQPSN|
		verbs.QPAttrMaxDestRdAtom|verbs.QPAttrMinRNRTimer, "ibv_modify_qp(RTR)"); err != nil {
		return err
	}
	rts := verbs.QPAttr{QPState: verbs.QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 6, SQPSN: 0, MaxRdAtomic: 1}
	return qp.Modify(rts, verbs.QPAttrState|verbs.QPAttrTimeout|verbs.QPAttrRetryCnt|verbs.QPAttrRNRRetry|
		verbs.QPAttrSQPSN|verbs.QPAttrMaxQPRdAtomic, "ibv_modify_qp(RTS)")
}

// sample is one timed run of a command.
type sample struct {
	Wall      time.Duration `json:"wall_ns"`
	MaxRSSKiB int64         `json:"max_rss_kib"`
	Bytes     int           `json:"stdout_bytes"`
}

type summary struct {
	Command      string   `json:"command"`
	Runs         []sample `json:"runs"`
	MedianWallMS float64  `json:"median_wall_ms"`
	MaxRSSKiB    int64    `json:"max_rss_kib"`
}

func runCompare(a, b string, runs int) error {
	if a == "" || b == "" || runs < 1 {
		return fmt.Errorf("-compare needs -a, -b and -runs >= 1")
	}
	sa, sb := summary{Command: a}, summary{Command: b}
	// Interleaved, so that a change in the machine's load affects both alike.
	for range runs {
		for _, s := range []*summary{&sa, &sb} {
			r, err := timeOne(s.Command)
			if err != nil {
				return err
			}
			s.Runs = append(s.Runs, r)
		}
	}
	for _, s := range []*summary{&sa, &sb} {
		ws := make([]time.Duration, len(s.Runs))
		for i, r := range s.Runs {
			ws[i] = r.Wall
			s.MaxRSSKiB = max(s.MaxRSSKiB, r.MaxRSSKiB)
		}
		sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
		s.MedianWallMS = float64(ws[len(ws)/2].Microseconds()) / 1000
	}
	out := map[string]any{"baseline": sa, "measured": sb,
		"wall_ratio":   sb.MedianWallMS / sa.MedianWallMS,
		"maxrss_ratio": float64(sb.MaxRSSKiB) / float64(sa.MaxRSSKiB)}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func timeOne(command string) (sample, error) {
	// Run directly, not through sh, so that the rusage is the command's own.
	f := strings.Fields(command)
	cmd := exec.Command(f[0], f[1:]...)
	var n countWriter
	cmd.Stdout = &n
	cmd.Stderr = os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		// rdmadiag exits non-zero when it finds problems; that is a result, not a failed run.
		if _, ok := err.(*exec.ExitError); !ok {
			return sample{}, fmt.Errorf("%s: %w", command, err)
		}
	}
	s := sample{Wall: wall, Bytes: int(n)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.MaxRSSKiB = ru.Maxrss
	}
	return s, nil
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
