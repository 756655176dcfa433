package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/devlink/dltest"
)

// The card's serial number in a devlink info reply is replaced by a stand-in of the same length,
// and the reply still decodes.
func TestRedactDevlinkSerial(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, DevlinkDir), 0o755)
	os.MkdirAll(filepath.Join(dir, RootDir), 0o755)
	const fam = 0x15
	info := devlink.Info{Handle: devlink.PCI("0000:3b:00.0"), Driver: "mlx5_core", Serial: "MT2231X12345",
		Running: []devlink.Version{{Name: "fw.version", Value: "28.39.1002"}}}
	reply := dltest.Encoder{}.InfoReply(fam, info)
	p := filepath.Join(dir, DevlinkDir, "info.bin")
	if err := os.WriteFile(p, reply, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Redact(dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if strings.Contains(string(b), "MT2231X12345") {
		t.Fatal("serial number left in the devlink reply")
	}
	got, err := devlink.DecodeInfo(b, fam)
	if err != nil {
		t.Fatalf("redacted reply no longer decodes: %v", err)
	}
	if len(got.Serial) != len(info.Serial) || got.Driver != "mlx5_core" || got.Running[0].Value != "28.39.1002" {
		t.Errorf("redacted info %+v", got)
	}
}
