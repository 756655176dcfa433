package nldev_test

import (
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
)

func sampleQPs() []nldev.QP {
	return []nldev.QP{
		{Port: 1, LQPN: 1, Type: nldev.QPTypeGSI, State: nldev.QPStateRTS, KernName: "ib_core"},
		{Port: 1, LQPN: 17, RQPN: 18, HasRQPN: true, RQPSN: 0xabcdef, HasRQPSN: true, SQPSN: 0x123456,
			PDN: 3, HasPDN: true, PathMig: 2, HasPathMig: true, Type: nldev.QPTypeRC,
			State: nldev.QPStateErr, PID: 4242},
		{LQPN: 0xffffff, Type: nldev.QPTypeUD, State: nldev.QPStateReset, PDN: 0, HasPDN: true, PID: 1},
		{Port: 2, LQPN: 99, Type: nldev.QPTypeDriver, Subtype: "DCT", State: nldev.QPStateRTR, KernName: "mlx5_ib"},
		{Port: 1, LQPN: 100, Type: nldev.QPTypeRC, State: nldev.QPStateRTS, KernName: "nvme_rdma",
			HasRQPN: true, RQPN: 200, HasRQPSN: true, HasPathMig: true},
	}
}

func sampleCQs() []nldev.CQ {
	return []nldev.CQ{
		{CQN: 0, CQE: 1023, Users: 2, PollCtx: 2, HasPollCtx: true, HasDIM: true, KernName: "ib_core"},
		{CQN: 1, CQE: 511, Users: 1 << 40, HasDIM: true, DIM: true, CtxN: 4, HasCtxN: true, PID: 113},
		{CQN: 7, CQE: 1, Users: 0, PID: 9},
	}
}

func sampleMRs() []nldev.MR {
	return []nldev.MR{
		{MRN: 0, PDN: 1, PID: 113, RKey: 0, LKey: 0x24a, IOVA: 0x7f0000001000, HasKeys: true, Len: 4096},
		{MRN: 5, PDN: 0, KernName: "rpcrdma", Len: 1 << 33},
	}
}

func samplePDs() []nldev.PD {
	return []nldev.PD{
		{PDN: 0, LocalDMALKey: 0x12e, Users: 1, KernName: "ib_core"},
		{PDN: 1, Users: 2, CtxN: 0, HasCtxN: true, PID: 113, UnsafeGlobalRKey: 0x99, HasUnsafeRKey: true},
	}
}

func withDev[T any](objs []T, set func(*T)) []T {
	out := append([]T(nil), objs...)
	for i := range out {
		set(&out[i])
	}
	return out
}

var unknownAttrs = cat(
	attr(999, u32(5)),
	attr(nldev.AttrDriver|0x8000, attr(53, cat(attr(54, cstr("k")), attr(57, u32(1))))),
	attr(0x3fff, nil),
)

func TestRoundTrip(t *testing.T) {
	encoders := []struct {
		name string
		enc  nltest.Encoder
	}{
		{"kernel x86 layout", nltest.Encoder{}},
		{"PAD before every u64", nltest.Encoder{PadU64: true}},
		{"NLA_F_NESTED on nests", nltest.Encoder{Nested: true}},
		{"one entry per message", nltest.Encoder{MaxMsg: 1}},
		{"small messages", nltest.Encoder{MaxMsg: 100, PadU64: true}},
		{"unknown attributes", nltest.Encoder{Extra: unknownAttrs, Nested: true}},
		{"seq and port id", nltest.Encoder{Seq: 77, PortID: 0xdeadbeef}},
	}
	for _, tc := range encoders {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.enc
			wantQPs := withDev(sampleQPs(), func(q *nldev.QP) { q.DevIndex, q.DevName = 4, "mlx5_4" })
			b := e.QPDump(4, "mlx5_4", sampleQPs())
			if e.MaxMsg == 1 {
				if n := countMessages(t, b); n != len(wantQPs)+1 {
					t.Errorf("MaxMsg 1 gave %d messages, want %d", n, len(wantQPs)+1)
				}
			}
			check(t, "QPs", b, nldev.DecodeQPs, wantQPs)

			wantCQs := withDev(sampleCQs(), func(c *nldev.CQ) { c.DevIndex, c.DevName = 4, "mlx5_4" })
			check(t, "CQs", e.CQDump(4, "mlx5_4", sampleCQs()), nldev.DecodeCQs, wantCQs)

			wantMRs := withDev(sampleMRs(), func(m *nldev.MR) { m.DevIndex, m.DevName = 4, "mlx5_4" })
			check(t, "MRs", e.MRDump(4, "mlx5_4", sampleMRs()), nldev.DecodeMRs, wantMRs)

			wantPDs := withDev(samplePDs(), func(p *nldev.PD) { p.DevIndex, p.DevName = 4, "mlx5_4" })
			check(t, "PDs", e.PDDump(4, "mlx5_4", samplePDs()), nldev.DecodePDs, wantPDs)

			devs := []nldev.Device{
				{Index: 0, Name: "mlx5_0", NumPorts: 1, CapFlags: 0x1234, FWVersion: "28.41.1000",
					NodeGUID: 0x0002c90300317c2e, SysImageGUID: 0x0002c90300317c2e, NodeType: 1,
					Protocol: "ib", HasDIM: true, DIM: true},
				{Index: 7, Name: "rxe0", NumPorts: 1, NodeGUID: 0x505400fffe123456, NodeType: 1,
					Protocol: "roce", HasDIM: true},
				{Index: 8, Name: "old0", NumPorts: 2, NodeType: 4},
			}
			check(t, "devices", e.DevDump(devs), nldev.DecodeDevices, devs)

			ports := []nldev.Port{
				{DevIndex: 0, DevName: "mlx5_0", Index: 1, CapFlags: 0x2651e848, State: 4, PhysState: 5,
					HasIB: true, SubnetPrefix: 0xfe80000000000000, LID: 12, SMLID: 1, LMC: 0},
				{DevIndex: 7, DevName: "rxe0", Index: 1, State: 1, PhysState: 3, NetdevIndex: 2, NetdevName: "eth0"},
			}
			check(t, "ports", e.PortDump(ports), nldev.DecodePorts, ports)

			sums := []nldev.ResSummary{
				{DevIndex: 0, DevName: "mlx5_0", Counts: map[string]uint64{"pd": 4, "cq": 6, "qp": 3, "mr": 1 << 35}},
				{DevIndex: 1, DevName: "mlx5_1", Counts: map[string]uint64{}},
			}
			check(t, "summary", e.ResSummaryDump(sums), nldev.DecodeResSummary, sums)
		})
	}
}

