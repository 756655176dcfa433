package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What record writes, check reads: a tree with more counter data than a snapshot may hold, and
// links out of it (straight, and through another link), is recorded within the limits, the
// files and links left out listed with the reason, and the snapshot unpacks under the same
// limits.
func TestRecordStaysWithinWhatUnpackAccepts(t *testing.T) {
	root := mkroot(t)
	counters := filepath.Join(root, "sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0/infiniband/mlx5_0/ports/1/counters")
	os.MkdirAll(counters, 0o755)
	for i := range 40 {
		os.WriteFile(filepath.Join(counters, fmt.Sprintf("c%02d", i)), bytes.Repeat([]byte("7"), 1000), 0o644)
	}
	dev := filepath.Join(root, "sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0/infiniband/mlx5_0")
	os.Symlink(strings.Repeat("../", 12)+"etc/hostname", filepath.Join(dev, "node_desc"))
	os.Symlink(".", filepath.Join(dev, "q"))
	os.Symlink("q/q/q"+strings.Repeat("/..", 12)+"/etc/hostname", filepath.Join(dev, "board_id"))
	h, err := OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	lim := limits{entries: 400, file: 1 << 20, total: 20000}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := record(h, dir, RecordOptions{ToolVersion: "t", Now: time.Unix(0, 0)}, lim); err != nil {
		t.Fatal(err)
	}
	var m Meta
	b, _ := os.ReadFile(filepath.Join(dir, MetaFile))
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	why := map[string]string{}
	for _, u := range m.Unreadable {
		why[u.Path] = u.Reason
	}
	for p, want := range map[string]string{
		"/sys/class/infiniband/mlx5_0/node_desc": "leaves the tree",
		"/sys/class/infiniband/mlx5_0/board_id":  "leaves the tree",
		"root/":                                  "not recorded, from /sys/",
	} {
		found := false
		for up, r := range why {
			if strings.HasSuffix(up, strings.TrimPrefix(p, "/sys/class/infiniband/mlx5_0")) && strings.Contains(r, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no reason %q among %v", p, want, why)
		}
	}
	var buf bytes.Buffer
	if err := pack(&buf, dir, lim); err != nil {
		t.Fatalf("pack: %v", err)
	}
	if err := unpackTar(context.Background(), bytes.NewReader(buf.Bytes()), t.TempDir(), lim); err != nil {
		t.Errorf("check refuses what record wrote: %v", err)
	}
}

// Pack refuses a tree that Unpack would refuse, before writing anything.
func TestPackRefusesWhatUnpackRefuses(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, MetaFile), []byte("{}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "big"), bytes.Repeat([]byte("x"), 200), 0o644)
	for _, lim := range []limits{{entries: 1, file: 1000, total: 1000}, {entries: 10, file: 100, total: 1000}, {entries: 10, file: 1000, total: 150}} {
		var buf bytes.Buffer
		if err := pack(&buf, dir, lim); err == nil || buf.Len() != 0 {
			t.Errorf("%+v: packed %d bytes, error %v", lim, buf.Len(), err)
		}
	}
}
