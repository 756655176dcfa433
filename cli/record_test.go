package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What record writes, check reads: a --root tree with a link out of it (straight, or climbing
// through another link) is recorded without the link, which the snapshot lists as not recorded
// with the reason, and check reads the snapshot.
func TestRecordOfATreeWithLinksOutIsChecked(t *testing.T) {
	root := filepath.Join(unpackHealthy(t), "root")
	dev := filepath.Join(root, "sys/devices/virtual/infiniband/rxe0")
	up := strings.Repeat("../", strings.Count(dev, "/")+2)
	os.Remove(filepath.Join(dev, "node_desc"))
	os.Symlink(up+"etc/hostname", filepath.Join(dev, "node_desc"))
	os.Symlink(".", filepath.Join(dev, "q"))
	os.Symlink("q/q/q/q/q/q/q/q/q/q/q/q"+strings.Repeat("/..", 13)+"/etc/hostname", filepath.Join(dev, "board_id"))
	snap := filepath.Join(t.TempDir(), "host.tar.gz")
	if _, errs, code := run(t, "record", "--root", root, "-o", snap); code != 0 {
		t.Fatalf("record: exit %d: %s", code, errs)
	}
	out, errs, code := run(t, "check", "--snapshot", snap, "--format", "json")
	if code == 3 || strings.Contains(errs, "not a usable") {
		t.Fatalf("check refuses what record wrote: exit %d: %s%s", code, errs, out)
	}
	r := decode(t, out)
	for _, name := range []string{"node_desc", "board_id"} {
		found := false
		for _, u := range r.Host.Unreadable {
			if strings.Contains(u, "rxe0/"+name+": not recorded") && strings.Contains(u, "leaves the tree") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: not listed as left out with the reason: %v", name, r.Host.Unreadable)
		}
	}
}
