package probe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

// The pair probe: one RC QP on each of two hosts, connected across the fabric. The ends
// exchange what ib_write_bw's ends exchange over their TCP side channel (perftest's
// ctx_hand_shake in src/perftest_communication.c: LID, QPN, PSN, GID, the buffer's address and
// rkey), then each writes to the other in turn, timed as ib_write_bw times it, and checks what
// arrived. Each step's failure is reported at its own stage, so that a refused RTR (an address
// the fabric cannot route), a retry-exceeded completion (a lossy or broken path) and a remote
// access error are told apart.

// Stages of the pair probe besides the shared ones.
const (
	StageSideChannel Stage = "side_channel"    // the TCP connection to the peer
	StageExchange    Stage = "exchange"        // the endpoints' addresses
	StagePairWrite   Stage = "pair_write"      // this end's timed RDMA WRITEs to the peer
	StagePairPeer    Stage = "pair_peer_write" // the peer's writes to this end
)

// PairPort is the default TCP port of the side channel: perftest's default (18515).
const PairPort = 18515

// maxChannelLine bounds one message of the side channel: a peer that sends more is not a peer.
const maxChannelLine = 64 << 10

// Endpoint is what one end tells the other.
type Endpoint struct {
	Host      string  `json:"host,omitempty"`
	Device    string  `json:"device"`
	Port      int     `json:"port"`
	LinkLayer string  `json:"link_layer"`
	LID       uint16  `json:"lid,omitempty"`
	GID       string  `json:"gid,omitempty"`
	GIDType   string  `json:"gid_type,omitempty"`
	QPN       uint32  `json:"qpn"`
	PSN       uint32  `json:"psn"`
	MTU       int     `json:"mtu"` // active MTU, bytes
	RateGbps  float64 `json:"rate_gbps"`
	Addr      uint64  `json:"addr"`
	RKey      uint32  `json:"rkey"`
	Size      int     `json:"size"`
	gidRaw    [16]byte
	mtuCode   uint32
}

// Direction is one end's timed writes to the other.
type Direction struct {
	From      string        `json:"from"`
	To        string        `json:"to"`
	MsgSize   int           `json:"msg_size"`
	Iters     int           `json:"iters"`
	Bytes     int64         `json:"bytes"`
	Duration  time.Duration `json:"duration_ns"`
	Gbps      float64       `json:"gbit_per_s"`
	MiBps     float64       `json:"mib_per_s"` // as ib_write_bw's MB/sec
	Truncated bool          `json:"truncated"`
	LatIters  int           `json:"lat_iters"`
	LatMedian time.Duration `json:"lat_median_ns"`
	LatP99    time.Duration `json:"lat_p99_ns"`
	// PayloadOK: the receiving end found the writer's stamp intact.
	PayloadOK bool        `json:"payload_ok"`
	Error     string      `json:"error,omitempty"`
	Failed    *Completion `json:"failed_completion,omitempty"`
}

// PairResult is the pair probe's outcome, seen from one end.
type PairResult struct {
	Result
	Role string `json:"role"` // "listen" or "connect"
	Peer string `json:"peer"`
	// Host and Round name this end and the plan's round it ran in (0: not from a plan), in
	// every result: an end that fails before the exchange (its port down, no peer) still
	// says who it is, so that fleet --pairs can hold it against the plan.
	Host        string       `json:"host,omitempty"`
	Round       int          `json:"round,omitempty"`
	Local       *Endpoint    `json:"local,omitempty"`
	Remote      *Endpoint    `json:"remote,omitempty"`
	PathMTU     int          `json:"path_mtu,omitempty"`
	LinkGbps    float64      `json:"link_gbps,omitempty"` // the slower port's rate
	Transitions []Transition `json:"transitions,omitempty"`
	Out         *Direction   `json:"out,omitempty"` // this end's writes to the peer
	In          *Direction   `json:"in,omitempty"`  // the peer's writes here, as it measured them
	// Warnings are what passed but is not as it should be (the two ends' MTUs differ).
	Warnings []string `json:"warnings,omitempty"`
}

