package snapshot

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/devlink/dltest"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
)

// The redactor over the strings that tell a token from a part of a word, and every form of a
// GUID, a MAC and an address. The host is called "vm", a word inside many
// others; one GUID (0002:c903:00a1:b2c3), one MAC (b8:ce:f6:a1:b2:c4) and two IPv4 addresses are
// written in every form they take, so each has the first stand-in of its kind wherever it is.
func TestRedactTokens(t *testing.T) {
	cases := []struct{ file, in, want string }{
		// Words that contain the hostname stay as they are.
		{"root/etc/libibverbs.d/vmw_pvrdma.driver", "driver vmw_pvrdma\n", "driver vmw_pvrdma\n"},
		{"root/proc/cmdline",
			"BOOT_IMAGE=/vmlinuz kvm_amd.nested_pvm=1 sysctl.vm.swappiness=10 ip=10.1.2.3::10.1.2.254:255.255.255.0:vm:eth0:none\n",
			"BOOT_IMAGE=/vmlinuz kvm_amd.nested_pvm=1 sysctl.vm.swappiness=10 ip=192.0.2.1::192.0.2.2:255.255.255.0:host-1:eth0:none\n"},
		{"root/proc/sys/kernel/hostname", "vm\n", "host-1\n"},
		{"root/proc/net/route",
			"Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
				"eth0\t00000000\t0102010A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n" +
				"eth0\t0002010A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n",
			"Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
				"eth0\t00000000\t030200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n" +
				"eth0\t040200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"},
		// A word that is the hostname, outside the places a hostname is written, is another word.
		{"root/sys/module/kvm/parameters/mode", "vm\n", "vm\n"},
		{"root/sys/class/infiniband/mlx5_0/node_desc", "vm mlx5_0\n", "host-1 mlx5_0\n"},
		{"root/sys/class/infiniband/mlx5_0/node_guid", "0002:c903:00a1:b2c3\n", "0000:0000:0000:0001\n"},
		{"root/sys/class/infiniband/mlx5_0/fw_ver", "224.0.110.0\n", "224.0.110.0\n"},
		// The RoCE GID derived from the MAC is the EUI-64 of the MAC's stand-in.
		{"root/sys/class/infiniband/mlx5_0/ports/1/gids/0", "fe80:0000:0000:0000:bace:f6ff:fea1:b2c4\n",
			"fe80:0000:0000:0000:0000:00ff:fe00:0001\n"},
		{"root/sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "1234567890123456\n", "1234567890123456\n"},
		{"root/sys/bus/pci/devices/0000:3b:00.0/resource", "0x00000000fe000000 0x00000000fe7fffff 0x0000000000140204\n",
			"0x00000000fe000000 0x00000000fe7fffff 0x0000000000140204\n"},
		{"root/sys/class/net/eth0/address", "b8:ce:f6:a1:b2:c4\n", "02:00:00:00:00:01\n"},
		// An IPoIB address: flags and QPN stay, the GID's interface id is the port GUID.
		{"root/sys/class/net/ib0/address", "00:00:10:29:fe:80:00:00:00:00:00:00:00:02:c9:03:00:a1:b2:c3\n",
			"00:00:10:29:fe:80:00:00:00:00:00:00:00:00:00:00:00:00:00:01\n"},
		{"root/sys/class/net/ib0/broadcast", "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff\n",
			"00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff\n"},
		{"root/sys/module/mlx5_core/version", "23.10-1.1.9.0\n", "23.10-1.1.9.0\n"},
		{KmsgFile,
			"6,1,0,-;clocksource: Switched to clocksource kvm-clock\n" +
				"6,2,0,-;systemd[1]: Set hostname to <vm>.\n" +
				"6,3,0,-;kvm: nested_pvm=1 vmx vm-exit\n" +
				"6,4,0,-;mlx5_core 0000:3b:00.0: node GUID 0x0002c90300a1b2c3, port guid 0002C90300A1B2C3\n" +
				"6,5,0,-;ib0: remote 0002:C903:00A1:B2C3 via 00:02:c9:03:00:a1:b2:c3, fe80::0002:c903:00a1:b2c3\n" +
				"6,6,0,-;eth0: link up, MAC B8:CE:F6:A1:B2:C4 (b8-ce-f6-a1-b2-c4) peer 10.1.2.3\n" +
				"6,7,0,-;mlx5_core 0000:3b:00.0: firmware version 224.0.110.0, MLNX_OFED 23.10-1.1.9.0\n" +
				"6,9,0,-;BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n",
			"6,1,0,-;clocksource: Switched to clocksource kvm-clock\n" +
				"6,2,0,-;systemd[1]: Set hostname to <host-1>.\n" +
				"6,3,0,-;kvm: nested_pvm=1 vmx vm-exit\n" +
				"6,4,0,-;mlx5_core 0000:3b:00.0: node GUID 0x0000000000000001, port guid 0000000000000001\n" +
				"6,5,0,-;ib0: remote 0000:0000:0000:0001 via 00:00:00:00:00:00:00:01, fe80::0000:0000:0000:0001\n" +
				"6,6,0,-;eth0: link up, MAC 02:00:00:00:00:01 (02-00-00-00-00-01) peer 192.0.2.1\n" +
				"6,7,0,-;mlx5_core 0000:3b:00.0: firmware version 224.0.110.0, MLNX_OFED 23.10-1.1.9.0\n" +
				"6,9,0,-;BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n"},
		{FactsFile, `{"hostname": "vm", "kernel_release": "6.1.0-vm", "memlock_soft": 18446744073709551615}`,
			`{"hostname": "host-1", "kernel_release": "6.1.0-vm", "memlock_soft": 18446744073709551615}`},
		{MetaFile, `{"format":"rdmadiag-snapshot/1","description":"vm in rack 3, a \"vm\" <test>"}`,
			`{"format":"rdmadiag-snapshot/1","description":"host-1 in rack 3, a \"host-1\" <test>"}`},
	}
	dir := t.TempDir()
	write := func(name string, b []byte) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		write(c.file, []byte(c.in))
	}
	if err := Redact(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		b, err := os.ReadFile(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.file, b, c.want)
		}
	}
}

