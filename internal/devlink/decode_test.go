package devlink_test

import (
	"errors"
	"reflect"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/devlink"
)

const fam = 0x15

// The numbers of enum devlink_command and enum devlink_attr in include/uapi/linux/devlink.h,
// written out by hand. The constants come from x/sys/unix; this pins both sources to each other.
func TestConstantsMatchReference(t *testing.T) {
	for _, c := range []struct {
		got, want int
		name      string
	}{
		{int(devlink.CmdGet), 1, "CMD_GET"}, {int(devlink.CmdInfoGet), 51, "CMD_INFO_GET"},
		{int(devlink.CmdHealthReporterGet), 52, "CMD_HEALTH_REPORTER_GET"},
		{int(devlink.CmdHealthReporterDiagnose), 55, "CMD_HEALTH_REPORTER_DIAGNOSE"},
		{int(devlink.AttrBusName), 1, "BUS_NAME"}, {int(devlink.AttrDevName), 2, "DEV_NAME"},
		{int(devlink.AttrPortIndex), 3, "PORT_INDEX"},
		{int(devlink.AttrInfoDriverName), 98, "INFO_DRIVER_NAME"}, {int(devlink.AttrInfoSerialNumber), 99, "INFO_SERIAL_NUMBER"},
		{int(devlink.AttrInfoVersionFixed), 100, "INFO_VERSION_FIXED"}, {int(devlink.AttrInfoVersionRunning), 101, "INFO_VERSION_RUNNING"},
		{int(devlink.AttrInfoVersionStored), 102, "INFO_VERSION_STORED"}, {int(devlink.AttrInfoVersionName), 103, "INFO_VERSION_NAME"},
		{int(devlink.AttrInfoVersionValue), 104, "INFO_VERSION_VALUE"},
		{int(devlink.AttrFmsg), 106, "FMSG"}, {int(devlink.AttrFmsgObjNestStart), 107, "FMSG_OBJ_NEST_START"},
		{int(devlink.AttrFmsgPairNestStart), 108, "FMSG_PAIR_NEST_START"}, {int(devlink.AttrFmsgArrNestStart), 109, "FMSG_ARR_NEST_START"},
		{int(devlink.AttrFmsgNestEnd), 110, "FMSG_NEST_END"}, {int(devlink.AttrFmsgObjName), 111, "FMSG_OBJ_NAME"},
		{int(devlink.AttrFmsgObjValueType), 112, "FMSG_OBJ_VALUE_TYPE"}, {int(devlink.AttrFmsgObjValueData), 113, "FMSG_OBJ_VALUE_DATA"},
		{int(devlink.AttrHealthReporter), 114, "HEALTH_REPORTER"}, {int(devlink.AttrHealthReporterName), 115, "HEALTH_REPORTER_NAME"},
		{int(devlink.AttrHealthReporterState), 116, "HEALTH_REPORTER_STATE"}, {int(devlink.AttrHealthReporterErrCount), 117, "HEALTH_REPORTER_ERR_COUNT"},
		{int(devlink.AttrHealthReporterRecoverCount), 118, "HEALTH_REPORTER_RECOVER_COUNT"}, {int(devlink.AttrHealthReporterDumpTS), 119, "HEALTH_REPORTER_DUMP_TS"},
		{int(devlink.AttrHealthReporterGracePeriod), 120, "HEALTH_REPORTER_GRACEFUL_PERIOD"}, {int(devlink.AttrHealthReporterAutoRecover), 121, "HEALTH_REPORTER_AUTO_RECOVER"},
		{int(devlink.AttrHealthReporterDumpTSNs), 137, "HEALTH_REPORTER_DUMP_TS_NS"}, {int(devlink.AttrHealthReporterAutoDump), 141, "HEALTH_REPORTER_AUTO_DUMP"},
		{int(devlink.CtrlType), 0x10, "GENL_ID_CTRL"}, {int(devlink.CtrlCmdGetFamily), 3, "CTRL_CMD_GETFAMILY"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, reference says %d", c.name, c.got, c.want)
		}
	}
	if devlink.FamilyName != "devlink" {
		t.Errorf("family name %q", devlink.FamilyName)
	}
}

