package devlink_test

import (
	"errors"
	"reflect"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/devlink/dltest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

var (
	pf0 = devlink.PCI("0000:3b:00.0")
	pf1 = devlink.PCI("0000:3b:00.1")
)

func sampleModel() dltest.Model {
	return dltest.Model{
		Family:  0x1b,
		Devices: []devlink.Handle{pf0, pf1},
		Infos: []devlink.Info{{Handle: pf0, Driver: "mlx5_core", Serial: "MT2244X01234",
			Fixed:   []devlink.Version{{Name: "fw.psid", Value: "MT_0000000838"}},
			Running: []devlink.Version{{Name: "fw.version", Value: "28.39.1002"}, {Name: "fw", Value: "28.39.1002"}},
			Stored:  []devlink.Version{{Name: "fw.version", Value: "28.41.1000"}, {Name: "fw", Value: "28.41.1000"}}}},
		Reporters: []devlink.Reporter{
			{Handle: pf0, Name: "fw", ErrCount: 2, AutoDump: true, HasAutoDump: true},
			{Handle: pf0, Name: "vnic"},
			{Handle: pf1, Name: "fw_fatal", GracePeriod: 60000, HasGracePeriod: true, AutoRecover: true},
			{Handle: pf1, Port: 65535, HasPort: true, Name: "tx", GracePeriod: 500, HasGracePeriod: true, AutoRecover: true},
		},
		Diagnoses: []dltest.Diagnosis{
			{Handle: pf0, Reporter: "vnic", Object: devlink.Object{{Name: "vNIC env counters", Value: devlink.Object{{Name: "cq_overrun", Value: uint32(3)}, {Name: "nic_receive_steering_discard", Value: uint64(7)}}}}},
			{Handle: pf1, Reporter: "vnic", Errno: syscall.EPERM},
		},
		Encoder: dltest.Encoder{PadU64: true, Nested: true, FmsgItems: 3, Extra: attr(400, u32(1))},
	}
}

func TestClientOnModel(t *testing.T) {
	m := sampleModel()
	c := devlink.NewClient(m.Conn())
	devs, err := c.Devices()
	if err != nil || !reflect.DeepEqual(devs, m.Devices) {
		t.Fatalf("devices %v %v", devs, err)
	}
	info, err := c.Info(pf0)
	if err != nil || !reflect.DeepEqual(*info, m.Infos[0]) {
		t.Errorf("info %+v %v", info, err)
	}
	if _, err := c.Info(pf1); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("info without driver support: %v", err)
	}
	rs, err := c.Reporters()
	if err != nil || !reflect.DeepEqual(rs, m.Reporters) {
		t.Errorf("reporters %+v %v", rs, err)
	}
	obj, err := c.Diagnose(pf0, "vnic")
	if err != nil || !reflect.DeepEqual(obj, m.Diagnoses[0].Object) {
		t.Errorf("diagnose %#v %v", obj, err)
	}
	if _, err := c.Diagnose(pf1, "vnic"); !errors.Is(err, syscall.EPERM) {
		t.Errorf("diagnose without CAP_NET_ADMIN: %v", err)
	}
}

func TestReportersFallBackToPerDeviceDumps(t *testing.T) {
	m := sampleModel()
	m.GlobalDumpEINVAL = true
	conn := m.Conn()
	rs, err := devlink.NewClient(conn).Reporters()
	if err != nil || !reflect.DeepEqual(rs, m.Reporters) {
		t.Fatalf("%+v %v", rs, err)
	}
	var perDevice int
	for _, r := range conn.Requests {
		if r.Key() == devlink.DeviceReportersRequest(m.Family, pf0).Key() || r.Key() == devlink.DeviceReportersRequest(m.Family, pf1).Key() {
			perDevice++
		}
	}
	if perDevice != 2 {
		t.Errorf("%d per-device dumps in %d requests", perDevice, len(conn.Requests))
	}
}

func TestNoDevlink(t *testing.T) {
	c := devlink.NewClient(dltest.Model{}.Conn())
	_, err := c.Devices()
	if !errors.Is(err, devlink.ErrNoDevlink) || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("kernel without devlink: %v", err)
	}
	if _, err := devlink.NewClient(nil).Reporters(); !errors.Is(err, host.ErrNotRecorded) {
		t.Errorf("nil conn: %v", err)
	}
}

// A recording keeps the family id the recorded kernel assigned; replayed anywhere, the requests
// carry it and find their answers.
func TestRecordReplayKeepsFamilyID(t *testing.T) {
	dir := t.TempDir()
	rec := devlink.NewClient(netlinkraw.NewRecorder(sampleModel().Conn(), dir))
	if _, err := rec.Devices(); err != nil {
		t.Fatal(err)
	}
	rec.Info(pf0)
	rec.Info(pf1)
	rec.Reporters()
	rec.Diagnose(pf0, "vnic")
	rec.Diagnose(pf1, "vnic")
	replay := devlink.NewClient(netlinkraw.NewReplay(dir))
	fam, err := replay.Family()
	if err != nil || fam != 0x1b {
		t.Fatalf("replayed family %#x %v", fam, err)
	}
	info, err := replay.Info(pf0)
	if s, _ := info.StoredVersion("fw.version"); err != nil || s != "28.41.1000" {
		t.Errorf("replayed info %+v %v", info, err)
	}
	if _, err := replay.Info(pf1); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("replayed EOPNOTSUPP: %v", err)
	}
	if _, err := replay.Diagnose(pf1, "vnic"); !errors.Is(err, syscall.EPERM) {
		t.Errorf("replayed EPERM: %v", err)
	}
	obj, err := replay.Diagnose(pf0, "vnic")
	if v, _ := obj.Find("cq_overrun"); err != nil || v != uint32(3) {
		t.Errorf("replayed diagnose %v %v", obj, err)
	}
	// A question never asked while recording is not answered.
	if _, err := replay.Diagnose(pf0, "fw"); !errors.Is(err, host.ErrNotRecorded) {
		t.Errorf("unrecorded request: %v", err)
	}
	// A kernel without devlink replays as one too.
	dir2 := t.TempDir()
	devlink.NewClient(netlinkraw.NewRecorder(dltest.Model{}.Conn(), dir2)).Devices()
	if _, err := devlink.NewClient(netlinkraw.NewReplay(dir2)).Devices(); !errors.Is(err, devlink.ErrNoDevlink) {
		t.Errorf("replayed ENOENT: %v", err)
	}
}