func check[T any](t *testing.T, what string, b []byte, decode func([]byte) ([]T, error), want []T) {
	t.Helper()
	got, err := decode(b)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func TestEncoderOptionsReachTheWire(t *testing.T) {
	// The round trip above only proves something if the options change the bytes.
	plain := nltest.CQDump(1, "x", sampleCQs())
	padded := nltest.Encoder{PadU64: true}.CQDump(1, "x", sampleCQs())
	if len(padded) != len(plain)+4*len(sampleCQs()) {
		t.Errorf("PadU64 added %d bytes, want one 4-byte PAD per CQ", len(padded)-len(plain))
	}
	nested := nltest.Encoder{Nested: true}.CQDump(1, "x", sampleCQs())
	// DEV_INDEX (8) + DEV_NAME "x\0" (8) then the table nest header's type.
	if typ := ne.Uint16(nested[16+16+2:]); typ != nldev.AttrResCQ|0x8000 {
		t.Errorf("Nested: table type %#x, want %#x", typ, nldev.AttrResCQ|0x8000)
	}
	if typ := ne.Uint16(plain[16+16+2:]); typ != nldev.AttrResCQ {
		t.Errorf("plain: table type %#x, want %#x", typ, nldev.AttrResCQ)
	}
}

func TestDecodeHandBuilt(t *testing.T) {
	tqp := nldev.MsgType(nldev.CmdResQPGet)
	gsi := qpEntry(attr(nldev.AttrPortIndex, u32(1)), attr(nldev.AttrResLQPN, u32(1)),
		attr(nldev.AttrResKernName, cstr("ib_core")), attr(nldev.AttrResSQPSN, u32(0)),
		attr(nldev.AttrResType, u8(1)), attr(nldev.AttrResState, u8(3)))
	wantGSI := nldev.QP{DevIndex: 2, DevName: "mlx5_1", Port: 1, LQPN: 1, Type: 1, State: 3, KernName: "ib_core"}
	tests := []struct {
		name  string
		reply []byte
		want  []nldev.QP
	}{
		{"empty dump", done(0), []nldev.QP{}},
		{"empty dump from an old kernel", msg(3, 2), []nldev.QP{}},
		{"one QP", cat(qpMsg(gsi), done(0)), []nldev.QP{wantGSI}},
		{"PAD attributes anywhere", cat(qpMsg(attr(0, nil), qpEntry(attr(0, nil), attr(nldev.AttrResLQPN, u32(5)),
			attr(0, u32(0)))), done(0)), []nldev.QP{{DevIndex: 2, DevName: "mlx5_1", LQPN: 5}}},
		{"NLA_F_NESTED and NLA_F_NET_BYTEORDER masked", cat(msg(tqp, 2, attr(nldev.AttrDevIndex, u32(2)),
			attr(nldev.AttrResQP|0x8000, attr(nldev.AttrResQPEntry|0x8000, attr(nldev.AttrResLQPN|0x4000, u32(9))))),
			done(0)), []nldev.QP{{DevIndex: 2, LQPN: 9}}},
		{"table continues in a second message", cat(qpMsg(gsi), qpMsg(gsi, gsi), done(0)),
			[]nldev.QP{wantGSI, wantGSI, wantGSI}},
		{"noop and ack messages are skipped", cat(msg(1, 0), qpMsg(gsi), msg(2, 0, u32(0), make([]byte, 16)), done(0)),
			[]nldev.QP{wantGSI}},
		{"message without table", cat(msg(tqp, 2, attr(nldev.AttrDevIndex, u32(2))), done(0)), []nldev.QP{}},
		{"non-entry attributes inside the table", cat(qpMsg(attr(77, u32(1)), gsi), done(0)), []nldev.QP{wantGSI}},
		{"last attribute without alignment padding", cat(msg(tqp, 2, attr(nldev.AttrDevIndex, u32(2)),
			attr(nldev.AttrResQP, cat(ne.AppendUint16(nil, 17), ne.AppendUint16(nil, nldev.AttrResQPEntry),
				attr(nldev.AttrResLQPN, u32(3)), attr(nldev.AttrResState, u8(6))[:5]))), done(0)),
			[]nldev.QP{{DevIndex: 2, LQPN: 3, State: 6}}},
		{"RES_TYPE repeated by mlx5 for driver QPs", cat(qpMsg(qpEntry(attr(nldev.AttrResLQPN, u32(3)),
			attr(nldev.AttrResType, u8(2)), attr(nldev.AttrResSubtype, cstr("DCI")), attr(nldev.AttrResType, u8(0xff)))), done(0)),
			[]nldev.QP{{DevIndex: 2, DevName: "mlx5_1", LQPN: 3, Type: 0xff, Subtype: "DCI"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nldev.DecodeQPs(tc.reply)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tqp := nldev.MsgType(nldev.CmdResQPGet)
	lqpn := attr(nldev.AttrResLQPN, u32(1))
	good := qpMsg(qpEntry(lqpn))
	tests := []struct {
		name   string
		reply  []byte
		errno  syscall.Errno // 0: expect ErrMalformed
		substr string
	}{
		{"nothing", nil, 0, "without NLMSG_DONE"},
		{"no NLMSG_DONE", good, 0, "without NLMSG_DONE"},
		{"NLMSG_ERROR", nltest.ErrorReply(syscall.EOPNOTSUPP), syscall.EOPNOTSUPP, ""},
		{"NLMSG_ERROR after data", cat(good, nltest.ErrorReply(syscall.ENOMEM)), syscall.ENOMEM, ""},
		{"errno in NLMSG_DONE", cat(good, done(-int32(syscall.EINVAL))), syscall.EINVAL, ""},
		// Bytes Linux 6.1 sent for a RES_QP_GET dump without DEV_INDEX (QEMU lab, rxe0).
		{"refused dump as 6.1 sends it", unhex("14000000030002002a000000e25c4bf8eaffffff"), syscall.EINVAL, ""},
		{"NLMSG_ERROR without code", msg(2, 0), 0, "NLMSG_ERROR with 0-byte payload"},
		{"NLMSG_OVERRUN", msg(4, 0), 0, "OVERRUN"},
		{"wrong message type", cat(msg(nldev.MsgType(nldev.CmdResCQGet), 2), done(0)), 0, "type 0x140c, want 0x140a"},
		{"nlmsg_len below header", cat([]byte{8, 0, 0, 0, 3, 0, 2, 0}, make([]byte, 12)), 0, "nlmsg_len 8"},
		{"nlmsg_len past end", cat(good[:4], []byte{}, good[4:len(good)-4]), 0, "nlmsg_len"},
		{"short header", []byte{1, 2, 3}, 0, "shorter than a netlink header"},
		{"bytes after NLMSG_DONE", cat(done(0), msg(1, 0)), 0, "after NLMSG_DONE"},
		{"nla_len zero", cat(msg(tqp, 2, attr(nldev.AttrDevIndex, u32(2)), []byte{0, 0, 5, 0}), done(0)), 0, "nla_len 0"},
		{"nla_len past end", cat(msg(tqp, 2, attr(nldev.AttrDevIndex, u32(2)), []byte{200, 0, 19, 0}), done(0)), 0, "nla_len 200"},
		{"nla_len past end inside entry", cat(qpMsg(attr(nldev.AttrResQPEntry, []byte{40, 0, 21, 0, 1, 0, 0, 0})), done(0)), 0, "nla_len 40"},
		{"stray bytes after attributes", cat(msg(tqp, 2, attr(nldev.AttrDevIndex, u32(2)), []byte{1, 2}), done(0)), 0, "stray bytes"},
		{"short u32", cat(qpMsg(qpEntry(attr(nldev.AttrResLQPN, []byte{1, 2}))), done(0)), 0, "RES_LQPN: 2 bytes, want 4"},
		{"long u8", cat(qpMsg(qpEntry(lqpn, attr(nldev.AttrResState, u32(6)))), done(0)), 0, "RES_STATE: 4 bytes, want 1"},
		{"QP without LQPN", cat(qpMsg(qpEntry(attr(nldev.AttrResState, u8(6)))), done(0)), 0, "no RES_LQPN"},
		{"message without DEV_INDEX", cat(msg(tqp, 2, attr(nldev.AttrResQP, qpEntry(lqpn))), done(0)), 0, "no DEV_INDEX"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nldev.DecodeQPs(tc.reply)
			if err == nil {
				t.Fatalf("decoded %+v, want an error", got)
			}
			if tc.errno != 0 {
				var e syscall.Errno
				if !errors.As(err, &e) || e != tc.errno {
					t.Fatalf("error %v, want errno %v", err, tc.errno)
				}
				return
			}
			if !errors.Is(err, nldev.ErrMalformed) {
				t.Errorf("error %v does not wrap ErrMalformed", err)
			}
			if !strings.Contains(err.Error(), tc.substr) || !strings.HasPrefix(err.Error(), "nldev QP dump: ") {
				t.Errorf("error %q, want it to start with the dump and mention %q", err, tc.substr)
			}
		})
	}
}

func TestDecodeErrorsNameTheEntry(t *testing.T) {
	e := nltest.Encoder{MaxMsg: 1}
	b := e.QPDump(1, "d", sampleQPs())
	// Corrupt the LQPN length of the third QP (third message).
	off := 0
	for i := 0; i < 2; i++ {
		off += int(ne.Uint32(b[off:]))
	}
	// header 16, DEV_INDEX 8, DEV_NAME "d\0" 8, table hdr 4, entry hdr 4: the first entry attr
	// of QP 3 is LQPN (it has no port).
	a := off + 16 + 8 + 8 + 4 + 4
	if ne.Uint16(b[a+2:]) != nldev.AttrResLQPN {
		t.Fatalf("layout assumption broken: attr type %d at %d", ne.Uint16(b[a+2:]), a)
	}
	ne.PutUint16(b[a:], 6)
	_, err := nldev.DecodeQPs(b)
	if err == nil || !strings.Contains(err.Error(), "message 2 at byte") || !strings.Contains(err.Error(), "RES_QP_ENTRY 2") {
		t.Errorf("error %v, want it to name message 2 and entry 2", err)
	}
}

func TestTruncatedRepliesNeverDecode(t *testing.T) {
	e := nltest.Encoder{MaxMsg: 120, PadU64: true}
	replies := map[string][]byte{
		"QP":      e.QPDump(1, "mlx5_0", sampleQPs()),
		"CQ":      e.CQDump(1, "mlx5_0", sampleCQs()),
		"device":  nltest.DevDump([]nldev.Device{{Index: 1, Name: "a", FWVersion: "1.2.3"}}),
		"port":    nltest.PortDump([]nldev.Port{{DevIndex: 1, Index: 1, HasIB: true, NetdevName: "ib0"}}),
		"summary": nltest.ResSummaryDump([]nldev.ResSummary{{DevIndex: 1, Counts: map[string]uint64{"qp": 1}}}),
	}
	decoders := map[string]func([]byte) error{
		"QP":      func(b []byte) error { _, err := nldev.DecodeQPs(b); return err },
		"CQ":      func(b []byte) error { _, err := nldev.DecodeCQs(b); return err },
		"device":  func(b []byte) error { _, err := nldev.DecodeDevices(b); return err },
		"port":    func(b []byte) error { _, err := nldev.DecodePorts(b); return err },
		"summary": func(b []byte) error { _, err := nldev.DecodeResSummary(b); return err },
	}
	for name, b := range replies {
		dec := decoders[name]
		if err := dec(b); err != nil {
			t.Fatalf("%s: full reply: %v", name, err)
		}
		for n := 0; n < len(b); n++ {
			err := dec(b[:n])
			if err == nil {
				t.Errorf("%s: reply cut to %d of %d bytes decoded without error", name, n, len(b))
			} else if !errors.Is(err, nldev.ErrMalformed) {
				t.Errorf("%s: cut to %d: %v is not ErrMalformed", name, n, err)
			}
		}
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		f    func(uint8) string
		v    uint8
		want string
	}{
		{nldev.QPStateName, 0, "RESET"}, {nldev.QPStateName, 3, "RTS"}, {nldev.QPStateName, 6, "ERR"},
		{nldev.QPStateName, 7, "UNKNOWN"}, {nldev.QPStateName, 255, "UNKNOWN"},
		{nldev.QPTypeName, 0, "SMI"}, {nldev.QPTypeName, 1, "GSI"}, {nldev.QPTypeName, 2, "RC"},
		{nldev.QPTypeName, 7, "UNKNOWN"}, {nldev.QPTypeName, 8, "RAW_PACKET"},
		{nldev.QPTypeName, 10, "XRC_TGT"}, {nldev.QPTypeName, 11, "UNKNOWN"}, {nldev.QPTypeName, 0xff, "DRIVER"},
		{nldev.PathMigStateName, 2, "ARMED"}, {nldev.PathMigStateName, 3, "UNKNOWN"},
		{nldev.PortStateName, 4, "ACTIVE"}, {nldev.PortStateName, 5, "ACTIVE_DEFER"}, {nldev.PortStateName, 6, "UNKNOWN"},
		{nldev.PortPhysStateName, 5, "LINK_UP"}, {nldev.PortPhysStateName, 3, "DISABLED"},
		{nldev.PortPhysStateName, 8, "UNKNOWN"}, {nldev.PortPhysStateName, 11, "OPA_TEST"}, {nldev.PortPhysStateName, 12, "UNKNOWN"},
		{nldev.NodeTypeName, 1, "ca"}, {nldev.NodeTypeName, 4, "rnic"}, {nldev.NodeTypeName, 7, "unspecified"},
		{nldev.NodeTypeName, 0, "unknown"}, {nldev.NodeTypeName, 9, "unknown"},
		{nldev.PollCtxName, 0, "DIRECT"}, {nldev.PollCtxName, 2, "WORKQUEUE"}, {nldev.PollCtxName, 3, "UNBOUND_WORKQUEUE"},
		{nldev.PollCtxName, 4, "UNKNOWN"},
	}
	for _, tc := range tests {
		if got := tc.f(tc.v); got != tc.want {
			t.Errorf("%d: got %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestGUID(t *testing.T) {
	for g, want := range map[nldev.GUID]string{
		0x505400fffe123456: "5054:00ff:fe12:3456",
		0x0002c90300317c2e: "0002:c903:0031:7c2e",
		0xfe80000000000000: "fe80:0000:0000:0000",
		0:                  "0000:0000:0000:0000",
	} {
		if g.String() != want {
			t.Errorf("%#x: got %q, want %q", uint64(g), g.String(), want)
		}
		if b, _ := g.MarshalText(); string(b) != want {
			t.Errorf("%#x: MarshalText %q", uint64(g), b)
		}
	}
}

func TestMsgType(t *testing.T) {
	// nlmsg_type values from the reference table (RDMA_NL_GET_TYPE(5, cmd)).
	for cmd, want := range map[uint16]uint16{nldev.CmdGet: 0x1401, nldev.CmdPortGet: 0x1405,
		nldev.CmdResGet: 0x1409, nldev.CmdResQPGet: 0x140a, nldev.CmdResCQGet: 0x140c} {
		if got := nldev.MsgType(cmd); got != want {
			t.Errorf("cmd %d: %#x, want %#x", cmd, got, want)
		}
	}
	if k := nldev.QPsRequest(3).Key(); k != "140a-0300-0800010003000000" {
		t.Errorf("QP request key %s", k)
	}
}

func TestDecodeCQPadBeforeU64(t *testing.T) {
	// nla_put_u64_64bit on a strict-alignment architecture: PAD (type 0, length 4) precedes
	// RES_USECNT so that its value lands 8-byte aligned.
	entry := attr(nldev.AttrResCQEntry, cat(
		attr(nldev.AttrResCQE, u32(255)),
		attr(nldev.AttrPad, nil),
		attr(nldev.AttrResUseCnt, u64(3)),
		attr(nldev.AttrResCQN, u32(12)),
		attr(nldev.AttrResPID, u32(77)),
	))
	reply := cat(msg(nldev.MsgType(nldev.CmdResCQGet), 2, attr(nldev.AttrDevIndex, u32(1)),
		attr(nldev.AttrDevName, cstr("bnxt_re0")), attr(nldev.AttrResCQ, entry)), done(0))
	got, err := nldev.DecodeCQs(reply)
	want := []nldev.CQ{{DevIndex: 1, DevName: "bnxt_re0", CQE: 255, Users: 3, CQN: 12, PID: 77}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v\nwant %+v", got, err, want)
	}
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// TestDecodeRaw checks the raw dumps' wire form as nldev.c builds it: the usual table and entry
// nests (without NLA_F_NESTED), each entry holding only the driver's RES_RAW bytes.
func TestDecodeRaw(t *testing.T) {
	traw := nldev.MsgType(nldev.CmdResQPGetRaw)
	ctx := []byte{0xde, 0xad, 0xbe, 0xef, 0x01}
	entry := func(a ...[]byte) []byte { return attr(nldev.AttrResQPEntry, cat(a...)) }
	rawMsg := func(entries ...[]byte) []byte {
		return msg(traw, 2, attr(nldev.AttrDevIndex, u32(3)), attr(nldev.AttrDevName, cstr("hns_0")),
			attr(nldev.AttrResQP, cat(entries...)))
	}
	got, err := nldev.DecodeQPsRaw(cat(rawMsg(entry(attr(nldev.AttrResRaw, ctx)), entry(attr(nldev.AttrResRaw, nil))), done(0)))
	if err != nil {
		t.Fatal(err)
	}
	want := []nldev.Raw{{DevIndex: 3, DevName: "hns_0", Data: ctx}, {DevIndex: 3, DevName: "hns_0", Data: []byte{}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if _, err := nldev.DecodeQPsRaw(cat(rawMsg(entry(attr(nldev.AttrResLQPN, u32(1)))), done(0))); !errors.Is(err, nldev.ErrMalformed) {
		t.Errorf("entry without RES_RAW: err %v, want ErrMalformed", err)
	}
	// A driver without raw contexts fails the dump with EINVAL in NLMSG_DONE.
	if _, err := nldev.DecodeQPsRaw(done(-int32(syscall.EINVAL))); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("refused dump: err %v, want EINVAL", err)
	}
	// The non-raw decoder refuses a raw reply: the message type names the command.
	if _, err := nldev.DecodeQPs(cat(rawMsg(entry(attr(nldev.AttrResRaw, ctx))), done(0))); !errors.Is(err, nldev.ErrMalformed) {
		t.Errorf("raw reply to the QP decoder: err %v, want ErrMalformed", err)
	}
	// Round trip through the test encoder, CQ side.
	cqs := []nldev.Raw{{DevIndex: 3, DevName: "hns_0", Data: make([]byte, 64)}}
	got, err = nldev.DecodeCQsRaw(nltest.CQRawDump(3, "hns_0", cqs))
	if err != nil || !reflect.DeepEqual(got, cqs) {
		t.Errorf("CQ raw round trip: %+v, %v", got, err)
	}
}