func handle(bus, dev string) []byte {
	return cat(attr(devlink.AttrBusName, cstr(bus)), attr(devlink.AttrDevName, cstr(dev)))
}

func TestDecodeFamily(t *testing.T) {
	reply := msg(0x10, 0, 1, attr(2, cstr("devlink")), attr(1, u16(0x15)), attr(3, u32(1)), attr(6|0x8000, attr(1, u32(1))))
	id, err := devlink.DecodeFamily(reply)
	if err != nil || id != 0x15 {
		t.Fatalf("id %#x err %v", id, err)
	}
	if _, err := devlink.DecodeFamily(nlErr(-2)); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("ENOENT reply: %v", err)
	}
	if _, err := devlink.DecodeFamily(msg(0x10, 0, 1, attr(2, cstr("devlink")))); !errors.Is(err, devlink.ErrMalformed) {
		t.Errorf("reply without id: %v", err)
	}
	if _, err := devlink.DecodeFamily(msg(0x10, 0, 1, attr(1, u32(0x15)))); !errors.Is(err, devlink.ErrMalformed) {
		t.Errorf("4-byte id: %v", err)
	}
}

func TestDecodeDevices(t *testing.T) {
	reply := cat(
		msg(fam, 2, 3, handle("pci", "0000:3b:00.0"), attr(200, u32(9))),
		msg(fam, 2, 3, handle("pci", "0000:3b:00.1")),
		msg(fam, 2, 3, handle("netdevsim", "netdevsim1")),
		done(0))
	hs, err := devlink.DecodeDevices(reply, fam)
	want := []devlink.Handle{devlink.PCI("0000:3b:00.0"), devlink.PCI("0000:3b:00.1"), {Bus: "netdevsim", Dev: "netdevsim1"}}
	if err != nil || !reflect.DeepEqual(hs, want) {
		t.Fatalf("%+v %v", hs, err)
	}
	if hs[0].String() != "pci/0000:3b:00.0" || devlink.PCI("0000:3B:00.0") != hs[0] {
		t.Errorf("handle naming %s", hs[0])
	}
	if hs, err := devlink.DecodeDevices(done(0), fam); err != nil || len(hs) != 0 {
		t.Errorf("empty dump: %v %v", hs, err)
	}
}

// An mlx5 PF with a flashed update: mlx5_devlink_info_get (mlx5/core/devlink.c) puts fw.psid
// fixed, "fw.version" and "fw" running and stored.
func mlx5Info(running, stored string) []byte {
	ver := func(t uint16, n, v string) []byte {
		return attr(t|0x8000, cat(attr(devlink.AttrInfoVersionName, cstr(n)), attr(devlink.AttrInfoVersionValue, cstr(v))))
	}
	return msg(fam, 0, devlink.CmdInfoGet, handle("pci", "0000:3b:00.0"),
		attr(devlink.AttrInfoDriverName, cstr("mlx5_core")),
		attr(devlink.AttrInfoSerialNumber, cstr("MT2244X01234")),
		attr(146, cstr("MT2244X01234")), // INFO_BOARD_SERIAL_NUMBER, not read
		ver(devlink.AttrInfoVersionFixed, "fw.psid", "MT_0000000838"),
		ver(devlink.AttrInfoVersionRunning, "fw.version", running),
		ver(devlink.AttrInfoVersionRunning, "fw", running),
		ver(devlink.AttrInfoVersionStored, "fw.version", stored),
		ver(devlink.AttrInfoVersionStored, "fw", stored))
}

