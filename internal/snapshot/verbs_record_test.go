package snapshot

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

// A recording keeps the verbs limits but not the GID table the verbs query also gave: the table
// (addresses included) is in the snapshot as sysfs files, which --redact rewrites.
func TestRecordLeavesOutVerbsGIDs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "sysfs", "healthy", "snapshot.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	if err := UnpackTxtar(b, src); err != nil {
		t.Fatal(err)
	}
	live := []host.VerbsDevice{{Name: "rxe0", MaxQP: 1 << 16, GIDsRead: true,
		GIDs: []host.VerbsGID{{Port: 1, Index: 1, GID: "0000:0000:0000:0000:0000:ffff:0a00:020f", Type: 2, Ifindex: 2}}}}
	h, err := host.New(host.Options{Root: filepath.Join(src, "root"), Kind: host.KindRoot,
		Facts:        func() (*host.Facts, error) { return &host.Facts{Hostname: "n1"}, nil },
		VerbsDevices: func() ([]host.VerbsDevice, string, error) { return live, "", nil }})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Record(h, dir, RecordOptions{ToolVersion: "t", Now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, FactsFile))
	if err != nil {
		t.Fatal(err)
	}
	var f host.Facts
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.VerbsDevices) != 1 || f.VerbsDevices[0].MaxQP != 1<<16 {
		t.Fatalf("verbs limits not recorded: %s", raw)
	}
	if d := f.VerbsDevices[0]; d.GIDsRead || d.GIDs != nil {
		t.Errorf("the verbs GID table was recorded: %s", raw)
	}
	if !live[0].GIDsRead || len(live[0].GIDs) != 1 {
		t.Error("recording changed the host's own answer")
	}
}
