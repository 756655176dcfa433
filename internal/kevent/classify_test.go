package kevent

import (
	"testing"
	"testing/fstest"

	"github.com/rdmadiag/rdmadiag/internal/kmsg"
)

// A small table of its own, so that the classifier's rules are tested apart from the data.
const testTable = `{"drivers": [
  {"name": "mlx5_core", "layer": "firmware", "prefixes": ["mlx5_core "], "device": "pci", "source": "dev_printk"},
  {"name": "ib_core", "layer": "driver", "prefixes": ["infiniband "], "device": "ib", "source": "ibdev_printk"},
  {"name": "net", "layer": "driver", "prefixes": [], "source": "netdev_printk"}],
 "signatures": [
  {"id": "cq-error", "driver": "mlx5_core", "format": "CQ error on CQN 0x%x, syndrome 0x%x", "source": "eq.c", "kernels": "6.1",
   "level": "err", "layer": "cq", "fault": "cq-eq", "severity": "warning", "what": "w", "fix": "f", "detail": "syndrome 0x{2}"},
  {"id": "generic-error", "driver": "mlx5_core", "format": "CQ error on %s", "source": "x.c", "kernels": "6.1",
   "level": "err", "layer": "cq", "fault": "cq-eq", "severity": "warning", "what": "w", "fix": "f"},
  {"id": "link", "driver": "mlx5_core", "format": "%s: Link %s", "source": "en_main.c", "kernels": "6.1", "kind": "link",
   "values": {"2": ["up", "down"]}, "args": {"netdev": 1, "state": 2},
   "level": "info", "layer": "port", "fault": "port-link", "severity": "info", "what": "w"},
  {"id": "watchdog", "driver": "net", "format": "NETDEV WATCHDOG: %s (%s): transmit queue %u timed out", "source": "sch_generic.c", "kernels": "6.1",
   "rdma_only": true, "args": {"netdev": 1},
   "level": "info", "layer": "driver", "fault": "netdev-tx", "severity": "warning", "what": "w", "fix": "f"},
  {"id": "iommu", "driver": "net", "format": "Request device [%02x:%02x.%d] fault addr 0x%llx", "source": "dmar.c", "kernels": "6.1",
   "args": {"pci": 1}, "level": "err", "layer": "pcie", "fault": "dma-engine", "severity": "warning", "what": "w", "fix": "f"}
 ]}`