func TestDecodeInfoKeepsRunningAndStoredApart(t *testing.T) {
	info, err := devlink.DecodeInfo(mlx5Info("28.39.1002", "28.41.1000"), fam)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := info.RunningVersion("fw.version")
	s, _ := info.StoredVersion("fw.version")
	p, _ := info.FixedVersion("fw.psid")
	if r != "28.39.1002" || s != "28.41.1000" || p != "MT_0000000838" || info.Driver != "mlx5_core" || info.Serial != "MT2244X01234" {
		t.Errorf("%+v", info)
	}
	if _, ok := info.StoredVersion("fw.psid"); ok {
		t.Error("fixed version leaked into stored")
	}
	if len(info.Running) != 2 || info.Handle != devlink.PCI("0000:3b:00.0") {
		t.Errorf("%+v", info)
	}
	// A VF answers with the driver name only (mlx5 puts versions for PFs only).
	info, err = devlink.DecodeInfo(msg(fam, 0, devlink.CmdInfoGet, handle("pci", "0000:3b:00.2"), attr(devlink.AttrInfoDriverName, cstr("mlx5_core"))), fam)
	if err != nil || len(info.Running)+len(info.Stored)+len(info.Fixed) != 0 {
		t.Errorf("VF info %+v %v", info, err)
	}
}

func reporterMsg(dev string, port *uint32, nest ...[]byte) []byte {
	attrs := [][]byte{handle("pci", dev)}
	if port != nil {
		attrs = append(attrs, attr(devlink.AttrPortIndex, u32(*port)))
	}
	attrs = append(attrs, attr(devlink.AttrHealthReporter|0x8000, cat(nest...)))
	return msg(fam, 2, devlink.CmdHealthReporterGet, attrs...)
}

func TestDecodeReporters(t *testing.T) {
	port := uint32(65535)
	pad := attr(61, nil)
	reply := cat(
		reporterMsg("0000:3b:00.0", nil,
			attr(devlink.AttrHealthReporterName, cstr("fw")), attr(devlink.AttrHealthReporterState, u8(1)),
			pad, attr(devlink.AttrHealthReporterErrCount, u64(2)), pad, attr(devlink.AttrHealthReporterRecoverCount, u64(0)),
			attr(devlink.AttrHealthReporterAutoDump, u8(1)), attr(250, u32(1))),
		reporterMsg("0000:3b:00.0", nil,
			attr(devlink.AttrHealthReporterName, cstr("fw_fatal")), attr(devlink.AttrHealthReporterState, u8(0)),
			attr(devlink.AttrHealthReporterErrCount, u64(0)), attr(devlink.AttrHealthReporterRecoverCount, u64(0)),
			attr(devlink.AttrHealthReporterGracePeriod, u64(60000)), attr(devlink.AttrHealthReporterAutoRecover, u8(1)),
			attr(devlink.AttrHealthReporterDumpTS, u64(5000)), attr(devlink.AttrHealthReporterDumpTSNs, u64(1767225600000000000))),
		reporterMsg("0000:3b:00.0", &port,
			attr(devlink.AttrHealthReporterName, cstr("tx")), attr(devlink.AttrHealthReporterState, u8(0)),
			attr(devlink.AttrHealthReporterErrCount, u64(5)), attr(devlink.AttrHealthReporterRecoverCount, u64(5)),
			attr(devlink.AttrHealthReporterGracePeriod, u64(500)), attr(devlink.AttrHealthReporterAutoRecover, u8(1))),
		done(0))
	rs, err := devlink.DecodeReporters(reply, fam)
	if err != nil {
		t.Fatal(err)
	}
	h := devlink.PCI("0000:3b:00.0")
	want := []devlink.Reporter{
		{Handle: h, Name: "fw", State: devlink.StateError, ErrCount: 2, AutoDump: true, HasAutoDump: true},
		{Handle: h, Name: "fw_fatal", GracePeriod: 60000, HasGracePeriod: true, AutoRecover: true, DumpTSNs: 1767225600000000000},
		{Handle: h, Port: 65535, HasPort: true, Name: "tx", ErrCount: 5, RecoverCount: 5, GracePeriod: 500, HasGracePeriod: true, AutoRecover: true},
	}
	if !reflect.DeepEqual(rs, want) {
		t.Errorf("got  %+v\nwant %+v", rs, want)
	}
	if rs[0].StateName() != "error" || rs[1].StateName() != "healthy" || (devlink.Reporter{State: 7}).StateName() != "<unknown state>" {
		t.Error("state names")
	}
}

