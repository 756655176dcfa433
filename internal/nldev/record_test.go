package nldev_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
)

// TestReplayRealKernel decodes replies recorded from Debian 12's 6.1 kernel with Soft-RoCE in
// the QEMU lab (rxe-vm.sh) while ibv_rc_pingpong's server held a QP. The expectations are what
// `rdma -j -d dev/link/res show` printed in the same guest at the same moment.
func TestReplayRealKernel(t *testing.T) {
	c := nldev.NewClient(netlinkraw.NewReplay(filepath.Join("testdata", "rxe0-6.1")))

	devs, err := c.Devices()
	if err != nil {
		t.Fatal(err)
	}
	wantDevs := []nldev.Device{{Index: 0, Name: "rxe0", NumPorts: 1, CapFlags: 19020918,
		NodeGUID: 0x505400fffe123456, SysImageGUID: 0x505400fffe123456, NodeType: 1,
		Protocol: "roce", HasDIM: true}}
	if !reflect.DeepEqual(devs, wantDevs) {
		t.Errorf("devices %+v\nwant %+v", devs, wantDevs)
	}
	if g := devs[0].NodeGUID.String(); g != "5054:00ff:fe12:3456" {
		t.Errorf("node guid %s", g)
	}

	ports, err := c.Ports(0)
	if err != nil {
		t.Fatal(err)
	}
	wantPorts := []nldev.Port{{DevIndex: 0, DevName: "rxe0", Index: 1, State: nldev.PortStateActive,
		PhysState: nldev.PortPhysStateLinkUp, NetdevIndex: 2, NetdevName: "eth0"}}
	if !reflect.DeepEqual(ports, wantPorts) {
		t.Errorf("ports %+v\nwant %+v", ports, wantPorts)
	}

	sum, err := c.ResourceSummary()
	if err != nil {
		t.Fatal(err)
	}
	wantSum := []nldev.ResSummary{{DevIndex: 0, DevName: "rxe0", Counts: map[string]uint64{
		"pd": 2, "cq": 2, "qp": 2, "cm_id": 0, "mr": 1, "ctx": 1, "srq": 0}}}
	if !reflect.DeepEqual(sum, wantSum) {
		t.Errorf("summary %+v\nwant %+v", sum, wantSum)
	}

	qps, err := c.QPs(0)
	if err != nil {
		t.Fatal(err)
	}
	wantQPs := []nldev.QP{
		{DevIndex: 0, DevName: "rxe0", Port: 1, LQPN: 17, HasRQPN: true, HasRQPSN: true, PDN: 1, HasPDN: true,
			HasPathMig: true, Type: nldev.QPTypeRC, State: nldev.QPStateInit, PID: 113},
		{DevIndex: 0, DevName: "rxe0", Port: 1, LQPN: 1, Type: nldev.QPTypeGSI, State: nldev.QPStateRTS, KernName: "ib_core"},
	}
	if !reflect.DeepEqual(qps, wantQPs) {
		t.Errorf("QPs %+v\nwant %+v", qps, wantQPs)
	}

	cqs, err := c.CQs(0)
	if err != nil {
		t.Fatal(err)
	}
	wantCQs := []nldev.CQ{
		{DevName: "rxe0", CQN: 0, CQE: 1023, Users: 2, PollCtx: 2, HasPollCtx: true, HasDIM: true, KernName: "ib_core"},
		{DevName: "rxe0", CQN: 1, CQE: 511, Users: 2, HasDIM: true, HasCtxN: true, PID: 113},
	}
	if !reflect.DeepEqual(cqs, wantCQs) {
		t.Errorf("CQs %+v\nwant %+v", cqs, wantCQs)
	}

	mrs, err := c.MRs(0)
	if err != nil {
		t.Fatal(err)
	}
	wantMRs := []nldev.MR{{DevName: "rxe0", MRN: 0, PDN: 1, PID: 113, LKey: 0x24a, HasKeys: true, Len: 4096}}
	if !reflect.DeepEqual(mrs, wantMRs) {
		t.Errorf("MRs %+v\nwant %+v", mrs, wantMRs)
	}

	pds, err := c.PDs(0)
	if err != nil {
		t.Fatal(err)
	}
	wantPDs := []nldev.PD{
		{DevName: "rxe0", PDN: 0, LocalDMALKey: 0x12e, Users: 1, KernName: "ib_core"},
		{DevName: "rxe0", PDN: 1, Users: 2, HasCtxN: true, PID: 113},
	}
	if !reflect.DeepEqual(pds, wantPDs) {
		t.Errorf("PDs %+v\nwant %+v", pds, wantPDs)
	}

	// The kernel answered a QP dump of a device that does not exist with EINVAL.
	if _, err := c.QPs(77); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "device 77") {
		t.Errorf("QPs(77): %v, want EINVAL naming the device", err)
	}
	if _, err := c.CQs(77); !errors.Is(err, host.ErrNotRecorded) {
		t.Errorf("CQs(77): %v, want ErrNotRecorded", err)
	}
}

