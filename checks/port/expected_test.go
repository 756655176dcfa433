package port

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
)

const (
	unusedFixture = "port-unused-cx6dx"
	cx6dxNetdev   = "sys/devices/pci0000:00/0000:5d:00.0/0000:5e:00.0/net/ens21f0np0"
	cx7Port10     = "sys/devices/pci0000:00/0000:85:00.0/0000:86:00.0/infiniband/mlx5_10/ports/1"
	cx7Port0      = "sys/devices/pci0000:00/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0/ports/1"
)

// unpackFixture unpacks a fixture into a directory and applies edits (root-relative path to
// content; a name ending in " ->" makes a symlink to the content), for variants of one capture.
func unpackFixture(t *testing.T, fixture string, edits map[string]string) string {
	t.Helper()
	data, err := os.ReadFile(checktest.Fixture(t, fixture))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := snapshot.UnpackTxtar(data, dir); err != nil {
		t.Fatal(err)
	}
	for p, content := range edits {
		if link, ok := strings.CutSuffix(p, " ->"); ok {
			if err := os.Symlink(content, filepath.Join(dir, snapshot.RootDir, link)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		full := filepath.Join(dir, snapshot.RootDir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A down port with no evidence that it should be up is unused: information, with how to
// declare it; every piece of evidence brings the fault back.
func TestUnusedPortJudgedByEvidence(t *testing.T) {
	fs := checktest.Run(t, unusedFixture, checks.Options{}, "port.state")
	f := checktest.One(t, fs, "port.state", "mlx5_1/1")
	checktest.WantSeverity(t, f, report.Info)
	checktest.WantEvidence(t, f, "expected up", "no evidence")
	if !strings.Contains(f.Summary, "not cabled or unused") || !strings.Contains(f.Remediation, `"expect_up": ["mlx5_1/1"]`) {
		t.Errorf("unused port: %q / %q", f.Summary, f.Remediation)
	}
	checktest.WantSeverity(t, checktest.One(t, fs, "port.state", "mlx5_0/1"), report.OK)

	for _, tc := range []struct {
		name     string
		opts     checks.Options
		edits    map[string]string
		evidence string
	}{
		{"policy names the port", withPolicy(t, `{"ports": {"expect_up": ["mlx5_1/1"]}}`), nil, "the policy expects it up"},
		{"policy names the netdev by glob", withPolicy(t, `{"ports": {"expect_up": ["ens21f*"]}}`), nil, "ens21f0np0"},
		{"policy names the PCI function", withPolicy(t, `{"ports": {"expect_up": ["0000:5e:00.0"]}}`), nil, "0000:5e:00.0"},
		{"carrier was up this boot", checks.Options{}, map[string]string{cx6dxNetdev + "/carrier_up_count": "2\n"}, "had carrier 2 time(s)"},
		{"bond member", checks.Options{}, map[string]string{cx6dxNetdev + "/master ->": "../bond0"}, "member of bond0"},
		{"global IPv6 address", checks.Options{}, map[string]string{"proc/net/if_inet6": "20010db8000000000000000000000001 07 40 00 80 ens21f0np0\n"}, "global IPv6 address"},
		{"link went down this boot", checks.Options{}, map[string]string{
			"sys/devices/pci0000:00/0000:5d:00.0/0000:5e:00.0/infiniband/mlx5_1/ports/1/counters/link_downed": "1\n"}, "went down 1 time(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := unpackFixture(t, unusedFixture, tc.edits)
			f := checktest.One(t, checktest.Run(t, dir, tc.opts, "port.state"), "port.state", "mlx5_1/1")
			checktest.WantSeverity(t, f, report.Critical)
			checktest.WantEvidence(t, f, "expected up", tc.evidence)
		})
	}
}

// A link-local IPv6 address (scope 20) is no configuration: every netdev that is up has one.
func TestLinkLocalIPv6IsNoEvidence(t *testing.T) {
	dir := unpackFixture(t, unusedFixture, map[string]string{"proc/net/if_inet6": "fe80000000000000ba3fd2fffe2d6502 07 40 20 80 ens21f0np0\n"})
	f := checktest.One(t, checktest.Run(t, dir, checks.Options{}, "port.state"), "port.state", "mlx5_1/1")
	checktest.WantSeverity(t, f, report.Info)
}

// One of two identical ConnectX-7 rails without a link is a missing rail: critical, naming the
// rail that is up. With every port down, nothing says which one should be up, but a host whose
// RDMA ports are all down cannot do RDMA: a warning on each.
func TestMissingRailAndAllDown(t *testing.T) {
	down := func(port string) map[string]string {
		return map[string]string{port + "/state": "1: DOWN\n", port + "/phys_state": "2: Polling\n", port + "/lid": "0x0\n",
			port + "/counters/port_rcv_data": "0\n", port + "/counters/port_xmit_data": "0\n"}
	}
	dir := unpackFixture(t, unusedFixture, down(cx7Port10))
	fs := checktest.Run(t, dir, checks.Options{}, "port.state")
	f := checktest.One(t, fs, "port.state", "mlx5_10/1")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "expected up", "1 of the 2 identical ports")
	checktest.WantEvidence(t, f, "expected up", "mlx5_0/1")
	checktest.WantSeverity(t, checktest.One(t, fs, "port.state", "mlx5_1/1"), report.Info)

	// A LID the subnet manager gave the port stays when the link drops: it was in a fabric.
	withLID := down(cx7Port10)
	withLID[cx7Port10+"/lid"] = "0x120\n"
	for k, v := range down(cx7Port0) {
		withLID[k] = v
	}
	f = checktest.One(t, checktest.Run(t, unpackFixture(t, unusedFixture, withLID), checks.Options{}, "port.state"), "port.state", "mlx5_10/1")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "expected up", "assigned it LID 0x120")

	both := down(cx7Port10)
	for k, v := range down(cx7Port0) {
		both[k] = v
	}
	fs = checktest.Run(t, unpackFixture(t, unusedFixture, both), checks.Options{}, "port.state")
	for _, name := range []string{"mlx5_0/1", "mlx5_1/1", "mlx5_10/1"} {
		f := checktest.One(t, fs, "port.state", name)
		checktest.WantSeverity(t, f, report.Warning)
		if !strings.Contains(f.Summary, "no RDMA port of this host is up") {
			t.Errorf("%s: %q", name, f.Summary)
		}
	}
}

// peerKey: VFs, software devices and boards without a PSID have no peers; the function
// number and port number are part of the position.
func TestPeerKey(t *testing.T) {
	inv := func(bdf, pf, board string, port int) portRef {
		return portRef{dev: &inventory.Device{Name: "x", BoardID: board, PCI: &inventory.PCIFunction{BDF: bdf, PF: pf, Vendor: 0x15b3, DeviceID: 0x1021}},
			port: &inventory.Port{Num: port, LinkLayer: "InfiniBand"}}
	}
	a, b := inv("0000:3b:00.0", "", "MT_1", 1), inv("0000:86:00.0", "", "MT_1", 1)
	if peerKey(a) == "" || peerKey(a) != peerKey(b) {
		t.Errorf("identical ports at the same position: %q vs %q", peerKey(a), peerKey(b))
	}
	if peerKey(a) == peerKey(inv("0000:86:00.1", "", "MT_1", 1)) {
		t.Error("function 0 and function 1 share a key")
	}
	if peerKey(inv("0000:3b:00.2", "0000:3b:00.0", "MT_1", 1)) != "" {
		t.Error("a VF has peers")
	}
	if peerKey(inv("0000:3b:00.0", "", "", 1)) != "" {
		t.Error("a device without a board id has peers")
	}
}