// fmsgItems is the fmsg of mlx5's vnic reporter (diag/reporter_vnic.c: a "vNIC env counters"
// pair holding an object of u32/u64 pairs) inside the object devlink_health_diagnose adds.
func vnicItems(cqOverrun uint32) [][]byte {
	flag := func(t uint16) []byte { return attr(t, nil) }
	pairU32 := func(name string, v uint32) []byte {
		return cat(flag(devlink.AttrFmsgPairNestStart), attr(devlink.AttrFmsgObjName, cstr(name)),
			attr(devlink.AttrFmsgObjValueType, u8(devlink.TypeU32)), attr(devlink.AttrFmsgObjValueData, u32(v)), flag(devlink.AttrFmsgNestEnd))
	}
	return [][]byte{
		flag(devlink.AttrFmsgObjNestStart),
		flag(devlink.AttrFmsgPairNestStart), attr(devlink.AttrFmsgObjName, cstr("vNIC env counters")), flag(devlink.AttrFmsgObjNestStart),
		pairU32("total_error_queues", 0), pairU32("send_queue_priority_update_flow", 0),
		pairU32("comp_eq_overrun", 0), pairU32("async_eq_overrun", 0), pairU32("cq_overrun", cqOverrun),
		pairU32("invalid_command", 0), pairU32("quota_exceeded_command", 0),
		cat(flag(devlink.AttrFmsgPairNestStart), attr(devlink.AttrFmsgObjName, cstr("nic_receive_steering_discard")),
			attr(devlink.AttrFmsgObjValueType, u8(devlink.TypeU64)), attr(devlink.AttrFmsgObjValueData, u64(12)), flag(devlink.AttrFmsgNestEnd)),
		flag(devlink.AttrFmsgNestEnd), flag(devlink.AttrFmsgNestEnd),
		flag(devlink.AttrFmsgNestEnd),
	}
}

func TestDecodeDiagnoseVnicSplitAcrossMessages(t *testing.T) {
	items := vnicItems(3)
	// devlink_fmsg_snd: NLM_F_MULTI messages, each with its own FMSG nest, cut mid-object; then
	// an NLMSG_DONE without payload.
	reply := cat(
		msg(fam, 2, devlink.CmdHealthReporterDiagnose, attr(devlink.AttrFmsg, cat(items[:5]...))),
		msg(fam, 2, devlink.CmdHealthReporterDiagnose, attr(devlink.AttrFmsg|0x8000, cat(items[5:]...)), attr(300, u8(1))),
		rawMsg(3, nil))
	obj, err := devlink.DecodeDiagnose(reply, fam)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := obj.Find("cq_overrun")
	if n, isU := devlink.Uint(v); !ok || !isU || n != 3 {
		t.Errorf("cq_overrun %v %v", v, ok)
	}
	inner, _ := obj.Get("vNIC env counters")
	o, ok := inner.(devlink.Object)
	if !ok || len(o) != 8 || o[7].Name != "nic_receive_steering_discard" || o[7].Value != uint64(12) {
		t.Errorf("inner %#v", inner)
	}
	if _, ok := obj.Find("no_such_counter"); ok {
		t.Error("found a missing counter")
	}
}

