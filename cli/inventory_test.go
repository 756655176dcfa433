package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rdmadiag/rdmadiag/report"
)

// The inventory's exit codes: 0 when the devices were read, 3 when a device's files could not
// be (its line still printed, the error named on stderr), 64 for usage errors.
func TestInventoryExitCodes(t *testing.T) {
	root := t.TempDir()
	w := func(p, s string) {
		p = filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w("proc/sys/kernel/hostname", "node-a\n")
	w("sys/devices/virtual/infiniband/rxe0/node_type", "1: CA\n")
	w("sys/devices/virtual/infiniband/rxe0/ports/1/link_layer", "Ethernet\n")
	w("sys/devices/virtual/infiniband/rxe0/ports/1/state", "4: ACTIVE\n")
	w("sys/devices/virtual/infiniband/rxe0/ports/1/gids/1", "0000:0000:0000:0000:0000:ffff:c000:0202\n")
	w("sys/devices/virtual/infiniband/rxe0/ports/1/gid_attrs/types/1", "RoCE v2\n")
	os.MkdirAll(filepath.Join(root, "sys/class/infiniband"), 0o755)
	if err := os.Symlink("../../devices/virtual/infiniband/rxe0", filepath.Join(root, "sys/class/infiniband/rxe0")); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := run(t, "inventory", "--root", root)
	if code != 0 || stderr != "" || !strings.Contains(out, "rxe0/1") || !strings.Contains(out, "[1] 192.0.2.2 v2") {
		t.Errorf("readable tree: exit %d, stderr %q, out:\n%s", code, stderr, out)
	}
	out, _, _ = run(t, "inventory", "--root", root, "--format", "json")
	var doc inventoryDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	inv := doc.Host.Inventory
	if inv == nil || len(inv.Devices) != 1 || inv.Devices[0].Ports[0].GID == nil || inv.Devices[0].Ports[0].GID.Index != 1 || doc.Host.Hostname != "node-a" {
		t.Errorf("JSON inventory: %s", out)
	}

	// A second device whose node_type is missing: listed, named on stderr, exit 3.
	w("sys/devices/virtual/infiniband/rxe1/ports/1/link_layer", "Ethernet\n")
	os.Symlink("../../devices/virtual/infiniband/rxe1", filepath.Join(root, "sys/class/infiniband/rxe1"))
	out, stderr, code = run(t, "inventory", "--root", root)
	if code != report.ExitUnknown || !strings.Contains(stderr, "rxe1") || !strings.Contains(stderr, "node_type") || !strings.Contains(out, "rxe1/1") {
		t.Errorf("unreadable file: exit %d, stderr %q, out:\n%s", code, stderr, out)
	}

	for _, args := range [][]string{
		{"inventory", "--format", "yaml"},
		{"inventory", "--snapshot", "x", "--root", root},
		{"inventory", "--timeout", "0s", "--root", root},
		{"inventory", "extra"},
	} {
		if _, _, code := run(t, args...); code != report.ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, report.ExitUsage)
		}
	}
	if _, _, code := run(t, "inventory", "--snapshot", filepath.Join(root, "missing.tar.gz")); code != report.ExitUnknown {
		t.Errorf("missing snapshot: exit %d, want 3", code)
	}
}

// Every fixture's inventory fits the table's width, as the check table does: 80 columns piped,
// COLUMNS, or the terminal's width; the line naming the host and a hardware RoCE port with a long
// firmware version, PSID and GID (fw-inbox-cx6dx) included. Wrapping keeps every value: the
// cells of a wrapped line put back together give the port's PSID and firmware.
func TestInventoryWidth(t *testing.T) {
	for _, s := range scenarios(t) {
		for _, c := range []struct {
			env       map[string]string
			termWidth int
			width     int
		}{
			{map[string]string{"LANG": "C.UTF-8"}, 0, 80},
			{map[string]string{"LANG": "C.UTF-8", "COLUMNS": "72"}, 0, 72},
			{map[string]string{"LANG": "C.UTF-8"}, 100, 100},
		} {
			out, stderr, code := runEnv(t, c.env, c.termWidth, "inventory", "--snapshot", s.snapshot)
			if (code != 0 && code != report.ExitUnknown) || out == "" {
				t.Errorf("%s: exit %d, no inventory: %s", s.name, code, stderr)
			}
			for _, l := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(l); n > c.width {
					t.Errorf("%s at %d columns: line of %d columns: %q", s.name, c.width, n, l)
				}
			}
		}
	}
	out, _, _ := run(t, "inventory", "--snapshot", filepath.Join(fixturesDir, "fw-inbox-cx6dx", "snapshot.txtar"))
	flat := strings.Join(strings.Fields(out), "")
	for _, want := range []string{"MT_0000000436", "22.48.1000", "192.0.2.10", "ens1f0np0/9000"} {
		if !strings.Contains(flat, want) {
			t.Errorf("a wrapped cell lost %s:\n%s", want, out)
		}
	}
}
