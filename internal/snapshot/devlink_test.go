package snapshot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/devlink/dltest"
	"github.com/rdmadiag/rdmadiag/internal/host"
)

// askDevlink asks what the firmware and CQ checks ask of devlink, as a recording's Ask would by
// running them.
func askDevlink(view *host.Host) {
	c := devlink.NewClient(view.Devlink())
	devs, _ := c.Devices()
	for _, d := range devs {
		c.Info(d)
	}
	rs, _ := c.Reporters()
	for _, r := range rs {
		c.Diagnose(r.Handle, r.Name)
	}
}

// Record stores every devlink answer asked through its view under devlink/, and Open replays
// them, the kernel's refusals (EOPNOTSUPP, EPERM) included.
func TestRecordOpenDevlink(t *testing.T) {
	pf := devlink.PCI("0000:3b:00.0")
	other := devlink.PCI("0000:5e:00.0")
	m := dltest.Model{Family: 0x1a, Devices: []devlink.Handle{pf, other},
		Infos:     []devlink.Info{{Handle: pf, Driver: "mlx5_core", Running: []devlink.Version{{Name: "fw.version", Value: "28.39.1002"}}, Stored: []devlink.Version{{Name: "fw.version", Value: "28.41.1000"}}}},
		Reporters: []devlink.Reporter{{Handle: pf, Name: "fw", ErrCount: 2}, {Handle: pf, Name: "vnic"}, {Handle: other, Name: "vnic"}},
		Diagnoses: []dltest.Diagnosis{
			{Handle: pf, Reporter: "vnic", Object: devlink.Object{{Name: "vNIC env counters", Value: devlink.Object{{Name: "cq_overrun", Value: uint32(3)}}}}},
			{Handle: other, Reporter: "vnic", Errno: syscall.EPERM},
		}}
	root := t.TempDir()
	src, err := host.New(host.Options{Root: root, Kind: host.KindRoot, Devlink: m.Conn()})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "snap")
	if err := Record(src, dir, RecordOptions{ToolVersion: "test", Now: time.Unix(0, 0), Ask: askDevlink}); err != nil {
		t.Fatal(err)
	}
	h, err := openDir(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	c := devlink.NewClient(h.Devlink())
	info, err := c.Info(pf)
	if s, _ := info.StoredVersion("fw.version"); err != nil || s != "28.41.1000" {
		t.Errorf("info %+v %v", info, err)
	}
	if _, err := c.Info(other); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("info of an instance without it: %v", err)
	}
	rs, err := c.Reporters()
	if err != nil || len(rs) != 3 {
		t.Errorf("reporters %+v %v", rs, err)
	}
	obj, err := c.Diagnose(pf, "vnic")
	if v, _ := obj.Find("cq_overrun"); err != nil || v != uint32(3) {
		t.Errorf("vnic %v %v", obj, err)
	}
	if _, err := c.Diagnose(other, "vnic"); !errors.Is(err, syscall.EPERM) {
		t.Errorf("vnic without CAP_NET_ADMIN: %v", err)
	}

	// A kernel without devlink is recorded as such and is no recording failure.
	src, _ = host.New(host.Options{Root: root, Kind: host.KindRoot, Devlink: dltest.Model{}.Conn()})
	dir = filepath.Join(t.TempDir(), "snap")
	if err := Record(src, dir, RecordOptions{Now: time.Unix(0, 0), Ask: askDevlink}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, MetaFile)); contains(b, `"devlink"`) {
		t.Errorf("meta lists devlink as unreadable: %s", b)
	}
	h, _ = openDir(dir, "test")
	if _, err := devlink.NewClient(h.Devlink()).Devices(); !errors.Is(err, devlink.ErrNoDevlink) {
		t.Errorf("replayed kernel without devlink: %v", err)
	}
}

func contains(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }
