package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

type entry struct {
	name, body, link string
	typ              byte
}

func archive(t testing.TB, es ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: e.typ, Linkname: e.link, Size: int64(len(e.body))}
		if e.typ == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

var meta = entry{name: "meta.json", body: `{"format":"rdmadiag-snapshot/1"}`}

func TestUnpackRefusesEscapes(t *testing.T) {
	cases := map[string][]byte{
		"absolute path":        archive(t, meta, entry{name: "/etc/passwd", body: "x"}),
		"dot-dot":              archive(t, meta, entry{name: "root/../../x", body: "x"}),
		"absolute link":        archive(t, meta, entry{name: "root/l", typ: tar.TypeSymlink, link: "/etc"}),
		"escaping link":        archive(t, meta, entry{name: "root/l", typ: tar.TypeSymlink, link: "../../.."}),
		"write through a link": archive(t, meta, entry{name: "root/d", typ: tar.TypeSymlink, link: "."}, entry{name: "root/d/x", body: "x"}),
		"hard link":            archive(t, meta, entry{name: "root/h", typ: tar.TypeLink, link: "meta.json"}),
		"device":               archive(t, meta, entry{name: "root/dev", typ: tar.TypeChar}),
		"no meta":              archive(t, entry{name: "root/x", body: "x"}),
		"overwrite":            archive(t, meta, entry{name: "meta.json", body: "{}"}),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "snap")
			err := Unpack(bytes.NewReader(data), dir)
			if !errors.Is(err, ErrNotSnapshot) {
				t.Fatalf("got %v, want ErrNotSnapshot", err)
			}
			if testing.Verbose() {
				t.Log(err)
			}
			// Nothing may appear next to the unpack directory.
			ents, _ := os.ReadDir(parent)
			if len(ents) != 1 {
				t.Errorf("unpack wrote outside its directory: %v", ents)
			}
		})
	}
}

func TestUnpackRefusesGarbage(t *testing.T) {
	good := archive(t, meta, entry{name: "root/x", body: strings.Repeat("y", 4000)})
	for name, data := range map[string][]byte{
		"not gzip":  []byte("hello, this is not a snapshot"),
		"truncated": good[:len(good)/2],
		"empty":     nil,
	} {
		if err := Unpack(bytes.NewReader(data), t.TempDir()); !errors.Is(err, ErrNotSnapshot) {
			t.Errorf("%s: got %v, want ErrNotSnapshot", name, err)
		}
	}
}

func TestUnpackKeepsInsideLinks(t *testing.T) {
	dir := t.TempDir()
	data := archive(t, meta,
		entry{name: "root/sys/devices/pci0000:00/0000:00:02.0/vendor", body: "0x1b36\n"},
		entry{name: "root/sys/bus/pci/devices/0000:00:02.0", typ: tar.TypeSymlink, link: "../../../devices/pci0000:00/0000:00:02.0"})
	if err := Unpack(bytes.NewReader(data), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "root/sys/bus/pci/devices/0000:00:02.0/vendor"))
	if err != nil || string(b) != "0x1b36\n" {
		t.Errorf("link not usable: %q %v", b, err)
	}
}

// mkroot builds a small machine tree with the shapes sysfs has: class links to real device
// directories, a PCI function behind a root port, a netdev.
func mkroot(t *testing.T) string {
	t.Helper()
	r := t.TempDir()
	w := func(p, s string) {
		p = filepath.Join(r, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := func(p, target string) {
		p = filepath.Join(r, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	fn := "sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0"
	w("sys/devices/pci0000:00/0000:00:02.0/vendor", "0x1b36\n")
	w("sys/devices/pci0000:00/0000:00:02.0/class", "0x060400\n")
	w("sys/devices/pci0000:00/0000:00:02.0/current_link_speed", "16.0 GT/s PCIe\n")
	w(fn+"/vendor", "0x15b3\n")
	w(fn+"/device", "0x1017\n")
	w(fn+"/class", "0x020000\n")
	w(fn+"/current_link_width", "8\n")
	w(fn+"/max_link_width", "16\n")
	w(fn+"/aer_dev_fatal", "Undefined 0\nTOTAL_ERR_FATAL 0\n")
	w(fn+"/remove", "")
	os.Chmod(filepath.Join(r, fn+"/remove"), 0o200)
	w(fn+"/infiniband/mlx5_0/node_type", "1: CA\n")
	w(fn+"/infiniband/mlx5_0/node_guid", "b8ce:f603:00a1:b2c4\n")
	w(fn+"/infiniband/mlx5_0/fw_ver", "16.35.2000\n")
	w(fn+"/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n")
	w(fn+"/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n")
	w(fn+"/infiniband/mlx5_0/ports/1/gids/1", "0000:0000:0000:0000:0000:ffff:0a00:020f\n")
	w(fn+"/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/1", "eth0\n")
	l(fn+"/infiniband/mlx5_0/device", "../../../0000:01:00.0")
	w(fn+"/net/eth0/operstate", "up\n")
	w(fn+"/net/eth0/address", "b8:ce:f6:a1:b2:c4\n")
	l(fn+"/driver", "../../../../bus/pci/drivers/mlx5_core")
	os.MkdirAll(filepath.Join(r, "sys/bus/pci/drivers/mlx5_core"), 0o755)
	l("sys/class/infiniband/mlx5_0", "../../devices/pci0000:00/0000:00:02.0/0000:01:00.0/infiniband/mlx5_0")
	l("sys/class/net/eth0", "../../devices/pci0000:00/0000:00:02.0/0000:01:00.0/net/eth0")
	l("sys/bus/pci/devices/0000:01:00.0", "../../../devices/pci0000:00/0000:00:02.0/0000:01:00.0")
	l("sys/bus/pci/devices/0000:00:02.0", "../../../devices/pci0000:00/0000:00:02.0")
	w("proc/modules", "mlx5_ib 479232 0 - Live 0x0000000000000000\n")
	w("proc/sys/kernel/osrelease", "6.1.0-test\n")
	w("proc/sys/kernel/hostname", "gpu-node-17\n")
	w("secret/not-allow-listed", "x\n")
	return r
}

func TestRecordPackOpen(t *testing.T) {
	root := mkroot(t)
	h, err := OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "rec")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := Record(h, dir, RecordOptions{ToolVersion: "t", Now: now}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"root/sys/class/infiniband/mlx5_0/fw_ver",
		"root/sys/class/infiniband/mlx5_0/ports/1/state",
		"root/sys/bus/pci/devices/0000:01:00.0/max_link_width",
		"root/sys/bus/pci/devices/0000:01:00.0/aer_dev_fatal",
		"root/sys/devices/pci0000:00/0000:00:02.0/current_link_speed", // the upstream bridge
		"root/sys/class/net/eth0/operstate",
		"root/proc/modules",
	} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("not recorded: %s", p)
		}
	}
	for _, p := range []string{"root/secret", "root/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0/remove"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("recorded although not allow-listed or not readable: %s", p)
		}
	}
	var a, b bytes.Buffer
	if err := Pack(&a, dir); err != nil {
		t.Fatal(err)
	}
	if err := Pack(&b, dir); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("packing the same directory twice gives different bytes")
	}
	f := filepath.Join(t.TempDir(), "s.tar.gz")
	os.WriteFile(f, a.Bytes(), 0o644)
	sh, cleanup, err := Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	real, err := sh.Realpath("/sys/class/infiniband/mlx5_0/device")
	if err != nil || real != "/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0" {
		t.Errorf("device link resolves to %q, %v", real, err)
	}
	if s, _ := sh.ReadString("/sys/class/infiniband/mlx5_0/node_guid"); s != "b8ce:f603:00a1:b2c4" {
		t.Errorf("node_guid %q", s)
	}
}

func TestRedactConsistently(t *testing.T) {
	root := mkroot(t)
	h, _ := OpenRoot(root)
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Record(h, dir, RecordOptions{Now: time.Unix(0, 0), Redact: true}); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	guid := read("root/sys/class/infiniband/mlx5_0/node_guid")
	if strings.Contains(guid, "b8ce") || !reHexGroups().MatchString(guid) {
		t.Errorf("node_guid not redacted to a GUID: %q", guid)
	}
	gid := read("root/sys/class/infiniband/mlx5_0/ports/1/gids/1")
	if !strings.HasPrefix(gid, "0000:0000:0000:0000:0000:ffff:c000:02") {
		t.Errorf("IPv4-mapped GID should map to 192.0.2.x and keep its kind: %q", gid)
	}
	if mac := read("root/sys/class/net/eth0/address"); strings.Contains(mac, "b8:ce") {
		t.Errorf("MAC not redacted: %q", mac)
	}
	if hn := read("root/proc/sys/kernel/hostname"); strings.Contains(hn, "gpu-node-17") {
		t.Errorf("hostname file not redacted: %q", hn)
	}
	if facts := read("facts.json"); strings.Contains(facts, "gpu-node-17") {
		t.Errorf("hostname in facts not redacted")
	}
	if fw := read("root/sys/class/infiniband/mlx5_0/fw_ver"); fw != "16.35.2000\n" {
		t.Errorf("firmware version must survive redaction: %q", fw)
	}
}