// PairOptions is the pair probe's settings.
type PairOptions struct {
	Options
	// Listen: accept one peer on this listener; else Peer is dialled.
	Listener net.Listener
	Peer     string
	// Host names this end in the result (the hostname).
	Host string
	// Round is the plan's round this probe is part of, recorded in the result.
	Round int
}

// channel is the side channel: JSON lines with a deadline each.
type channel struct {
	c  net.Conn
	r  *bufio.Reader
	dl time.Time
}

type message struct {
	Kind     string     `json:"kind"` // hello, ready, done, verified, bye, error
	Endpoint *Endpoint  `json:"endpoint,omitempty"`
	Dir      *Direction `json:"direction,omitempty"`
	Stamp    string     `json:"stamp,omitempty"`
	OK       bool       `json:"ok,omitempty"`
	Error    string     `json:"error,omitempty"`
}

func (ch *channel) send(m message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	ch.c.SetWriteDeadline(ch.dl)
	_, err = ch.c.Write(append(b, '\n'))
	return err
}

func (ch *channel) recv(want string) (message, error) {
	ch.c.SetReadDeadline(ch.dl)
	var line []byte
	for {
		chunk, isPrefix, err := ch.r.ReadLine()
		if err != nil {
			return message{}, fmt.Errorf("waiting for the peer's %q: %w", want, err)
		}
		line = append(line, chunk...)
		if len(line) > maxChannelLine {
			return message{}, fmt.Errorf("the peer sent a message of more than %d bytes", maxChannelLine)
		}
		if !isPrefix {
			break
		}
	}
	var m message
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("the peer's message is not rdmadiag's: %v", err)
	}
	if m.Kind == "error" {
		return m, fmt.Errorf("the peer stopped: %s", m.Error)
	}
	if m.Kind != want {
		return m, fmt.Errorf("the peer sent %q, want %q", m.Kind, want)
	}
	return m, nil
}

// validate refuses an endpoint no real peer sends.
func (e *Endpoint) validate() error {
	switch {
	case e == nil:
		return errors.New("no endpoint")
	case e.QPN == 0 || e.QPN > 0xffffff:
		return fmt.Errorf("QPN %d is not a QP number", e.QPN)
	case e.PSN > 0xffffff:
		return fmt.Errorf("PSN %d is not 24 bits", e.PSN)
	case e.Size <= 0 || e.Size > 1<<30:
		return fmt.Errorf("buffer of %d bytes", e.Size)
	}
	if _, ok := mtuCodes[e.MTU]; !ok {
		return fmt.Errorf("MTU %d is not an InfiniBand MTU", e.MTU)
	}
	if e.LinkLayer == "Ethernet" || e.GID != "" {
		b, err := hex.DecodeString(e.GID)
		if err != nil || len(b) != 16 {
			return fmt.Errorf("GID %q is not 16 bytes of hex", e.GID)
		}
		copy(e.gidRaw[:], b)
	}
	e.mtuCode = mtuCodes[e.MTU]
	return nil
}

var mtuCodes = map[int]uint32{256: verbs.MTU256, 512: verbs.MTU512, 1024: verbs.MTU1024, 2048: verbs.MTU2048, 4096: verbs.MTU4096}

