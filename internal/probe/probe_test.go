package probe

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

// runAll runs every probe with the same arguments.
func runAll(ctx context.Context, lib *verbs.Lib, dev string, o Options) []Result {
	return []Result{
		Device(ctx, lib, dev, 1, o),
		Limits(ctx, lib, dev, 1, o).Result,
		Loopback(ctx, lib, dev, 1, o).Result,
		CQ(ctx, lib, dev, 1, true, o).Result,
		Bandwidth(ctx, lib, dev, 1, o).Result,
	}
}

func TestNoLibrary(t *testing.T) {
	_, err := verbs.Open("libibverbs-not-installed.so.1")
	if !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("verbs.Open of a missing soname: %v, want ErrNoLibrary", err)
	}
	for _, r := range runAll(context.Background(), nil, "rxe0", Options{}) {
		if r.Status != Skipped || !errors.Is(r.Err, ErrNoLibrary) {
			t.Errorf("%s probe without a library: status %s, err %v; want skipped with ErrNoLibrary", r.Probe, r.Status, r.Err)
		}
		if !strings.Contains(r.Remedy, "libibverbs1") {
			t.Errorf("%s probe remedy %q does not say what to install", r.Probe, r.Remedy)
		}
	}
}

// TestNoDevice needs libibverbs and a kernel without RDMA, which is what
// this project's build hosts have.
func TestNoDevice(t *testing.T) {
	lib, err := verbs.Load()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI installs libibverbs, but loading it failed: %v", err)
		}
		t.Skipf("libibverbs not installed: %v", err)
	}
	if _, err := os.Stat("/sys/class/infiniband_verbs/abi_version"); err == nil {
		t.Skip("this kernel has RDMA user verbs; the no-device path cannot be exercised")
	}
	for _, r := range runAll(context.Background(), lib, "rxe0", Options{}) {
		if r.Status != Skipped || !errors.Is(r.Err, ErrNoDevice) || !errors.Is(r.Err, syscall.ENOSYS) {
			t.Errorf("%s probe: status %s, err %v; want skipped with ErrNoDevice/ENOSYS", r.Probe, r.Status, r.Err)
		}
		if r.Stage != StageOpen || r.Verb != "ibv_get_device_list" || r.Errno != "ENOSYS" {
			t.Errorf("%s probe: stage %q verb %q errno %q; want open_device, ibv_get_device_list, ENOSYS", r.Probe, r.Stage, r.Verb, r.Errno)
		}
		if !strings.Contains(r.Error, "no RDMA user-verbs support") || !strings.Contains(r.Remedy, "ib_uverbs") {
			t.Errorf("%s probe: error %q / remedy %q do not explain the missing kernel support", r.Probe, r.Error, r.Remedy)
		}
		if r.Attrs != nil {
			t.Errorf("%s probe reports attributes without a device", r.Probe)
		}
	}
}

func TestBadPort(t *testing.T) {
	lib, err := verbs.Load()
	if err != nil {
		t.Skipf("libibverbs not installed: %v", err)
	}
	r := Device(context.Background(), lib, "rxe0", 0, Options{})
	if r.Status != Fail || !strings.Contains(r.Error, "port 0 out of range") {
		t.Errorf("port 0: status %s error %q", r.Status, r.Error)
	}
}