func TestDecodeDiagnoseValueTypes(t *testing.T) {
	flag := func(t uint16) []byte { return attr(t, nil) }
	pair := func(name string, val ...[]byte) []byte {
		return cat(flag(devlink.AttrFmsgPairNestStart), attr(devlink.AttrFmsgObjName, cstr(name)), cat(val...), flag(devlink.AttrFmsgNestEnd))
	}
	scalar := func(typ uint8, data []byte) []byte {
		return cat(attr(devlink.AttrFmsgObjValueType, u8(typ)), attr(devlink.AttrFmsgObjValueData, data))
	}
	fm := cat(flag(devlink.AttrFmsgObjNestStart),
		pair("b", scalar(devlink.TypeFlag, u8(1))),
		pair("old_false", attr(devlink.AttrFmsgObjValueType, u8(devlink.TypeFlag))), // no data: false
		pair("u8", scalar(devlink.TypeU8, u8(7))),
		pair("s", scalar(devlink.TypeNulString, cstr("Syndrome"))),
		pair("bin", scalar(devlink.TypeBinary, []byte{1, 2, 3})),
		pair("future", scalar(99, []byte{9})),
		pair("arr", flag(devlink.AttrFmsgArrNestStart), scalar(devlink.TypeU32, u32(1)),
			flag(devlink.AttrFmsgObjNestStart), pair("sqn", scalar(devlink.TypeU32, u32(0x45))), flag(devlink.AttrFmsgNestEnd),
			flag(devlink.AttrFmsgNestEnd)),
		pair("empty"),
		// nla_put_u64_64bit puts DEVLINK_ATTR_PAD between a u64's type and data where needed.
		pair("padded", attr(devlink.AttrFmsgObjValueType, u8(devlink.TypeU64)), attr(devlink.AttrPad, nil), attr(devlink.AttrFmsgObjValueData, u64(5))),
		flag(devlink.AttrFmsgNestEnd))
	obj, err := devlink.DecodeDiagnose(cat(msg(fam, 2, 55, attr(devlink.AttrFmsg, fm)), rawMsg(3, nil)), fam)
	if err != nil {
		t.Fatal(err)
	}
	want := devlink.Object{{Name: "b", Value: true}, {Name: "old_false", Value: false}, {Name: "u8", Value: uint8(7)},
		{Name: "s", Value: "Syndrome"}, {Name: "bin", Value: []byte{1, 2, 3}}, {Name: "future", Value: []byte{9}},
		{Name: "arr", Value: devlink.Array{uint32(1), devlink.Object{{Name: "sqn", Value: uint32(0x45)}}}},
		{Name: "empty"}, {Name: "padded", Value: uint64(5)}}
	if !reflect.DeepEqual(obj, want) {
		t.Errorf("got  %#v\nwant %#v", obj, want)
	}
	if v, ok := obj.Find("sqn"); !ok || v != uint32(0x45) {
		t.Errorf("Find in array: %v", v)
	}
}