func testTableOf(t *testing.T) *Table {
	t.Helper()
	tb, err := Load(fstest.MapFS{"signatures/t.json": {Data: []byte(testTable)}})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func TestClassify(t *testing.T) {
	tb := testTableOf(t)
	devs := []Device{{Name: "mlx5_0", PCI: "0000:3b:00.0", Netdevs: map[string]int{"ens1f0": 1}}}
	for _, tc := range []struct {
		name, text     string
		level          int
		noLevel        bool
		sig, dev, pci  string
		netdev, state  string
		port           int
		detail         string
		none, unrecogn bool
	}{
		{name: "the most specific entry wins", text: "mlx5_core 0000:3b:00.0: CQ error on CQN 0x12, syndrome 0x1", sig: "cq-error", dev: "mlx5_0", pci: "0000:3b:00.0", detail: "syndrome 0x1"},
		{name: "the general entry still matches its own", text: "mlx5_core 0000:3b:00.0: CQ error on something", sig: "generic-error", dev: "mlx5_0", pci: "0000:3b:00.0"},
		{name: "another function keeps its address", text: "mlx5_core 0000:af:00.1: CQ error on CQN 0x12, syndrome 0x2", sig: "cq-error", pci: "0000:af:00.1", detail: "syndrome 0x2"},
		{name: "a short format is scoped to its driver's lines", text: "mlx5_core 0000:3b:00.0 ens1f0: Link down", sig: "link", dev: "mlx5_0", pci: "0000:3b:00.0", netdev: "ens1f0", state: "down", port: 1},
		{name: "out of scope it is no event", text: "e1000e 0000:00:19.0 eno1: Link down", none: true},
		{name: "rdma_only tied through the netdev", text: "NETDEV WATCHDOG: ens1f0 (mlx5_core): transmit queue 3 timed out", sig: "watchdog", dev: "mlx5_0", pci: "0000:3b:00.0", netdev: "ens1f0", port: 1},
		{name: "rdma_only about another netdev is no event", text: "NETDEV WATCHDOG: eno1 (e1000e): transmit queue 3 timed out", none: true},
		{name: "a PCI address built of parts", text: "DMAR: [DMA Read NO_PASID] Request device [3b:00.0] fault addr 0xdead000", sig: "iommu", dev: "mlx5_0", pci: "0000:3b:00.0"},
		{name: "an unknown error of a known driver", text: "mlx5_core 0000:3b:00.0: something new broke", level: 3, unrecogn: true, dev: "mlx5_0", pci: "0000:3b:00.0"},
		{name: "an unknown info line is no event", text: "mlx5_core 0000:3b:00.0: something new happened", level: 6, none: true},
		{name: "no level: an error by its words", text: "infiniband mlx5_0: failed to do a new thing", noLevel: true, level: kmsg.NeutralLevel, unrecogn: true, dev: "mlx5_0", pci: "0000:3b:00.0"},
		{name: "no level and no error words", text: "infiniband mlx5_0: did a new thing", noLevel: true, level: kmsg.NeutralLevel, none: true},
		{name: "an error of a driver the table does not know", text: "e1000e 0000:00:19.0: it broke", level: 3, none: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := tb.Classify([]kmsg.Record{{Level: tc.level, NoLevel: tc.noLevel, Text: tc.text, Seq: 7}}, devs)
			if tc.none {
				if len(evs) != 0 {
					t.Fatalf("got %d events (%+v), want none", len(evs), evs)
				}
				return
			}
			if len(evs) != 1 {
				t.Fatalf("got %d events, want 1", len(evs))
			}
			e := evs[0]
			if tc.unrecogn != !e.Recognised() {
				t.Fatalf("recognised %v (%+v)", e.Recognised(), e.Sig)
			}
			if !tc.unrecogn && e.Sig.ID != tc.sig {
				t.Errorf("signature %s, want %s", e.Sig.ID, tc.sig)
			}
			if e.Device != tc.dev || e.PCI != tc.pci || e.Netdev != tc.netdev || e.State != tc.state || e.Port != tc.port || e.Detail() != tc.detail {
				t.Errorf("got dev %q pci %q netdev %q state %q port %d detail %q", e.Device, e.PCI, e.Netdev, e.State, e.Port, e.Detail())
			}
			if e.Key() != "kmsg:7" {
				t.Errorf("key %q", e.Key())
			}
		})
	}
}