func TestStep(t *testing.T) {
	newSession := func(ctx context.Context, o Options) *session {
		return &session{ctx: ctx, o: o, res: &Result{}}
	}
	ran := map[Stage]bool{}
	fn := func(st Stage) func() error { return func() error { ran[st] = true; return nil } }

	s := newSession(context.Background(), Options{FailAt: StageRTR})
	if err := s.step(StageInit, fn(StageInit)); err != nil || !ran[StageInit] {
		t.Fatalf("INIT step: err %v ran %v", err, ran[StageInit])
	}
	if err := s.step(StageRTR, fn(StageRTR)); err != errStop || ran[StageRTR] {
		t.Fatalf("RTR step with FailAt: err %v, ran %v", err, ran[StageRTR])
	}
	if s.res.Status != Fail || s.res.Stage != StageRTR || !errors.Is(s.res.Err, ErrInjected) {
		t.Errorf("after injection: %+v", s.res)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s = newSession(ctx, Options{})
	if err := s.step(StagePoll, fn(StagePoll)); err != errStop || ran[StagePoll] || !errors.Is(s.res.Err, context.Canceled) {
		t.Errorf("cancelled context: err %v ran %v res.Err %v", err, ran[StagePoll], s.res.Err)
	}

	hookErr := errors.New("stalled")
	var hooked []Stage
	s = newSession(context.Background(), Options{Hook: func(_ context.Context, st Stage) error {
		hooked = append(hooked, st)
		if st == StagePostSend {
			return hookErr
		}
		return nil
	}})
	_ = s.step(StagePostRecv, fn(StagePostRecv))
	if err := s.step(StagePostSend, fn(StagePostSend)); err != errStop || !errors.Is(s.res.Err, hookErr) || ran[StagePostSend] {
		t.Errorf("hook failure: err %v res.Err %v", err, s.res.Err)
	}
	if fmt.Sprint(hooked) != "[post_recv post_send]" {
		t.Errorf("hook saw %v", hooked)
	}

	// A verb error is broken down into verb and errno name.
	s = newSession(context.Background(), Options{})
	_ = s.step(StageCreateQP, func() error {
		return &verbs.Error{Verb: "ibv_create_qp", Errno: syscall.EINVAL}
	})
	if s.res.Verb != "ibv_create_qp" || s.res.Errno != "EINVAL" || !errors.Is(s.res.Err, syscall.EINVAL) {
		t.Errorf("verb error: verb %q errno %q", s.res.Verb, s.res.Errno)
	}
	// A nested step's failure is not overwritten by the enclosing step.
	s = newSession(context.Background(), Options{FailAt: StageInit})
	_ = s.step(StageOverrun, func() error { return s.step(StageInit, fn(StageInit)) })
	if s.res.Stage != StageInit || !errors.Is(s.res.Err, ErrInjected) {
		t.Errorf("nested failure: stage %q err %v", s.res.Stage, s.res.Err)
	}
	// Missing device and inactive port are skips, not failures.
	s = newSession(context.Background(), Options{})
	_ = s.step(StageOpen, func() error { return fmt.Errorf("x: %w", ErrNoDevice) })
	if s.res.Status != Skipped {
		t.Errorf("ErrNoDevice gave status %s", s.res.Status)
	}
}

func TestTrackerReverseOrder(t *testing.T) {
	var order []string
	var tr tracker
	cancelled := false
	tr.cancel = func() { cancelled = true }
	for _, name := range []string{"ctx", "pd", "mr", "cq", "qp"} {
		tr.push(name, func() error {
			order = append(order, name)
			if name == "mr" {
				return errors.New("busy")
			}
			return nil
		})
	}
	errs := tr.release()
	if got := strings.Join(order, ","); got != "qp,cq,mr,pd,ctx" {
		t.Errorf("release order %s", got)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "mr: busy") {
		t.Errorf("release errors %v", errs)
	}
	if !cancelled {
		t.Error("release did not cancel the probe's context")
	}
	if errs := tr.release(); len(errs) != 0 || len(order) != 5 {
		t.Error("second release destroyed again")
	}
}

func TestFinishCleanupFailureFailsProbe(t *testing.T) {
	s := &session{res: &Result{}, started: time.Now()}
	s.tr.push("ibv_dealloc_pd", func() error { return &verbs.Error{Verb: "ibv_dealloc_pd", Errno: syscall.EBUSY} })
	s.finish()
	if s.res.Status != Fail || len(s.res.Cleanup) != 1 || !strings.Contains(s.res.Cleanup[0], "EBUSY") {
		t.Errorf("result %+v", s.res)
	}
}

func gidEntry(idx uint32, typ uint32, addr string) verbs.GIDEntry {
	var e verbs.GIDEntry
	e.GIDIndex, e.GIDType, e.PortNum = idx, typ, 1
	if addr != "" {
		e.GID = mustAddr(addr)
	}
	return e
}

func TestChooseGID(t *testing.T) {
	v1, v2, unk := uint32(verbs.GIDTypeRoCEv1), uint32(verbs.GIDTypeRoCEv2), verbs.GIDTypeUnknown
	cases := []struct {
		name    string
		entries []verbs.GIDEntry
		types   map[uint32]string
		want    int
		wantTyp string
		wantErr bool
	}{
		{"rxe: link-local v2 at 0, IPv4-mapped v2 at 1", []verbs.GIDEntry{
			gidEntry(0, v2, "fe80::5054:ff:fe12:3456"), gidEntry(1, v2, "::ffff:10.0.2.15")}, nil, 1, "RoCE v2", false},
		{"mlx5: v1 and v2 for each address", []verbs.GIDEntry{
			gidEntry(0, v1, "fe80::1"), gidEntry(1, v2, "fe80::1"),
			gidEntry(2, v1, "::ffff:192.168.1.5"), gidEntry(3, v2, "::ffff:192.168.1.5")}, nil, 3, "RoCE v2", false},
		{"global IPv6 beats link-local", []verbs.GIDEntry{
			gidEntry(0, v2, "fe80::1"), gidEntry(1, v2, "2001:db8::1")}, nil, 1, "RoCE v2", false},
		{"tie keeps the lowest index", []verbs.GIDEntry{
			gidEntry(4, v2, "::ffff:10.0.0.2"), gidEntry(2, v2, "::ffff:10.0.0.1")}, nil, 2, "RoCE v2", false},
		{"legacy query: types from sysfs", []verbs.GIDEntry{
			gidEntry(0, unk, "::ffff:10.0.0.1"), gidEntry(1, unk, "::ffff:10.0.0.1")},
			map[uint32]string{0: "IB/RoCE v1", 1: "RoCE v2"}, 1, "RoCE v2", false},
		{"zero entries are skipped", []verbs.GIDEntry{gidEntry(0, v2, ""), gidEntry(1, v1, "fe80::2")}, nil, 1, "RoCE v1", false},
		{"empty table", nil, nil, 0, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := chooseGID(c.entries, func(i uint32) string { return c.types[i] })
			if c.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Index != c.want || got.Type != c.wantTyp {
				t.Errorf("chose index %d (%s), want %d (%s)", got.Index, got.Type, c.want, c.wantTyp)
			}
		})
	}
}

func FuzzChooseGID(f *testing.F) {
	f.Add([]byte{}, uint8(2))
	a, b := mustAddr("::ffff:10.0.2.15"), mustAddr("fe80::1")
	f.Add(append(a[:], b[:]...), uint8(2))
	f.Add(b[:], uint8(255))
	f.Fuzz(func(t *testing.T, raw []byte, typ uint8) {
		var entries []verbs.GIDEntry
		for i := 0; i+16 <= len(raw) && i < 16*64; i += 16 {
			var e verbs.GIDEntry
			copy(e.GID[:], raw[i:i+16])
			e.GIDIndex = uint32(i / 16)
			e.GIDType = uint32(typ)
			if typ == 255 {
				e.GIDType = verbs.GIDTypeUnknown
			}
			entries = append(entries, e)
		}
		c, err := chooseGID(entries, func(uint32) string { return "RoCE v2" })
		if err == nil && (c.Index < 0 || c.Index >= len(entries) || c.Raw == ([16]byte{})) {
			t.Fatalf("chose %+v from %d entries", c, len(entries))
		}
	})
}

func mustAddr(s string) [16]byte {
	var b [16]byte
	a, err := parseAddr(s)
	if err != nil {
		panic(err)
	}
	copy(b[:], a)
	return b
}

func TestPortRate(t *testing.T) {
	cases := []struct {
		speed, width uint8
		sp, w        string
		gbps         float64
	}{
		{1, 1, "2.5 Gbps (SDR)", "1X", 2.5},
		{32, 2, "25.8 Gbps (EDR)", "4X", 103.125},
		{64, 2, "53.1 Gbps (HDR)", "4X", 212.5},
		{128, 16, "106.2 Gbps (NDR)", "2X", 212.5},
		{3, 2, "invalid speed 3", "4X", 0},
		{1, 0, "2.5 Gbps (SDR)", "invalid width 0", 0},
	}
	for _, c := range cases {
		sp, w, g := portRate(c.speed, c.width)
		if sp != c.sp || w != c.w || g != c.gbps {
			t.Errorf("portRate(%d,%d) = %q %q %v, want %q %q %v", c.speed, c.width, sp, w, g, c.sp, c.w, c.gbps)
		}
	}
}

func TestRCMasks(t *testing.T) {
	// The masks rdma-core's libibverbs/examples/rc_pingpong.c passes to ibv_modify_qp: INIT in
	// pp_init_ctx, RTR and RTS in pp_connect_ctx.
	if maskInit != 0x39 || maskRTR != 0x129181 || maskRTS != 0x12e01 {
		t.Errorf("masks INIT 0x%x RTR 0x%x RTS 0x%x", maskInit, maskRTR, maskRTS)
	}
}

func TestRTRAttr(t *testing.T) {
	gid := &GIDChoice{Index: 1, Raw: mustAddr("::ffff:10.0.2.15")}
	roce := verbs.PortAttr{LinkLayer: verbs.LinkLayerEthernet, ActiveMTU: verbs.MTU1024}
	at, err := rtrAttr(roce, 1, gid, 0x11, 7)
	if err != nil {
		t.Fatal(err)
	}
	if at.AH.IsGlobal != 1 || at.AH.GRH.SGIDIndex != 1 || at.AH.GRH.DGID != gid.Raw || at.AH.GRH.HopLimit == 0 ||
		at.DestQPNum != 0x11 || at.RQPSN != 7 || at.PathMTU != verbs.MTU1024 || at.AH.PortNum != 1 {
		t.Errorf("RoCE RTR attr %+v", at)
	}
	if _, err := rtrAttr(roce, 1, nil, 1, 1); err == nil {
		t.Error("RoCE without a GID accepted")
	}
	ib := verbs.PortAttr{LinkLayer: verbs.LinkLayerInfiniBand, LID: 5, ActiveMTU: verbs.MTU4096}
	at, err = rtrAttr(ib, 2, nil, 3, 4)
	if err != nil || at.AH.IsGlobal != 0 || at.AH.DLID != 5 || at.AH.PortNum != 2 {
		t.Errorf("IB RTR attr %+v err %v", at, err)
	}
	ib.LID = 0
	if _, err := rtrAttr(ib, 1, nil, 1, 1); err == nil || !strings.Contains(err.Error(), "subnet manager") {
		t.Errorf("IB port without LID: %v", err)
	}
}

func parseAddr(s string) ([]byte, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return nil, err
	}
	b := a.As16()
	return b[:], nil
}