// Pair runs the pair probe on dev/port against the peer: as the listening end when
// o.Listener is set, else dialling o.Peer. Everything it creates is destroyed on every path; the
// deadline (o.Timeout, default 5 s here too) bounds every step including the side channel.
func Pair(ctx context.Context, lib *verbs.Lib, dev string, port int, o PairOptions) (r PairResult) {
	r.Role, r.Peer, r.Host, r.Round = "connect", o.Peer, o.Host, o.Round
	if o.Listener != nil {
		r.Role, r.Peer = "listen", o.Listener.Addr().String()
	}
	s, done, ok := begin(ctx, lib, "pair", dev, port, o.Options, &r.Result)
	if !ok {
		return r
	}
	defer done()
	if s.requireActive() != nil {
		return r
	}
	msg := orDefault(o.MsgSize, 65536)
	depth := min(orDefault(o.TxDepth, 128), int(s.dattr.MaxQPWR))
	iters := orDefault(o.Iters, 1000)

	var ch *channel
	if s.step(StageSideChannel, func() error {
		dl, _ := s.ctx.Deadline()
		var c net.Conn
		var err error
		if o.Listener != nil {
			c, err = acceptCtx(s.ctx, o.Listener)
		} else {
			c, err = dialRetry(s.ctx, o.Peer)
		}
		if err != nil {
			return fmt.Errorf("side channel to the peer: %w", err)
		}
		s.tr.push("close side channel", c.Close)
		ch = &channel{c: c, r: bufio.NewReaderSize(c, 4096), dl: dl}
		r.Peer = c.RemoteAddr().String()
		return nil
	}) != nil {
		return r
	}
	// Tell the peer why this end stops, so it fails at the same step instead of at its deadline.
	defer func() {
		if r.Status == Fail || r.Status == Skipped {
			ch.send(message{Kind: "error", Error: fmt.Sprintf("%s: %s", r.Stage, r.Error)})
		}
	}()

	pd, err := s.allocPD()
	if err != nil {
		return r
	}
	mem, mr, err := s.regMem(pd, 2*msg)
	if err != nil {
		return r
	}
	cq, err := s.createCQ(depth + 1)
	if err != nil {
		return r
	}
	qp, _, err := s.createQP(pd, cq, verbs.QPCap{MaxSendWR: uint32(depth), MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1})
	if err != nil {
		return r
	}
	a := s.res.Attrs
	local := &Endpoint{Host: o.Host, Device: dev, Port: port, LinkLayer: a.LinkLayer, LID: s.pattr.LID, QPN: qp.Num(),
		PSN: rand.Uint32() & 0xffffff, MTU: a.ActiveMTU, RateGbps: a.RateGbps, Addr: uint64(mem.Addr()) + uint64(msg), RKey: mr.RKey, Size: msg}
	if s.gid != nil {
		local.GID, local.GIDType, local.gidRaw = hex.EncodeToString(s.gid.Raw[:]), s.gid.Type, s.gid.Raw
	}
	local.mtuCode = s.pattr.ActiveMTU
	r.Local = local
	var remote *Endpoint
	if s.step(StageExchange, func() error {
		if err := ch.send(message{Kind: "hello", Endpoint: local}); err != nil {
			return fmt.Errorf("sending this end's address: %w", err)
		}
		m, err := ch.recv("hello")
		if err != nil {
			return err
		}
		if err := m.Endpoint.validate(); err != nil {
			return fmt.Errorf("the peer's address: %w", err)
		}
		if (m.Endpoint.LinkLayer == "InfiniBand") != (local.LinkLayer == "InfiniBand") {
			return fmt.Errorf("this port is %s, the peer's is %s: they cannot be on one fabric", local.LinkLayer, m.Endpoint.LinkLayer)
		}
		remote = m.Endpoint
		return nil
	}) != nil {
		return r
	}
	r.Remote = remote
	r.PathMTU = min(local.MTU, remote.MTU)
	if local.MTU != remote.MTU {
		// RoCE's active MTU follows the netdev's (rxe_set_mtu, mlx5's port MTU): ends that differ
		// have jumbo frames set on one host only.
		r.Warnings = append(r.Warnings, fmt.Sprintf("the ends' active MTUs differ (this end %d, the peer %d): the pair runs at %d; the MTU (on RoCE the netdev's) is not set alike on both hosts", local.MTU, remote.MTU, r.PathMTU))
	}
	r.LinkGbps = minPositive(local.RateGbps, remote.RateGbps)
	rtr := func() (verbs.QPAttr, error) {
		var g *GIDChoice
		if s.gid != nil {
			g = &GIDChoice{Index: s.gid.Index, Raw: remote.gidRaw}
		}
		at, err := rtrAttr(s.pattr, s.port, g, remote.QPN, remote.PSN)
		if err != nil {
			return at, err
		}
		at.PathMTU = min(s.pattr.ActiveMTU, remote.mtuCode)
		if s.pattr.LinkLayer == verbs.LinkLayerInfiniBand {
			if remote.LID == 0 {
				return at, errors.New("the peer's port has LID 0 (no subnet manager has configured it)")
			}
			at.AH.DLID = remote.LID
		}
		return at, nil
	}
	if s.connectTo(qp, rtr, local.PSN, &r.Transitions) != nil {
		if r.Stage == StageRTR && r.Remedy == "" {
			r.Remedy = rtrRemedy(r.Errno, local.LinkLayer)
		}
		return r
	}
	if s.step(StageExchange, func() error {
		if err := ch.send(message{Kind: "ready"}); err != nil {
			return err
		}
		_, err := ch.recv("ready")
		return err
	}) != nil {
		return r
	}
	arena, err := s.arena(depth*160 + 8192)
	if err != nil {
		return r
	}
	buf := mem.Bytes()
	w := pairWriter{s: s, qp: qp, cq: cq, a: arena, mr: mr, mem: mem, pathMTU: r.PathMTU, base: uint64(mem.Addr()), remote: remote, msg: msg, depth: depth, iters: iters,
		latIters: orDefault(o.LatIters, 200), from: orHost(o.Host, "this host"), to: r.Peer}
	// The dialling end writes first: the two directions are timed apart, as two ib_write_bw
	// runs would be.
	order := []bool{true, false} // true: this end writes
	if o.Listener != nil {
		order = []bool{false, true}
	}
	for _, mine := range order {
		if mine {
			if s.step(StagePairWrite, func() error {
				d, stamp, err := w.run()
				r.Out = d
				if err != nil {
					ch.send(message{Kind: "done", Dir: d})
					return err
				}
				if err := ch.send(message{Kind: "done", Dir: d, Stamp: stamp}); err != nil {
					return err
				}
				m, err := ch.recv("verified")
				if err != nil {
					return err
				}
				d.PayloadOK = m.OK
				if !m.OK {
					return fmt.Errorf("the peer found the written data corrupted: %s", m.Error)
				}
				return nil
			}) != nil {
				return r
			}
			continue
		}
		if s.step(StagePairPeer, func() error {
			// The peer writes for as long as its own deadline allows.
			m, err := ch.recv("done")
			if err != nil {
				return err
			}
			r.In = m.Dir
			if m.Dir == nil {
				return errors.New("the peer reported no measurement")
			}
			if m.Dir.Error != "" {
				return fmt.Errorf("the peer's writes to this end failed: %s", m.Dir.Error)
			}
			ok := len(m.Stamp) > 0 && len(m.Stamp) <= msg && bytes.Equal(buf[msg:msg+len(m.Stamp)], []byte(m.Stamp))
			m.Dir.PayloadOK = ok
			v := message{Kind: "verified", OK: ok}
			if !ok {
				v.Error = "the last write's stamp did not arrive intact"
			}
			if err := ch.send(v); err != nil {
				return err
			}
			if !ok {
				return errors.New("the peer's last write did not arrive intact in this end's buffer")
			}
			return nil
		}) != nil {
			return r
		}
	}
	return r
}

func orHost(h, d string) string {
	if h == "" {
		return d
	}
	return h
}

func minPositive(a, b float64) float64 {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// dialRetry dials the peer until it answers or ctx ends: the two ends of a pair start at about
// the same time (srun, an Indexed Job), so the listener may not be up yet. A refusal or a
// timeout of one attempt is retried every half second; a name that does not resolve is not.
func dialRetry(ctx context.Context, addr string) (net.Conn, error) {
	for {
		d := net.Dialer{Timeout: 2 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c, nil
		}
		var dns *net.DNSError
		if errors.As(err, &dns) && !dns.IsTemporary {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last attempt: %v)", context.Cause(ctx), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// acceptCtx accepts one connection, giving up when ctx ends.
func acceptCtx(ctx context.Context, l net.Listener) (net.Conn, error) {
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := l.Accept()
		ch <- res{c, err}
	}()
	select {
	case x := <-ch:
		return x.c, x.err
	case <-ctx.Done():
		l.Close() // unblocks Accept
		if x := <-ch; x.c != nil {
			x.c.Close()
		}
		return nil, fmt.Errorf("no peer connected: %w", context.Cause(ctx))
	}
}

// pairWriter times one end's RDMA WRITEs into the peer's buffer.
type pairWriter struct {
	s                 *session
	qp                *verbs.QP
	cq                *verbs.CQ
	a                 *verbs.Arena
	mr                *verbs.MR
	mem               *verbs.Mem
	base              uint64
	remote            *Endpoint
	msg, depth, iters int
	pathMTU           int
	latIters          int
	from, to          string
}

// run writes iters messages with depth in flight (every write signaled, timed from the first post
// to the last completion, as ib_write_bw), then small writes one at a time for latency, then a
// stamp the peer checks. Half the time left goes to the bandwidth run.
func (w *pairWriter) run() (*Direction, string, error) {
	d := &Direction{From: w.from, To: w.to, MsgSize: w.msg}
	s := w.s
	sges, err := verbs.NewSlice[verbs.SGE](w.a, w.depth)
	if err != nil {
		return d, "", err
	}
	wrs, err := verbs.NewSlice[verbs.SendWR](w.a, w.depth)
	if err != nil {
		return d, "", err
	}
	wcs, err := verbs.NewSlice[verbs.WC](w.a, 32)
	if err != nil {
		return d, "", err
	}
	setup := func(size int) {
		for i := range wrs {
			sges[i] = verbs.SGE{Addr: w.base, Length: uint32(size), LKey: w.mr.LKey}
			wrs[i] = verbs.SendWR{WRID: uint64(i), SGList: sgeAddr(&sges[i]), NumSGE: 1, Opcode: verbs.WROpRDMAWrite,
				SendFlags: verbs.SendSignaled, RemoteAddr: w.remote.Addr, RKey: w.remote.RKey}
		}
	}
	fail := func(wc *verbs.WC, what string) error {
		c := s.completion(wc)
		d.Failed = &c
		d.Error = fmt.Sprintf("%s completed with %s (%s)", what, c.Status, c.StatusText)
		return fmt.Errorf("%s: %s", d.Error, pairCompletionHint(c.Status))
	}
	budget := time.Hour
	if dl, ok := s.ctx.Deadline(); ok {
		budget = time.Until(dl) / 3
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var bad uintptr
	// one posts the first work request and waits for its completion: what failed is named by
	// what, and a wait that outlasts until (or the deadline) is said by late.
	one := func(what string, until time.Time, late func(error) string) error {
		if err := w.qp.PostSend(&wrs[0], &bad); err != nil {
			d.Error = err.Error()
			return err
		}
		for {
			k, err := w.cq.Poll(wcs[:1])
			if err != nil {
				d.Error = err.Error()
				return err
			}
			if k == 1 {
				if wcs[0].Status != verbs.WCStatusSuccess {
					return fail(&wcs[0], what)
				}
				return nil
			}
			err = s.expired()
			if err == nil && !until.IsZero() && time.Now().After(until) {
				err = context.DeadlineExceeded
			}
			if err != nil {
				d.Error = late(err)
				return errors.New(d.Error)
			}
		}
	}
	// One small write first: whether frames reach the peer at all, told apart from frames of the
	// path MTU being dropped (a switch port or link with a smaller MTU than the hosts').
	setup(64)
	if err := one("a 64-byte RDMA WRITE to the peer", time.Now().Add(min(budget/3, 10*time.Second)), func(error) string {
		return "a 64-byte RDMA WRITE to the peer was not acknowledged: " + pairCompletionHint("IBV_WC_RETRY_EXC_ERR")
	}); err != nil {
		return d, "", err
	}
	setup(w.msg)
	stop := time.Now().Add(budget)
	target, posted, completed := w.iters, 0, 0
	start := time.Now()
	checked := start
	for completed < target {
		for posted < target && posted-completed < w.depth {
			wr := &wrs[posted%w.depth]
			wr.WRID = uint64(posted)
			if err := w.qp.PostSend(wr, &bad); err != nil {
				d.Error = err.Error()
				return d, "", err
			}
			posted++
		}
		k, err := w.cq.Poll(wcs)
		if err != nil {
			d.Error = err.Error()
			return d, "", err
		}
		for _, wc := range wcs[:k] {
			if wc.Status != verbs.WCStatusSuccess {
				return d, "", fail(&wc, fmt.Sprintf("RDMA WRITE %d of %d to the peer", wc.WRID+1, target))
			}
			completed = max(completed, int(wc.WRID)+1)
		}
		if now := time.Now(); now.Sub(checked) > checkEvery {
			checked = now
			if err := s.expired(); err != nil {
				d.Error = fmt.Sprintf("%d of %d writes completed before %v", completed, target, err)
				if completed == 0 {
					// The small write passed: what is lost is frames of the path MTU.
					d.Error += fmt.Sprintf(": 64-byte writes are acknowledged but no %d-byte write (frames of the path MTU, %d bytes) is: frames that large are dropped on the path, an MTU smaller than the hosts' RoCE MTU on a switch port or link; lower the RoCE MTU (the netdev's) or raise the path's", w.msg, w.pathMTU)
				}
				return d, "", errors.New(d.Error)
			}
			if !d.Truncated && now.After(stop) {
				d.Truncated = true
				target = posted
			}
		}
	}
	d.Duration = time.Since(start)
	d.Iters = completed
	d.Bytes = int64(completed) * int64(w.msg)
	if sec := d.Duration.Seconds(); sec > 0 {
		d.Gbps = float64(d.Bytes) * 8 / sec / 1e9
		d.MiBps = float64(d.Bytes) / sec / (1 << 20)
	}
	// Latency: one small signaled write at a time (ib_write_lat's shape, one side).
	setup(64)
	lat := make([]time.Duration, 0, w.latIters)
	stop = time.Now().Add(budget / 2)
	for i := 0; i < w.latIters && time.Now().Before(stop); i++ {
		t0 := time.Now()
		if err := one(fmt.Sprintf("latency write %d", i+1), time.Time{}, func(err error) string {
			return fmt.Sprintf("latency write %d: %v", i+1, err)
		}); err != nil {
			return d, "", err
		}
		lat = append(lat, time.Since(t0))
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		d.LatIters, d.LatMedian, d.LatP99 = len(lat), lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	}
	// The stamp: the last write carries text the peer compares with what arrived.
	stamp := fmt.Sprintf("rdmadiag pair %s->%s %d", w.from, w.to, time.Now().UnixNano())
	if len(stamp) > w.msg {
		stamp = stamp[:w.msg]
	}
	copy(w.mem.Bytes(), stamp)
	sges[0].Length = uint32(len(stamp))
	if err := one("the stamp write", time.Time{}, func(err error) string { return "the stamp write: " + err.Error() }); err != nil {
		return d, "", err
	}
	return d, stamp, nil
}

// rtrRemedy says where a refused RTR towards the peer points. On RoCE the kernel resolves the
// peer's GID to a MAC address while moving the QP to RTR (ib_resolve_eth_dmac in
// drivers/infiniband/core/verbs.c, a neighbour lookup on the GID's netdev): ETIMEDOUT or
// EHOSTUNREACH there means no neighbour answered, so frames do not reach the peer at all.
func rtrRemedy(errno, linkLayer string) string {
	switch {
	case linkLayer == "Ethernet" && (errno == "ETIMEDOUT" || errno == "EHOSTUNREACH" || errno == "ENETUNREACH"):
		return "the peer's address did not resolve on the RoCE network (no ARP/neighbour answer): the path to the peer is down or drops everything (cable, switch port, VLAN, a route to another subnet); ping the peer's RoCE address from this netdev"
	case errno == "EINVAL":
		return "the driver refused the peer's address: a GID of another type or subnet, or an MTU the port does not support"
	}
	return ""
}

// pairCompletionHint names where a failed completion of a write to the peer points
// (IBTA Volume 1, 10.8.3 completion status; perftest and the verbs man page ibv_poll_cq(3)).
func pairCompletionHint(status string) string {
	switch status {
	case "IBV_WC_RETRY_EXC_ERR":
		return "the peer never acknowledged: the path loses packets or does not exist (cable, switch port, an MTU the path does not carry, a firewall dropping RoCE's UDP port 4791)"
	case "IBV_WC_REM_ACCESS_ERR":
		return "the peer refused the write: its buffer's address or rkey does not match what it announced"
	case "IBV_WC_RNR_RETRY_EXC_ERR":
		return "the peer had no receive posted"
	case "IBV_WC_WR_FLUSH_ERR":
		return "the QP was already in error: an earlier failure on this path"
	}
	return "see ibv_poll_cq(3) for the status"
}