func TestDecodeErrors(t *testing.T) {
	good := cat(reporterMsg("0000:3b:00.0", nil, attr(devlink.AttrHealthReporterName, cstr("fw"))), done(0))
	flag := func(t uint16) []byte { return attr(t, nil) }
	diag := func(items ...[]byte) []byte {
		return cat(msg(fam, 2, 55, attr(devlink.AttrFmsg, cat(items...))), rawMsg(3, nil))
	}
	for _, c := range []struct {
		name string
		b    []byte
		dec  func([]byte) error
		want error
	}{
		{"reporters truncated", good[:len(good)-25], decRep, devlink.ErrMalformed},
		{"reporters without done", good[:len(good)-20], decRep, devlink.ErrMalformed},
		{"bytes after done", cat(good, done(0)), decRep, devlink.ErrMalformed},
		{"kernel EINVAL in done", done(-22), decRep, syscall.EINVAL},
		{"kernel EPERM", nlErr(-1), decDiag, syscall.EPERM},
		{"wrong family", cat(msg(0x99, 2, 52, handle("pci", "x")), done(0)), decRep, devlink.ErrMalformed},
		{"no genl header", cat(rawMsg(fam, []byte{1, 2}), done(0)), decDev, devlink.ErrMalformed},
		{"device without name", cat(msg(fam, 2, 3, attr(devlink.AttrBusName, cstr("pci"))), done(0)), decDev, devlink.ErrMalformed},
		{"reporter without nest", cat(msg(fam, 2, 52, handle("pci", "x")), done(0)), decRep, devlink.ErrMalformed},
		{"reporter count of 4 bytes", cat(reporterMsg("x", nil, attr(devlink.AttrHealthReporterName, cstr("fw")), attr(devlink.AttrHealthReporterErrCount, u32(1))), done(0)), decRep, devlink.ErrMalformed},
		{"attribute overruns", cat(msg(fam, 2, 3, []byte{200, 0, 1, 0}), done(0)), decDev, devlink.ErrMalformed},
		{"info version without name", msg(fam, 0, 51, handle("pci", "x"), attr(devlink.AttrInfoVersionRunning, attr(devlink.AttrInfoVersionValue, cstr("1")))), decInfo, devlink.ErrMalformed},
		{"info empty", nil, decInfo, devlink.ErrMalformed},
		{"two infos", cat(mlx5Info("1", "1"), mlx5Info("1", "1")), decInfo, devlink.ErrMalformed},
		{"diag empty", diag(), decDiag, devlink.ErrMalformed},
		{"diag unclosed", diag(vnicItems(1)[:6]...), decDiag, devlink.ErrMalformed},
		{"diag extra end", diag(append(vnicItems(1), flag(devlink.AttrFmsgNestEnd))...), decDiag, devlink.ErrMalformed},
		{"diag starts with pair", diag(flag(devlink.AttrFmsgPairNestStart)), decDiag, devlink.ErrMalformed},
		{"diag value in object", diag(flag(devlink.AttrFmsgObjNestStart), attr(devlink.AttrFmsgObjValueType, u8(3)), attr(devlink.AttrFmsgObjValueData, u32(1)), flag(devlink.AttrFmsgNestEnd)), decDiag, devlink.ErrMalformed},
		{"diag data without type", diag(flag(devlink.AttrFmsgObjNestStart), flag(devlink.AttrFmsgPairNestStart), attr(devlink.AttrFmsgObjName, cstr("a")), attr(devlink.AttrFmsgObjValueData, u32(1)), flag(devlink.AttrFmsgNestEnd), flag(devlink.AttrFmsgNestEnd)), decDiag, devlink.ErrMalformed},
		{"diag u32 of 2 bytes", diag(flag(devlink.AttrFmsgObjNestStart), flag(devlink.AttrFmsgPairNestStart), attr(devlink.AttrFmsgObjName, cstr("a")), attr(devlink.AttrFmsgObjValueType, u8(3)), attr(devlink.AttrFmsgObjValueData, u16(1)), flag(devlink.AttrFmsgNestEnd), flag(devlink.AttrFmsgNestEnd)), decDiag, devlink.ErrMalformed},
		{"diag pair without name", diag(flag(devlink.AttrFmsgObjNestStart), flag(devlink.AttrFmsgPairNestStart), flag(devlink.AttrFmsgNestEnd), flag(devlink.AttrFmsgNestEnd)), decDiag, devlink.ErrMalformed},
		{"diag too deep", diag(deep(70)...), decDiag, devlink.ErrMalformed},
		{"diag without done", msg(fam, 2, 55, attr(devlink.AttrFmsg, cat(vnicItems(1)...))), decDiag, devlink.ErrMalformed},
	} {
		err := c.dec(c.b)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func deep(n int) [][]byte {
	out := [][]byte{attr(devlink.AttrFmsgObjNestStart, nil)}
	for i := 0; i < n; i++ {
		out = append(out, attr(devlink.AttrFmsgPairNestStart, nil), attr(devlink.AttrFmsgObjName, cstr("x")), attr(devlink.AttrFmsgObjNestStart, nil))
	}
	return out
}

func decRep(b []byte) error  { _, err := devlink.DecodeReporters(b, fam); return err }
func decDev(b []byte) error  { _, err := devlink.DecodeDevices(b, fam); return err }
func decInfo(b []byte) error { _, err := devlink.DecodeInfo(b, fam); return err }
func decDiag(b []byte) error { _, err := devlink.DecodeDiagnose(b, fam); return err }
