package pcie

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
)

// A host with an NVIDIA GPU, no peer-memory path and ACS redirect between NIC and GPU gets both
// findings, and the IOMMU and MaxReadReq findings besides.
func TestGPUDirectNotReady(t *testing.T) {
	fs := checktest.Run(t, "gpu-no-peermem-acs", checks.Options{}, "pcie.gpudirect", "pcie.acs", "pcie.affinity", "pcie.settings")
	reg := checktest.One(t, fs, "pcie.gpudirect", "gpudirect")
	checktest.WantSeverity(t, reg, report.Warning)
	if !strings.Contains(reg.Summary, "nvidia_peermem is not loaded") || !strings.Contains(reg.Summary, "found 535 proprietary") ||
		!strings.Contains(reg.Remediation, "modprobe nvidia-peermem") {
		t.Errorf("registration: %q / %q", reg.Summary, reg.Remediation)
	}
	checktest.WantEvidence(t, reg, "dma-buf: kernel", "5.15.0-105-generic (met)")
	checktest.WantEvidence(t, reg, "dma-buf: rdma-core", "libmlx5-rdmav34.so (met)")

	acs := checktest.One(t, fs, "pcie.acs", "0000:1a:00.0")
	checktest.WantSeverity(t, acs, report.Warning)
	checktest.WantEvidence(t, acs, "ACS control at 0000:19:00.0", "0x001d: SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+")
	if !strings.Contains(acs.Remediation, "pci=disable_acs_redir=0000:19:00.0;0000:19:01.0") {
		t.Errorf("ACS fix must name the ports: %q", acs.Remediation)
	}
	checktest.WantSeverity(t, checktest.One(t, fs, "pcie.gpudirect", "iommu"), report.Warning)
	checktest.WantSeverity(t, checktest.One(t, fs, "pcie.affinity", "0000:1a:00.0"), report.OK)

	set := checktest.One(t, fs, "pcie.settings", "0000:1a:00.0")
	checktest.WantSeverity(t, set, report.Info)
	checktest.WantEvidence(t, set, "MaxReadReq", "512 bytes")
	if !strings.Contains(set.Summary, "MaxPayload is 128 bytes although every function on the path supports 256") ||
		!strings.Contains(set.Remediation, "the NIC is not at fault") {
		t.Errorf("MaxPayload must be the platform's: %q / %q", set.Summary, set.Remediation)
	}
}

func TestGPUDirectReady(t *testing.T) {
	fs := checktest.Run(t, "gpu-direct-ready", checks.Options{}, "pcie.gpudirect", "pcie.acs", "pcie.affinity", "pcie.settings")
	for _, f := range fs {
		if f.Severity != report.OK {
			t.Errorf("%s %s: %s %s", f.CheckID, f.Subject.Name, f.Severity, f.Summary)
		}
	}
	reg := checktest.One(t, fs, "pcie.gpudirect", "gpudirect")
	if !strings.Contains(reg.Summary, "dma-buf path is available") {
		t.Errorf("the dma-buf path must be named: %q", reg.Summary)
	}
}

// A MaxReadReq below 256 bytes is a warning whatever the vendor advises, cited to fwts, with the
// setpci fix for a ConnectX; MaxPayload at the most the path supports adds nothing.
func TestSettingsLowMaxReadReq(t *testing.T) {
	f := checktest.One(t, checktest.Run(t, "pcie-low-mrrs", checks.Options{}, "pcie.settings"), "pcie.settings", "0000:1a:00.0")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidence(t, f, "MaxReadReq", "128 bytes")
	checktest.WantEvidence(t, f, "MaxPayload", "256 bytes")
	checktest.WantEvidence(t, f, "source", "LowMaxReadReq")
	if !strings.Contains(f.Summary, "MaxReadReq is 128 bytes, below the 256 bytes") || strings.Contains(f.Summary, "MaxPayload is") {
		t.Errorf("summary %q", f.Summary)
	}
	if !strings.Contains(f.Remediation, "setpci -s 0000:1a:00.0 CAP_EXP+8.w=5000:7000") {
		t.Errorf("fix %q", f.Remediation)
	}
}

// Without an NVIDIA GPU the checks have nothing to judge and say so.
func TestGPUDirectNoGPU(t *testing.T) {
	fs := checktest.Run(t, "port-cx7-ib", checks.Options{}, "pcie.gpudirect", "pcie.acs", "pcie.affinity")
	if len(fs) != 3 {
		t.Fatalf("want one finding per check, got %+v", fs)
	}
	for _, f := range fs {
		if f.Severity != report.Skipped || f.Limit != nil || !strings.Contains(f.Summary, "no NVIDIA GPU") {
			t.Errorf("%s: %s %q %+v", f.CheckID, f.Severity, f.Summary, f.Limit)
		}
	}
}