func TestUnpackTxtar(t *testing.T) {
	ar := `synthetic: a test archive
-- meta.json --
{"format":"rdmadiag-snapshot/1","synthetic":true}
-- root/sys/class/infiniband/ --
-- root/sys/devices/x/vendor --
0x15b3
-- root/sys/bus/pci/devices/0000:01:00.0 -> ../../../devices/x --
-- netlink/1401-0300-.bin.hex --
14 00 00 00
03 00 02 00
`
	dir := t.TempDir()
	if err := UnpackTxtar([]byte(ar), dir); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "root/sys/class/infiniband")); err != nil || !st.IsDir() {
		t.Errorf("empty directory: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "root/sys/bus/pci/devices/0000:01:00.0/vendor")); string(b) != "0x15b3\n" {
		t.Errorf("link: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "netlink/1401-0300-.bin")); !bytes.Equal(b, []byte{0x14, 0, 0, 0, 3, 0, 2, 0}) {
		t.Errorf("hex: %x", b)
	}
	for name, bad := range map[string]string{
		"escape link": "-- meta.json --\n{}\n-- root/l -> ../../.. --\n",
		"bad hex":     "-- meta.json --\n{}\n-- netlink/x.bin.hex --\nzz\n",
		"no meta":     "-- root/x --\ny\n",
		"dot-dot":     "-- meta.json --\n{}\n-- ../x --\ny\n",
	} {
		if err := UnpackTxtar([]byte(bad), t.TempDir()); !errors.Is(err, ErrNotSnapshot) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A read error seen while recording (EINVAL from a down netdev's speed) is replayed from the
// snapshot, and a zero GID table entry with its refused attributes is left out.
func TestReadErrorsReplayAndUnusedGIDs(t *testing.T) {
	root := mkroot(t)
	fn := "/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0"
	os.WriteFile(filepath.Join(root, fn, "net/eth0/speed"), nil, 0o644)
	os.WriteFile(filepath.Join(root, fn, "infiniband/mlx5_0/ports/1/gids/0"), []byte("0000:0000:0000:0000:0000:0000:0000:0000\n"), 0o644)
	os.MkdirAll(filepath.Join(root, fn, "infiniband/mlx5_0/ports/1/gid_attrs/types"), 0o755)
	os.WriteFile(filepath.Join(root, fn, "infiniband/mlx5_0/ports/1/gid_attrs/types/0"), nil, 0o644)
	src, err := host.New(host.Options{Root: root, Kind: host.KindRoot,
		ReadErrors: map[string]syscall.Errno{fn + "/net/eth0/speed": syscall.EINVAL, fn + "/infiniband/mlx5_0/ports/1/gid_attrs/types/0": syscall.EINVAL}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Record(src, dir, RecordOptions{Now: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"ports/1/gids/0", "ports/1/gid_attrs/types/0"} {
		if _, err := os.Lstat(filepath.Join(dir, "root", fn, "infiniband/mlx5_0", p)); err == nil {
			t.Errorf("unused GID entry recorded: %s", p)
		}
	}
	var a bytes.Buffer
	if err := Pack(&a, dir); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "s.tar.gz")
	os.WriteFile(f, a.Bytes(), 0o644)
	h, cleanup, err := Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	_, err = h.ReadFile("/sys/class/net/eth0/speed")
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("replayed read of speed: %v, want EINVAL", err)
	}
	if !h.Exists("/sys/class/net/eth0/speed") {
		t.Error("a file that failed to read must still exist")
	}
}

func TestEmptyClassDirSurvives(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "sys/class/infiniband"), 0o755)
	os.MkdirAll(filepath.Join(root, "sys/class/infiniband_verbs"), 0o755)
	os.WriteFile(filepath.Join(root, "sys/class/infiniband_verbs/abi_version"), []byte("6\n"), 0o644)
	h, _ := OpenRoot(root)
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Record(h, dir, RecordOptions{Now: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "root/sys/class/infiniband")); err != nil || !st.IsDir() {
		t.Errorf("empty /sys/class/infiniband not recorded: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "root/sys/class/infiniband_verbs/abi_version")); err != nil || string(b) != "6\n" {
		t.Errorf("abi_version: %q %v", b, err)
	}
	if mb, _ := os.ReadFile(filepath.Join(dir, MetaFile)); strings.Contains(string(mb), `"path": "/`) {
		t.Errorf("recording a plain tree reports unreadable files: %s", mb)
	}
}
