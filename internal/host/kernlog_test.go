package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/kmsg"
)

// tree builds a root directory holding the given files (host path -> content).
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	r := t.TempDir()
	for p, v := range files {
		full := filepath.Join(r, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func unavailable(t *testing.T, err error) *LogUnavailable {
	t.Helper()
	var lu *LogUnavailable
	if !errors.As(err, &lu) {
		t.Fatalf("want a *LogUnavailable, got %T %v", err, err)
	}
	return lu
}

// A refused /dev/kmsg is explained from what the run observes: kernel.dmesg_restrict, the
// process's CAP_SYSLOG and whether it runs in a container; the fix given is one that can work
// there (a container needs the device allowed, which no sysctl or capability on its own gives).
func TestLiveKmsgRefused(t *testing.T) {
	eperm := &fs.PathError{Op: "open", Path: "/dev/kmsg", Err: syscall.EPERM}
	eacces := &fs.PathError{Op: "open", Path: "/dev/kmsg", Err: syscall.EACCES}
	const (
		rootCaps  = "000001ffffffffff" // every capability (CAP_SYSLOG is bit 34)
		dockerCap = "00000000a80425fb" // Docker's default set: no CAP_SYSLOG, no CAP_SYS_ADMIN
		adminOnly = "0000000000200000" // CAP_SYS_ADMIN alone, which printk accepts too
	)
	for _, c := range []struct {
		name      string
		restrict  string // "" = the sysctl file is absent
		capEff    string
		container bool
		err       error
		reason    string
		lift      string
		notReason string
	}{
		{"dmesg_restrict=1, no CAP_SYSLOG", "1\n", dockerCap, false, eperm,
			"kernel.dmesg_restrict=1 lets only processes with CAP_SYSLOG read the kernel log, and this process lacks CAP_SYSLOG", "sysctl kernel.dmesg_restrict=0", ""},
		{"dmesg_restrict=1, capabilities unknown", "1\n", "", false, eperm, "CAP_SYSLOG unknown", "run as root or with CAP_SYSLOG", ""},
		{"sysctl unreadable", "", "", false, eperm, "not root, or kernel.dmesg_restrict=1", "run as root or with CAP_SYSLOG", ""},
		{"security module", "0\n", dockerCap, false, eperm, "a security module", "security policy", ""},
		{"security module despite CAP_SYSLOG", "1\n", rootCaps, false, eperm, "a security module", "security policy", ""},
		{"node permissions", "0\n", "", false, eacces, "mode does not let this user read it", "run as root", ""},
		// A container's root with CAP_SYSLOG: the device cgroup refuses, not the sysctl.
		{"container, CAP_SYSLOG", "1\n", rootCaps, true, eperm, "device cgroup does not allow /dev/kmsg", "--device /dev/kmsg", "dmesg_restrict=1 lets only"},
		{"container, CAP_SYS_ADMIN", "1\n", adminOnly, true, eperm, "this process has CAP_SYSLOG", "--privileged", "dmesg_restrict=1 lets only"},
		{"container, dmesg_restrict=0", "0\n", dockerCap, true, eperm, "dmesg_restrict=0 lets every process read the kernel log: this process runs in a container", "run rdmadiag on the node", ""},
		// Docker's root without CAP_SYSLOG under dmesg_restrict=1: the capability is missing, and
		// the sysctl is the host's, so the fix is the container's (capability and device).
		{"container, no CAP_SYSLOG", "1\n", dockerCap, true, eperm, "lacks CAP_SYSLOG", "--cap-add SYSLOG", ""},
	} {
		files := map[string]string{}
		if c.restrict != "" {
			files["proc/sys/kernel/dmesg_restrict"] = c.restrict
		}
		facts := &Facts{CapEff: c.capEff, InContainer: c.container}
		h, err := New(Options{Root: tree(t, files), Kind: KindLive, KernelLog: func() ([]byte, error) { return nil, c.err },
			Facts: func() (*Facts, error) { return facts, nil }})
		if err != nil {
			t.Fatal(err)
		}
		_, o, err := h.ReadKernelLog()
		lu := unavailable(t, err)
		if lu.Limit != LogLimitPrivilege || !strings.Contains(lu.Reason, c.reason) || !strings.Contains(lu.Lift, c.lift) ||
			(c.notReason != "" && strings.Contains(lu.Reason, c.notReason)) || !errors.Is(err, fs.ErrPermission) || o.Source != "/dev/kmsg" {
			t.Errorf("%s:\n reason %q\n lift %q\n(origin %+v)", c.name, lu.Reason, lu.Lift, o)
		}
		if !c.container && strings.Contains(lu.Lift, "--device") {
			t.Errorf("%s: a container's fix outside one: %q", c.name, lu.Lift)
		}
	}
}

// A missing /dev/kmsg in a container is the container's configuration; outside one it is not
// blamed on a container.
func TestLiveKmsgMissing(t *testing.T) {
	missing := &fs.PathError{Op: "open", Path: "/dev/kmsg", Err: syscall.ENOENT}
	for _, container := range []bool{true, false} {
		facts := &Facts{InContainer: container}
		h, _ := New(Options{Root: tree(t, nil), Kind: KindLive, KernelLog: func() ([]byte, error) { return nil, missing },
			Facts: func() (*Facts, error) { return facts, nil }})
		_, err := h.KernelLog()
		lu := unavailable(t, err)
		inContainer := strings.Contains(lu.Reason, "does not exist in this container")
		if lu.Limit != LogLimitSource || inContainer != container || !strings.Contains(lu.Lift, "--device /dev/kmsg") {
			t.Errorf("container %v: %+v", container, lu)
		}
	}
}

func TestLiveKmsgFailures(t *testing.T) {
	r := tree(t, nil)
	missing := &fs.PathError{Op: "open", Path: "/dev/kmsg", Err: syscall.ENOENT}
	h, _ := New(Options{Root: r, Kind: KindLive, KernelLog: func() ([]byte, error) { return nil, missing }})
	if lu := unavailable(t, func() error { _, err := h.KernelLog(); return err }()); lu.Limit != LogLimitSource {
		t.Errorf("no /dev/kmsg: %+v", lu)
	}
	// A read error is a failure, not a limit: the log's part stays unknown.
	eio := &fs.PathError{Op: "read", Path: "/dev/kmsg", Err: syscall.EIO}
	h, _ = New(Options{Root: r, Kind: KindLive, KernelLog: func() ([]byte, error) { return nil, eio }})
	var lu *LogUnavailable
	if _, err := h.KernelLog(); errors.As(err, &lu) || !errors.Is(err, syscall.EIO) {
		t.Errorf("EIO: %v", err)
	}
	h, _ = New(Options{Root: r, Kind: KindLive, KernelLog: func() ([]byte, error) { return []byte("6,1,2,-;x\n"), nil }})
	if b, o, err := h.ReadKernelLog(); err != nil || string(b) != "6,1,2,-;x\n" || o.Cite() != "kmsg" {
		t.Errorf("live log: %q %+v %v", b, o, err)
	}
}

func TestSnapshotWithoutKmsg(t *testing.T) {
	notRecorded := func() ([]byte, error) { return nil, ErrNotRecorded }
	for _, c := range []struct {
		name   string
		rec    *RecordInfo
		reason string
		lift   string
	}{
		{"no meta", nil, "the snapshot holds no kernel log", "record the snapshot as root"},
		{"listed unreadable", &RecordInfo{Unreadable: []Unreadable{{Path: "kmsg", Reason: "open /dev/kmsg: operation not permitted"}}},
			"recorded without the kernel log: open /dev/kmsg: operation not permitted", "record the snapshot as root"},
		{"recorded privilege limit", &RecordInfo{KernelLog: &KernelLogInfo{Limit: LogLimitPrivilege, Reason: "/dev/kmsg refused (EPERM): kernel.dmesg_restrict=1"}},
			"recorded without the kernel log: /dev/kmsg refused (EPERM): kernel.dmesg_restrict=1", "record the snapshot as root"},
		{"recorded tree without a log", &RecordInfo{KernelLog: &KernelLogInfo{Limit: LogLimitSource, Source: "the tree's log files", Reason: "the tree holds no kernel log", Lift: "copy it in"}},
			"the tree holds no kernel log", "copy it in"},
	} {
		h, err := New(Options{Root: tree(t, nil), Kind: KindSnapshot, KernelLog: notRecorded, Meta: Meta{Recorded: c.rec}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.KernelLog()
		lu := unavailable(t, err)
		if lu.Limit != LogLimitSource || lu.Reason != c.reason && !strings.Contains(lu.Reason, c.reason) || !strings.Contains(lu.Lift, c.lift) || !errors.Is(err, ErrNotRecorded) {
			t.Errorf("%s: %+v", c.name, lu)
		}
	}
	// A snapshot recorded from a tree's file cites that file.
	h, _ := New(Options{Root: tree(t, nil), Kind: KindSnapshot, KernelLog: func() ([]byte, error) { return nil, nil },
		Meta: Meta{Recorded: &RecordInfo{KernelLog: &KernelLogInfo{Path: "/var/log/kern.log"}}}})
	if _, o, _ := h.ReadKernelLog(); o.Source != "kmsg (recorded from /var/log/kern.log)" || o.Cite() != "/var/log/kern.log" {
		t.Errorf("origin %+v", o)
	}
}

const (
	kernLog = "Dec  1 09:00:00 node17 kernel: [14280.445220] mlx5_core 0000:61:00.0: wait_func_handle_exec_timeout:1104:(pid 141183): cmd[22]: CREATE_DCT(0x710) No done completion\n"
	dmesg   = "[    5.663152] mlx5_core: probe of 0000:01:00.0 failed with error -22\n"
)

func TestTreeKernelLog(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		path  string // the source used
		text  string // the first record's text
	}{
		{"kern.log first", map[string]string{"var/log/kern.log": kernLog, "var/log/dmesg": dmesg}, "/var/log/kern.log", "CREATE_DCT(0x710) No done completion"},
		{"var/log/dmesg", map[string]string{"var/log/dmesg": dmesg}, "/var/log/dmesg", "probe of 0000:01:00.0 failed"},
		{"a rotated, empty kern.log is passed over", map[string]string{"var/log/kern.log": "", "var/log/dmesg": dmesg}, "/var/log/dmesg", "probe of"},
		{"sosreport dmesg", map[string]string{"sos_commands/kernel/dmesg": dmesg, "sos_commands/kernel/dmesg_-T": "[Tue Dec  1 09:00:00 2026] other\n"}, "/sos_commands/kernel/dmesg", "probe of"},
		{"sosreport dmesg -T", map[string]string{"sos_commands/kernel/dmesg_-T": "[Tue Dec  1 09:00:00 2026] mlx5_core: probe of 0000:01:00.0 failed with error -22\n"}, "/sos_commands/kernel/dmesg_-T", "probe of"},
		{"messages: kernel lines only", map[string]string{"var/log/messages": "Dec  1 09:00:00 h sshd[1]: hello\n" + kernLog}, "/var/log/messages", "No done completion"},
		{"messages without kernel lines is used when nothing else is", map[string]string{"var/log/messages": "Dec  1 09:00:00 h sshd[1]: hello\n"}, "/var/log/messages", ""},
	} {
		h, err := New(Options{Root: tree(t, c.files), Kind: KindRoot})
		if err != nil {
			t.Fatal(err)
		}
		b, o, err := h.ReadKernelLog()
		if err != nil || o.Path != c.path || o.Source != c.path || o.Cite() != c.path {
			t.Errorf("%s: origin %+v, %v", c.name, o, err)
			continue
		}
		recs, _ := kmsg.Parse(b)
		if c.text == "" {
			if len(recs) != 0 {
				t.Errorf("%s: %+v", c.name, recs)
			}
			continue
		}
		if len(recs) == 0 || !strings.Contains(recs[0].Text, c.text) || !recs[0].NoLevel {
			t.Errorf("%s: records %+v", c.name, recs)
		}
	}
}

func TestTreeWithoutKernelLog(t *testing.T) {
	h, _ := New(Options{Root: tree(t, map[string]string{"proc/modules": ""}), Kind: KindRoot})
	_, err := h.KernelLog()
	lu := unavailable(t, err)
	if lu.Limit != LogLimitSource || !strings.Contains(lu.Reason, "var/log/kern.log") || !strings.Contains(lu.Lift, "var/log/kern.log") || !errors.Is(err, ErrNotRecorded) {
		t.Errorf("%+v", lu)
	}
	// A log without a kernel line in its newest part gives way to the next source.
	big := strings.Repeat("x", MaxFileSize+1)
	h, _ = New(Options{Root: tree(t, map[string]string{"var/log/kern.log": big, "var/log/dmesg": dmesg}), Kind: KindRoot})
	if _, o, err := h.ReadKernelLog(); err != nil || o.Path != "/var/log/dmesg" || o.Part != nil {
		t.Errorf("next source after an oversized one without kernel lines: %+v %v", o, err)
	}
}

// Of a log larger than MaxFileSize the newest MaxFileSize bytes are read, from the first whole
// line in them: the line the cut falls in is dropped, and the origin says which part was read.
func TestTreeKernelLogTail(t *testing.T) {
	line := func(i int) string {
		return fmt.Sprintf("Dec  1 09:00:00 node17 kernel: [%6d.000000] eth0: line %07d\n", i/100, i)
	}
	var b strings.Builder
	n := 0
	for ; b.Len() < MaxFileSize+MaxFileSize/2; n++ {
		b.WriteString(line(n))
	}
	// Lines whose newest MaxFileSize bytes start with a whole line (made longer to fit): the cut
	// falls at its start, and it is kept.
	L := len(line(0))
	var a strings.Builder
	a.WriteString(b.String()[:MaxFileSize/2])
	a.WriteString("\n")
	a.WriteString(strings.TrimSuffix(line(0), "\n") + strings.Repeat("y", MaxFileSize%L) + "\n")
	for i := 1; i < MaxFileSize/L; i++ {
		a.WriteString(line(n - MaxFileSize/L + i))
	}
	aligned := a.String()
	for _, tc := range []struct {
		name string
		log  string
	}{
		{"the cut in a line", b.String()},
		{"the cut at a line's start", aligned},
	} {
		h, _ := New(Options{Root: tree(t, map[string]string{"var/log/kern.log": tc.log}), Kind: KindRoot})
		enc, o, err := h.ReadKernelLog()
		if err != nil || o.Part == nil || o.Part.Size != int64(len(tc.log)) || o.Part.Read > MaxFileSize || o.Part.Read < MaxFileSize-int64(len(line(0))) {
			t.Fatalf("%s: origin %+v (part %+v), %v", tc.name, o, o.Part, err)
		}
		if s := o.Part.String(); !strings.HasPrefix(s, "only the last 8.0 MiB of the ") || !strings.Contains(s, " MiB of /var/log/kern.log were read") {
			t.Errorf("%s: %s", tc.name, s)
		}
		recs, skipped := kmsg.Parse(enc)
		if skipped != 0 || len(recs) == 0 || !strings.HasSuffix(recs[len(recs)-1].Text, fmt.Sprintf("line %07d", n-1)) {
			t.Fatalf("%s: %d records, %d skipped", tc.name, len(recs), skipped)
		}
		// The first record read is a whole line, and the one before the cut is not read.
		first := recs[0].Text
		if tc.log == aligned {
			if first != "eth0: line 0000000"+strings.Repeat("y", MaxFileSize%L) || o.Part.Read != MaxFileSize {
				t.Errorf("%s: first record %q, read %d bytes, want all %d", tc.name, first, o.Part.Read, MaxFileSize)
			}
			continue
		}
		var i int
		if _, err := fmt.Sscanf(first[strings.LastIndex(first, "line ")+5:], "%d", &i); err != nil || line(i)[len(line(i))-8:] != first[len(first)-7:]+"\n" {
			t.Fatalf("%s: first record %q", tc.name, first)
		}
		if want := int64(len(tc.log) - strings.Index(tc.log, line(i))); want != o.Part.Read {
			t.Errorf("%s: read %d bytes, the lines from %d on are %d", tc.name, o.Part.Read, i, want)
		}
	}
}

func TestTreeKernelLogNotReadable(t *testing.T) {
	// kern.log is usually mode 0640 root:adm; the refusal is replayed as a snapshot replays one,
	// so that the test needs no unprivileged user.
	r := tree(t, map[string]string{"var/log/kern.log": kernLog})
	h, _ := New(Options{Root: r, Kind: KindRoot, ReadErrors: map[string]syscall.Errno{"/var/log/kern.log": syscall.EACCES}})
	_, err := h.KernelLog()
	if lu := unavailable(t, err); lu.Limit != LogLimitPrivilege || !strings.Contains(lu.Lift, "root") || lu.Source != "/var/log/kern.log" {
		t.Errorf("%+v", lu)
	}
}