// Binary replies: the devlink serial and board serial numbers (and a version entry naming a
// serial number), nldev node and system-image GUIDs that no sysfs file names (a --minimal
// recording), and a GUID and MAC inside a raw QP context are replaced by stand-ins of the same
// length, consistent with the text files, and the replies still decode.
func TestRedactReplies(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{RootDir, DevlinkDir, NetlinkDir, "root/sys/class/net/eth0", "root/sys/class/infiniband/mlx5_0"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	const guid, sysGUID = 0x0002c90300a1b2c3, 0x0002c90300a1b2c0
	mac := []byte{0xb8, 0xce, 0xf6, 0xa1, 0xb2, 0xc4}
	os.WriteFile(filepath.Join(dir, "root/sys/class/net/eth0/address"), []byte("b8:ce:f6:a1:b2:c4\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "root/sys/class/infiniband/mlx5_0/node_guid"), []byte("0002:c903:00a1:b2c3\n"), 0o644)
	os.WriteFile(filepath.Join(dir, KmsgFile), []byte("6,1,0,-;mlx5_core: sys image guid 0x0002c90300a1b2c0 board MT2231X67890\n6,2,0,-;not a serial: MT2231X678901\n"), 0o644)

	const fam = 0x15
	info := devlink.Info{Handle: devlink.PCI("0000:3b:00.0"), Driver: "mlx5_core", Serial: "MT2231X12345",
		Fixed:   []devlink.Version{{Name: "board.id", Value: "MT_0000000222"}, {Name: "board.serial_number", Value: "MT2231X55555"}},
		Running: []devlink.Version{{Name: "fw.version", Value: "28.39.1002"}}}
	board := netlinkraw.AppendAttr(nil, 146 /* DEVLINK_ATTR_INFO_BOARD_SERIAL_NUMBER */, []byte("MT2231X67890\x00"))
	infoPath := filepath.Join(dir, DevlinkDir, "info.bin")
	os.WriteFile(infoPath, dltest.Encoder{Extra: board}.InfoReply(fam, info), 0o644)

	devPath := filepath.Join(dir, NetlinkDir, "dev.bin")
	os.WriteFile(devPath, nltest.DevDump([]nldev.Device{{Index: 1, Name: "mlx5_0", NumPorts: 1, FWVersion: "28.39.1002",
		NodeGUID: guid, SysImageGUID: sysGUID, NodeType: 1}}), 0o644)
	raw := make([]byte, 64)
	binary.BigEndian.PutUint64(raw[8:], guid)
	copy(raw[24:], mac)
	rawPath := filepath.Join(dir, NetlinkDir, "raw.bin")
	os.WriteFile(rawPath, nltest.QPRawDump(1, "mlx5_0", []nldev.Raw{{Data: raw}}), 0o644)

	if err := Redact(dir); err != nil {
		t.Fatal(err)
	}
	kmsg, _ := os.ReadFile(filepath.Join(dir, KmsgFile))
	var sysStand uint64
	var boardStand string
	if !strings.HasSuffix(string(kmsg), "\n6,2,0,-;not a serial: MT2231X678901\n") {
		t.Errorf("a longer word replaced as a serial number: %q", kmsg)
	}
	if _, err := fmt.Sscanf(string(kmsg), "6,1,0,-;mlx5_core: sys image guid 0x%x board %s\n", &sysStand, &boardStand); err != nil {
		t.Fatalf("redacted log %q: %v", kmsg, err)
	}
	nodeText, _ := os.ReadFile(filepath.Join(dir, "root/sys/class/infiniband/mlx5_0/node_guid"))

	b, _ := os.ReadFile(infoPath)
	for _, s := range []string{"MT2231X12345", "MT2231X67890", "MT2231X55555"} {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("serial %s left in the devlink reply", s)
		}
	}
	if len(boardStand) != 12 || !bytes.Contains(b, []byte(boardStand+"\x00")) {
		t.Errorf("board serial's stand-in %q in the log is not the reply's", boardStand)
	}
	got, err := devlink.DecodeInfo(b, fam)
	if err != nil {
		t.Fatalf("redacted info no longer decodes: %v", err)
	}
	if len(got.Serial) != 12 || got.Serial == boardStand || got.Fixed[0].Value != "MT_0000000222" ||
		len(got.Fixed[1].Value) != 12 || got.Running[0].Value != "28.39.1002" {
		t.Errorf("redacted info %+v", got)
	}

	b, _ = os.ReadFile(devPath)
	devs, err := nldev.DecodeDevices(b)
	if err != nil || len(devs) != 1 {
		t.Fatalf("redacted device dump: %v %v", devs, err)
	}
	if d := devs[0]; d.NodeGUID.String()+"\n" != string(nodeText) || uint64(d.SysImageGUID) != sysStand ||
		d.NodeGUID == d.SysImageGUID || d.NodeGUID >= 1<<16 || d.FWVersion != "28.39.1002" {
		t.Errorf("redacted device %+v (sysfs %q, log %#x)", d, nodeText, sysStand)
	}
	b, _ = os.ReadFile(rawPath)
	raws, err := nldev.DecodeQPsRaw(b)
	if err != nil || len(raws) != 1 {
		t.Fatalf("redacted raw dump: %v %v", raws, err)
	}
	if v := nldev.GUID(binary.BigEndian.Uint64(raws[0].Data[8:])); v != devs[0].NodeGUID {
		t.Errorf("GUID in the raw context: %v", v)
	}
	if bytes.Equal(raws[0].Data[24:30], mac) {
		t.Error("MAC left in the raw context")
	}
}

// A recording's description is redacted with the rest: meta.json is written before redaction.
func TestRecordRedactsDescription(t *testing.T) {
	h, err := OpenRoot(mkroot(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Record(h, dir, RecordOptions{Now: time.Unix(0, 0), Redact: true, Minimal: true, Description: "gpu-node-17 after the reboot"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if err != nil {
		t.Fatal(err)
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil || m.Description != "host-1 after the reboot" || !m.Redacted {
		t.Errorf("meta.json %s: %v", b, err)
	}
}