func TestParseACS(t *testing.T) {
	b := make([]byte, 0x120)
	binary.LittleEndian.PutUint32(b[0x100:], 0x0001|2<<16|0x110<<20) // AER, next at 0x110
	binary.LittleEndian.PutUint32(b[0x110:], 0x000d|1<<16)           // ACS, last
	binary.LittleEndian.PutUint16(b[0x114:], 0x005f)
	binary.LittleEndian.PutUint16(b[0x116:], ACSRequestRedirect|ACSCompletionRedirect)
	a, err := ParseACS(b)
	if err != nil || a.Offset != 0x110 || !a.Redirects() || a.Bits() != "ReqRedir+ CmpltRedir+" {
		t.Errorf("got %+v %q %v", a, a.Bits(), err)
	}
	if _, err := ParseACS(b[:64]); !errors.Is(err, ErrNoExtendedConfig) {
		t.Errorf("64 bytes: %v", err)
	}
	binary.LittleEndian.PutUint32(b[0x110:], 0x000b|1<<16|0x100<<20) // a loop back to 0x100
	if _, err := ParseACS(b); !errors.Is(err, ErrNoACS) {
		t.Errorf("a looping list must end: %v", err)
	}
	if _, err := ParseACS(b[:0x112]); err == nil || errors.Is(err, ErrNoACS) {
		t.Errorf("a cut capability must be an error: %v", err)
	}
}

func FuzzParseACS(f *testing.F) {
	b := make([]byte, 0x110)
	binary.LittleEndian.PutUint32(b[0x100:], 0x000d|1<<16)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		if a, err := ParseACS(b); err == nil && (a.Offset < 0x100 || a.Offset+8 > len(b)) {
			t.Errorf("ACS at 0x%x in %d bytes", a.Offset, len(b))
		}
	})
}

// Without root the kernel serves 64 bytes of config space: the ACS and Device Control registers
// are out of reach, which is the run's limit, not the host's fault.
func TestGPUDirectWithoutExtendedConfig(t *testing.T) {
	b, err := os.ReadFile(checktest.Fixture(t, "gpu-no-peermem-acs"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := snapshot.UnpackTxtar(b, dir); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(filepath.Join(dir, "root", "sys", "devices"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "config" {
			c, _ := os.ReadFile(p)
			err = os.WriteFile(p, c[:64], 0o644)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got := checktest.Run(t, dir, checks.Options{}, "pcie.acs", "pcie.settings")
	for _, id := range []string{"pcie.acs", "pcie.settings"} {
		f := checktest.One(t, got, id, "0000:1a:00.0")
		if f.Severity != report.Skipped || f.Limit == nil || f.Limit.Kind != report.LimitPrivilege || !strings.Contains(f.Limit.Lift, "root") {
			t.Errorf("%s: %s %q %+v", id, f.Severity, f.Summary, f.Limit)
		}
	}
}

// The NVIDIA driver's flavour comes from whichever source the host gives: here only
// /proc/modules, whose "(POE)" taint says proprietary (the nvidia line of
// NVIDIA/nvidia-container-toolkit#115). Without nvidia_peermem GPUDirect RDMA is then known to be
// unavailable (a warning), not undecidable. A partly garbled list is said, not dropped.
func TestGPUDirectFlavourFromModuleTaint(t *testing.T) {
	b, err := os.ReadFile(checktest.Fixture(t, "gpu-no-peermem-acs"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := snapshot.UnpackTxtar(b, dir); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	for _, p := range []string{"proc/driver/nvidia/version", "sys/module/nvidia/taint", "sys/module/nvidia/version"} {
		if err := os.Remove(filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	mods := "nvidia_uvm 1507328 2 - Live 0x0000000000000000 (POE)\n" +
		"nvidia 56164352 1 nvidia_uvm, Live 0x0000000000000000 (POE)\n" +
		"ib_core 393216 2 irdma,ib_uverbs, Live 0x0000000000000000\n" +
		"garbled\n"
	if err := os.WriteFile(filepath.Join(root, "proc/modules"), []byte(mods), 0o644); err != nil {
		t.Fatal(err)
	}
	f := checktest.One(t, checktest.Run(t, dir, checks.Options{}, "pcie.gpudirect"), "pcie.gpudirect", "gpudirect")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidence(t, f, "nvidia module taint", "POE")
	checktest.WantEvidence(t, f, "dma-buf: NVIDIA driver", "proprietary (not met)")
	checktest.WantEvidence(t, f, "/proc/modules", "partly unparsed")
}

// A module list whose nvidia_peermem line does not parse cannot tell whether the peer-memory
// module is loaded: the finding is unknown and names /proc/modules, not a warning that it is
// missing. A garbled line of another module is only said in the evidence (above).
func TestGPUDirectUnparsedPeermemLine(t *testing.T) {
	b, err := os.ReadFile(checktest.Fixture(t, "gpu-no-peermem-acs"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := snapshot.UnpackTxtar(b, dir); err != nil {
		t.Fatal(err)
	}
	mods := "nvidia 56164352 1 nvidia_peermem, Live 0x0000000000000000 (POE)\n" +
		"nvidia_peermem 16384\n" + // cut short after the size
		"ib_core 393216 2 irdma,ib_uverbs, Live 0x0000000000000000\n"
	if err := os.WriteFile(filepath.Join(dir, "root", "proc/modules"), []byte(mods), 0o644); err != nil {
		t.Fatal(err)
	}
	f := checktest.One(t, checktest.Run(t, dir, checks.Options{}, "pcie.gpudirect"), "pcie.gpudirect", "gpudirect")
	checktest.WantSeverity(t, f, report.Unknown)
	if !strings.Contains(f.Summary, "nvidia_peermem") || !strings.Contains(f.Summary, "/proc/modules") {
		t.Errorf("summary %q does not name nvidia_peermem and /proc/modules", f.Summary)
	}
	checktest.WantEvidence(t, f, "/proc/modules", "partly unparsed")
}