func TestLoadRefuses(t *testing.T) {
	for name, js := range map[string]string{
		"unknown field":      `{"drivers": [], "signatures": [], "extra": 1}`,
		"unknown driver":     `{"drivers": [], "signatures": [{"id": "a", "driver": "x", "format": "long enough text here", "source": "s", "kernels": "k", "level": "err", "layer": "cq", "fault": "cq-eq", "severity": "info", "what": "w"}]}`,
		"too generic":        `{"drivers": [{"name": "k", "layer": "driver", "prefixes": [], "source": "s"}], "signatures": [{"id": "a", "driver": "k", "format": "%s: %d", "source": "s", "kernels": "k", "level": "err", "layer": "cq", "fault": "cq-eq", "severity": "info", "what": "w"}]}`,
		"arg out of range":   `{"drivers": [{"name": "k", "layer": "driver", "prefixes": [], "source": "s"}], "signatures": [{"id": "a", "driver": "k", "format": "long enough text %s", "args": {"netdev": 2}, "source": "s", "kernels": "k", "level": "err", "layer": "cq", "fault": "cq-eq", "severity": "info", "what": "w"}]}`,
		"bad severity":       `{"drivers": [{"name": "k", "layer": "driver", "prefixes": [], "source": "s"}], "signatures": [{"id": "a", "driver": "k", "format": "long enough text", "source": "s", "kernels": "k", "level": "err", "layer": "cq", "fault": "cq-eq", "severity": "bad", "what": "w"}]}`,
		"link without state": `{"drivers": [{"name": "k", "layer": "driver", "prefixes": [], "source": "s"}], "signatures": [{"id": "a", "driver": "k", "kind": "link", "format": "long enough text", "source": "s", "kernels": "k", "level": "err", "layer": "cq", "fault": "cq-eq", "severity": "info", "what": "w"}]}`,
	} {
		if _, err := Load(fstest.MapFS{"signatures/t.json": {Data: []byte(js)}}); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}

// The log is the host's, or a snapshot's from another machine: any text classifies without a
// panic, and every event's fields come from its own record.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"mlx5_core 0000:3b:00.0: CQ error on CQN 0x12, syndrome 0x1", "infiniband mlx5_0: failed", "DMAR: Request device [3b:00.0] fault addr 0x1", "%s %d", ""} {
		f.Add(s, 3)
	}
	tb, err := Default()
	if err != nil {
		f.Fatal(err)
	}
	tt := testTableOf(&testing.T{})
	devs := []Device{{Name: "mlx5_0", PCI: "0000:3b:00.0", Netdevs: map[string]int{"ens1f0": 1}}}
	f.Fuzz(func(t *testing.T, text string, level int) {
		for _, table := range []*Table{tb, tt} {
			for _, e := range table.Classify([]kmsg.Record{{Level: level, Text: text}}, devs) {
				if e.Record.Text != text {
					t.Fatalf("event of another record")
				}
				_ = e.Detail()
				_ = e.Layer()
			}
		}
	})
}

// A line quoted without its level that reads as an error by its words, but opens as a print the
// driver makes at KERN_INFO (dpc_probe's capability report, here with its last field mangled
// in copying), is not an unrecognised driver error; the same words in a line no quiet format
// opens still are.
func TestQuietPrintWithoutLevel(t *testing.T) {
	tb := table(t)
	recs, _ := kmsg.ParseDmesg([]byte("[    6.631181] pcieport 0000:00:09.0: DPC: error containment capabilities: Int Msg #0, RPExt+ PoisonedTLP+ SwTrigger+ RP PIO Log 4, DL_+\n" +
		"[    6.631200] pcieport 0000:00:09.0: DPC: containment setup failed with an error of its own\n"))
	evs := tb.Classify(recs, nil)
	if len(evs) != 1 || evs[0].Index != 1 || evs[0].Sig != nil {
		t.Fatalf("want only the second line, unrecognised: %+v", evs)
	}
}

// shost_printk's "scsi hostN: " comes before ib_srp's own prefix: the line is the driver's, and
// an error no entry knows is reported as unrecognised for it.
func TestSCSIHostLead(t *testing.T) {
	tb := table(t)
	if d := tb.DriverOf("scsi host11: ib_srp: REJ received"); d == nil || d.Name != "ib_srp" {
		t.Fatalf("driver %+v", d)
	}
	if d := tb.DriverOf("scsi hostx: ib_srp: REJ received"); d != nil {
		t.Errorf("a lead without a host number taken: %s", d.Name)
	}
	recs, _ := kmsg.ParseDmesg([]byte("[16848.757937] scsi host11: ib_srp: path record query failed unexpectedly\n"))
	evs := tb.Classify(recs, nil)
	if len(evs) != 1 || evs[0].Recognised() || evs[0].Driver == nil || evs[0].Driver.Name != "ib_srp" {
		t.Fatalf("%+v", evs)
	}
}

// A format opening with the caller's indentation (cper.c's newpfx) matches a line where spaces
// follow the prefix: the GHES record's "section_type: PCIe error".
func TestIndentedCPERLine(t *testing.T) {
	tb := table(t)
	recs, _ := kmsg.ParseDmesg([]byte("[11219.196591] {1}[Hardware Error]:   section_type: PCIe error\n"))
	evs := tb.Classify(recs, nil)
	if len(evs) != 1 || evs[0].Sig == nil || evs[0].Sig.ID != "cper-pcie-error" {
		t.Fatalf("%+v", evs)
	}
}