func TestRecordReplayRoundTrip(t *testing.T) {
	m := nltest.Model{
		Devices: []nldev.Device{{Index: 0, Name: "mlx5_0", NumPorts: 1, NodeGUID: 1, Protocol: "ib"},
			{Index: 3, Name: "mlx5_3", NumPorts: 2, Protocol: "roce"}},
		Ports: []nldev.Port{{DevIndex: 0, Index: 1, State: 4, PhysState: 5, HasIB: true, LID: 3},
			{DevIndex: 3, Index: 1, State: 1, PhysState: 3}, {DevIndex: 3, Index: 2, State: 4, PhysState: 5}},
		QPs: withDev(sampleQPs(), func(q *nldev.QP) { q.DevIndex = 3 }),
		CQs: withDev(sampleCQs(), func(c *nldev.CQ) { c.DevIndex = 0 }),
		MRs: withDev(sampleMRs(), func(m *nldev.MR) { m.DevIndex = 3 }),
	}
	live := m.Conn()
	live.Fail(nldev.PDsRequest(3), syscall.EOPNOTSUPP)
	dir := t.TempDir()
	rec := nldev.NewClient(netlinkraw.NewRecorder(live, dir))
	replay := nldev.NewClient(netlinkraw.NewReplay(dir))

	type result struct {
		v   any
		err error
	}
	run := func(c *nldev.Client) []result {
		var out []result
		add := func(v any, err error) { out = append(out, result{v, err}) }
		devs, err := c.Devices()
		add(devs, err)
		add(c.ResourceSummary())
		for _, d := range devs {
			add(c.Ports(d.Index))
			add(c.QPs(d.Index))
			add(c.CQs(d.Index))
			add(c.MRs(d.Index))
			add(c.PDs(d.Index))
		}
		return out
	}
	recorded, replayed := run(rec), run(replay)
	if len(recorded) != 12 || len(replayed) != len(recorded) {
		t.Fatalf("%d recorded results, %d replayed", len(recorded), len(replayed))
	}
	for i := range recorded {
		r, p := recorded[i], replayed[i]
		if (r.err == nil) != (p.err == nil) || (r.err != nil && r.err.Error() != p.err.Error()) {
			t.Errorf("result %d: recorded error %v, replayed %v", i, r.err, p.err)
		}
		if !reflect.DeepEqual(r.v, p.v) {
			t.Errorf("result %d: recorded %+v, replayed %+v", i, r.v, p.v)
		}
	}
	if qps := recorded[8].v.([]nldev.QP); len(qps) != len(sampleQPs()) {
		t.Errorf("device 3 has %d QPs, want %d", len(qps), len(sampleQPs()))
	}
	if !errors.Is(replayed[11].err, syscall.EOPNOTSUPP) {
		t.Errorf("replayed PD dump of device 3: %v, want EOPNOTSUPP", replayed[11].err)
	}

	errFile := filepath.Join(dir, nldev.PDsRequest(3).Key()+".err")
	if b, err := os.ReadFile(errFile); err != nil || string(b) != "95" {
		t.Errorf("%s holds %q (%v), want \"95\"", errFile, b, err)
	}
	binFile := filepath.Join(dir, nldev.DevicesRequest().Key()+".bin")
	want, _ := live.Exchange(nldev.DevicesRequest())
	if b, err := os.ReadFile(binFile); err != nil || !reflect.DeepEqual(b, want) {
		t.Errorf("%s does not hold the raw reply (%v)", binFile, err)
	}
}

func TestReplayErrors(t *testing.T) {
	dir := t.TempDir()
	r := netlinkraw.NewReplay(dir)
	req := nldev.QPsRequest(5)
	_, err := r.Exchange(req)
	if !errors.Is(err, host.ErrNotRecorded) || !strings.Contains(err.Error(), req.Key()) {
		t.Errorf("missing reply: %v, want ErrNotRecorded naming %s", err, req.Key())
	}
	for _, bad := range []string{"", "abc", "-5", "0", "99999"} {
		if err := os.WriteFile(filepath.Join(dir, req.Key()+".err"), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Exchange(req); !errors.Is(err, netlinkraw.ErrMalformedRecording) {
			t.Errorf(".err holding %q: %v, want ErrMalformed", bad, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, req.Key()+".err"), []byte("22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// host.NetlinkConn promises a bare errno, which a type assertion (not errors.As) checks.
	if _, err := r.Exchange(req); err.(syscall.Errno) != syscall.EINVAL {
		t.Errorf("recorded 22: %v (%T), want bare syscall.EINVAL", err, err)
	}
}

func TestRecorderDoesNotRecordTransportErrors(t *testing.T) {
	dir := t.TempDir()
	rec := netlinkraw.NewRecorder(nltest.NewConn(), dir) // answers nothing: ErrNotRecorded
	if _, err := rec.Exchange(nldev.DevicesRequest()); !errors.Is(err, host.ErrNotRecorded) {
		t.Fatalf("got %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("recorded %d files for a transport error", len(ents))
	}
	// A recording that cannot be written is an error, not a silently incomplete snapshot.
	live := nltest.Model{}.Conn()
	rec = netlinkraw.NewRecorder(live, filepath.Join(dir, "missing"))
	if _, err := rec.Exchange(nldev.DevicesRequest()); err == nil {
		t.Error("recording into a missing directory succeeded")
	}
}

func TestNilConn(t *testing.T) {
	if _, err := nldev.NewClient(nil).Devices(); !errors.Is(err, host.ErrNotRecorded) {
		t.Errorf("nil conn: %v", err)
	}
}
