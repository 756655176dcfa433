package host

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rdmadiag/rdmadiag/internal/kmsg"
)

// LogLimit is why a host gives no kernel log when the cause is a limit of the run, not a fault.
type LogLimit string

// Kernel log limits; the values are report.LimitPrivilege and report.LimitSource.
const (
	// LogLimitPrivilege: the run may not read the log (not root, kernel.dmesg_restrict=1).
	LogLimitPrivilege LogLimit = "privilege"
	// LogLimitSource: the snapshot or tree holds no log.
	LogLimitSource LogLimit = "source"
)

// LogUnavailable is the error ReadKernelLog returns when a limit of the run keeps the kernel log
// from it. Any other error means reading failed (EIO, a garbled snapshot) and the log's part of a
// judgement is unknown.
type LogUnavailable struct {
	Limit LogLimit
	// Source is what was tried: "/dev/kmsg", "kmsg (recorded)", the tree's log files.
	Source string
	// Reason says in one line why there is no log; Lift what the operator can do about it.
	Reason string
	Lift   string
	Err    error
}

func (e *LogUnavailable) Error() string { return e.Reason }
func (e *LogUnavailable) Unwrap() error { return e.Err }

// LogOrigin says where a host's kernel log was read.
type LogOrigin struct {
	// Path is where the records were first read: "/dev/kmsg" or a file of a tree
	// ("/var/log/kern.log"); empty when a snapshot does not say.
	Path string
	// Source names it in the report: "/dev/kmsg", "kmsg (recorded)", "/var/log/kern.log".
	Source string
	// Part is set when only the newest part of a log file too large to read whole was read.
	Part *LogPart
}

// LogPart is the newest part of a log file that was read: its last Read bytes of Size, from the
// first whole line on.
type LogPart struct {
	Path       string
	Read, Size int64
}

// String says what was read, for a finding: "only the last 8.0 MiB of the 20.0 MiB of
// /var/log/kern.log were read (...); older lines are not judged".
func (p *LogPart) String() string {
	return fmt.Sprintf("only the last %s of the %s of %s were read (the file is larger than the %s a read takes); older lines are not judged",
		mib(p.Read), mib(p.Size), p.Path, mib(MaxFileSize))
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// Cite is the evidence source of a line quoted from the log: "kmsg" for records the kernel gave
// through /dev/kmsg (live or recorded), else the file they were read from.
func (o LogOrigin) Cite() string {
	if o.Path == "" || o.Path == "/dev/kmsg" {
		return "kmsg"
	}
	return o.Path
}

// KernelLogInfo is what a snapshot remembers of its kernel log (meta.json "kernel_log"): where it
// was read, or which limit kept it from the recording.
type KernelLogInfo struct {
	Path  string   `json:"path,omitempty"`
	Limit LogLimit `json:"limit,omitempty"`
	// Source, Reason and Lift are the LogUnavailable of the recorded host.
	Source string `json:"source,omitempty"`
	Reason string `json:"reason,omitempty"`
	Lift   string `json:"lift,omitempty"`
}

// TreeKernelLogs are the files a --root tree's kernel log is read from, in this order; the first
// that holds a kernel message is used. Debian and Ubuntu's rsyslog writes kern.* to kern.log;
// /var/log/dmesg is the boot's dmesg some distributions save; a sosreport holds the output of
// dmesg and dmesg -T under sos_commands/kernel/ (sos/report/plugins/kernel.py, the command line
// mangled into the file name); RHEL's rsyslog writes kernel messages to /var/log/messages.
var TreeKernelLogs = []struct {
	Path  string
	Parse func([]byte) ([]kmsg.Record, int)
}{
	{"/var/log/kern.log", kmsg.ParseSyslog},
	{"/var/log/dmesg", kmsg.ParseDmesg},
	{"/sos_commands/kernel/dmesg", kmsg.ParseDmesg},
	{"/sos_commands/kernel/dmesg_-T", kmsg.ParseDmesg},
	{"/var/log/messages", kmsg.ParseSyslog},
}

// KernelLog returns the kernel log in /dev/kmsg record format ("pri,seq,usec,flags;text" lines
// with " KEY=value" continuation lines), as read live, as recorded, or converted from a tree's
// log file.
func (h *Host) KernelLog() ([]byte, error) {
	b, _, err := h.ReadKernelLog()
	return b, err
}

// ReadKernelLog is KernelLog with where the log came from. When a limit of the run keeps the log
// away (no privilege, a source without one) the error is a *LogUnavailable.
func (h *Host) ReadKernelLog() ([]byte, LogOrigin, error) {
	defer h.begin("read the kernel log")()
	if h.klog == nil && h.kind == KindRoot {
		return h.treeKernelLog()
	}
	o := h.logOrigin()
	b, err := h.klog()
	if err != nil {
		return nil, o, h.classifyLogErr(err, o)
	}
	return b, o, nil
}

// logOrigin names where a host's KernelLog function reads.
func (h *Host) logOrigin() LogOrigin {
	switch h.kind {
	case KindLive:
		return LogOrigin{Path: "/dev/kmsg", Source: "/dev/kmsg"}
	case KindSnapshot:
		o := LogOrigin{Source: "kmsg (recorded)"}
		if r := h.meta.Recorded; r != nil && r.KernelLog != nil && r.KernelLog.Path != "" {
			o.Path = r.KernelLog.Path
			if o.Path != "/dev/kmsg" {
				o.Source = "kmsg (recorded from " + o.Path + ")"
			}
		}
		return o
	}
	return LogOrigin{Source: "kmsg"}
}

// classifyLogErr tells a limit of the run from a failure.
func (h *Host) classifyLogErr(err error, o LogOrigin) error {
	var lu *LogUnavailable
	if errors.As(err, &lu) {
		return err
	}
	switch {
	case h.kind == KindLive && errors.Is(err, fs.ErrPermission):
		return h.kmsgPermission(err)
	case h.kind == KindLive && errors.Is(err, fs.ErrNotExist):
		return h.kmsgMissing(err, o)
	case h.kind == KindSnapshot && errors.Is(err, ErrNotRecorded):
		return h.snapshotWithoutLog(err, o)
	case errors.Is(err, ErrNotRecorded):
		return &LogUnavailable{Limit: LogLimitSource, Source: o.Source, Err: err,
			Reason: "no kernel log was given: " + err.Error(), Lift: "provide the kernel log"}
	}
	return err
}

// kmsgPermission explains a refused /dev/kmsg from what the run observes: the sysctl, the
// process's capabilities and whether it runs in a container.
//
// devkmsg_open() (kernel/printk/printk.c) asks check_syslog_permissions() for
// SYSLOG_ACTION_READ_ALL, which is refused with EPERM only when kernel.dmesg_restrict is 1 and the
// process has neither CAP_SYSLOG nor CAP_SYS_ADMIN (Documentation/admin-guide/sysctl/kernel.rst,
// dmesg_restrict: "users must have CAP_SYSLOG"); it then asks security_syslog() (SELinux
// syslog_read, AppArmor). Before any of that, opening the character device (1:11,
// Documentation/ABI/testing/dev-kmsg) must pass the device cgroup, which refuses with EPERM
// whatever the capabilities (security/device_cgroup.c, and the BPF device programs of cgroup v2
// that container runtimes install): a container given /dev/kmsg as a bind mount but not as an
// allowed device, which is what an unprivileged container with -v /dev/kmsg gets. EACCES comes
// from the node's mode bits.
func (h *Host) kmsgPermission(err error) error {
	e := &LogUnavailable{Limit: LogLimitPrivilege, Source: "/dev/kmsg", Err: err}
	errno := err.Error()
	var en syscall.Errno
	if errors.As(err, &en) && unix.ErrnoName(en) != "" {
		errno = unix.ErrnoName(en)
	}
	restrict, rerr := h.ReadString("/proc/sys/kernel/dmesg_restrict")
	f, _ := h.facts()
	container := f != nil && f.InContainer
	syslog, known := f.HasCap(CapSyslog)
	if admin, _ := f.HasCap(CapSysAdmin); admin {
		syslog = true // check_syslog_permissions() still accepts CAP_SYS_ADMIN, with a warning
	}
	// The fix that lets a container read the log whatever refuses it: the device allowed and
	// CAP_SYSLOG (kernel.dmesg_restrict is the host's, not a container's), or privileged.
	const containerLift = "run the container with /dev/kmsg allowed and CAP_SYSLOG (docker or podman run --device /dev/kmsg --cap-add SYSLOG, " +
		"or --privileged; Kubernetes: securityContext.privileged: true), or run rdmadiag on the node itself"
	capText := "CAP_SYSLOG unknown"
	switch {
	case known && syslog:
		capText = "this process has CAP_SYSLOG"
	case known:
		capText = "this process lacks CAP_SYSLOG (CapEff " + f.CapEff + ")"
	}
	switch {
	case errno == "EACCES":
		e.Reason = fmt.Sprintf("/dev/kmsg refused (%s): the device node's mode does not let this user read it", errno)
		e.Lift = "run as root"
		if container {
			e.Lift = "run as root in the container, or " + containerLift
		}
	case rerr != nil:
		e.Reason = fmt.Sprintf("/dev/kmsg refused (%s): not root, or kernel.dmesg_restrict=1 (%v); %s", errno, rerr, capText)
		e.Lift = "run as root or with CAP_SYSLOG, or sysctl kernel.dmesg_restrict=0"
		if container {
			e.Reason += "; in a container the device cgroup may refuse it too"
			e.Lift = containerLift
		}
	case restrict == "1" && !(known && syslog):
		e.Reason = fmt.Sprintf("/dev/kmsg refused (%s): kernel.dmesg_restrict=1 lets only processes with CAP_SYSLOG read the kernel log, and %s", errno, capText)
		e.Lift = "run as root or with CAP_SYSLOG, or sysctl kernel.dmesg_restrict=0"
		if container {
			// The sysctl is the host's: the container needs the capability, and the device.
			e.Lift = containerLift
		}
	case container:
		// printk's own check passes (the sysctl is 0, or the capability is there): what refuses
		// the open of a node that exists is the container's device cgroup.
		why := "kernel.dmesg_restrict=" + restrict + " lets every process read the kernel log"
		if restrict != "0" {
			why = "kernel.dmesg_restrict=" + restrict + " and " + capText
		}
		e.Reason = fmt.Sprintf("/dev/kmsg refused (%s) although %s: this process runs in a container whose device cgroup does not allow /dev/kmsg "+
			"(mounted into it but not allowed as a device), or whose security profile denies reading the kernel log", errno, why)
		e.Lift = containerLift
	default:
		e.Reason = fmt.Sprintf("/dev/kmsg refused (%s) although kernel.dmesg_restrict=%s (%s): a security module (SELinux, AppArmor) denies this process syslog access", errno, restrict, capText)
		e.Lift = "run as root in a context the security policy allows to read the kernel log (syslog_read)"
	}
	return e
}

// kmsgMissing explains a /dev/kmsg that does not exist: a container it was not given to, or a
// /dev without it.
func (h *Host) kmsgMissing(err error, o LogOrigin) error {
	e := &LogUnavailable{Limit: LogLimitSource, Source: o.Source, Err: err}
	if f, _ := h.facts(); f != nil && f.InContainer {
		e.Reason = "/dev/kmsg does not exist in this container (it was not given the device): " + err.Error()
		e.Lift = "run the container with /dev/kmsg (docker or podman run --device /dev/kmsg --cap-add SYSLOG, or --privileged), or run rdmadiag on the node itself"
		return e
	}
	e.Reason = "/dev/kmsg does not exist here (a /dev without it, or a container rdmadiag does not recognise): " + err.Error()
	e.Lift = "run where /dev/kmsg exists (devtmpfs mounted on /dev; a container given --device /dev/kmsg), or on the node itself"
	return e
}

// snapshotWithoutLog says why a snapshot holds no kernel log: as the recording said when it
// recorded a limit, else from meta.json's list of what it could not read.
func (h *Host) snapshotWithoutLog(err error, o LogOrigin) error {
	e := &LogUnavailable{Limit: LogLimitSource, Source: o.Source, Err: err,
		Reason: "the snapshot holds no kernel log", Lift: "record the snapshot as root (rdmadiag record)"}
	r := h.meta.Recorded
	if r == nil {
		return e
	}
	if k := r.KernelLog; k != nil && k.Limit != "" {
		if k.Limit == LogLimitSource {
			// A tree without a log, or a snapshot of one: the same limit and the same lift.
			e.Source, e.Reason, e.Lift = k.Source, k.Reason, k.Lift
			return e
		}
		e.Reason = "the snapshot was recorded without the kernel log: " + k.Reason
		e.Lift = "record the snapshot as root (or with CAP_SYSLOG)"
		if k.Lift != "" {
			// What the recording host was told would work there (a container's device, the sysctl).
			e.Lift = "record the snapshot again so that the kernel log can be read: " + k.Lift
		}
		return e
	}
	for _, u := range r.Unreadable {
		if u.Path == "kmsg" {
			e.Reason = "the snapshot was recorded without the kernel log: " + u.Reason
			e.Lift = "record the snapshot as root (or with CAP_SYSLOG)"
		}
	}
	return e
}

// treeKernelLog reads a plain root tree's kernel log from the first of TreeKernelLogs that holds
// a kernel message, through the host's confined reads, and converts it to /dev/kmsg records. Of
// a file larger than MaxFileSize the newest part is read (readTail): a busy host's kern.log
// passes 8 MiB within days, and its newest lines are the ones that matter. A file that exists but cannot be read is passed over for the next; when
// none can be read, the first error says why.
func (h *Host) treeKernelLog() ([]byte, LogOrigin, error) {
	var firstErr error
	// fallback is the first file that was read but held no kernel message (a file just rotated,
	// a messages file without kernel lines): used when no other file holds more.
	var fallback []byte
	var fallbackO *LogOrigin
	var tried []string
	for _, c := range TreeKernelLogs {
		tried = append(tried, strings.TrimPrefix(c.Path, "/"))
		b, part, err := h.readTail(c.Path, MaxFileSize)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		o := LogOrigin{Path: c.Path, Source: c.Path, Part: part}
		if err != nil {
			if firstErr == nil {
				firstErr = err
				if errors.Is(err, fs.ErrPermission) {
					firstErr = &LogUnavailable{Limit: LogLimitPrivilege, Source: c.Path, Err: err,
						Reason: "the tree's kernel log is not readable by this user: " + err.Error(),
						Lift:   "run as root (log files are often readable only by root and group adm)"}
				}
			}
			continue
		}
		recs, skipped := c.Parse(b)
		enc := kmsg.Encode(recs, skipped)
		if len(recs) > 0 {
			return enc, o, nil
		}
		if fallbackO == nil {
			fallback, fallbackO = enc, &o
		}
	}
	switch {
	case firstErr != nil:
		return nil, LogOrigin{}, firstErr
	case fallbackO != nil:
		return fallback, *fallbackO, nil
	}
	return nil, LogOrigin{}, &LogUnavailable{Limit: LogLimitSource, Source: "the tree's log files", Err: ErrNotRecorded,
		Reason: "the tree holds no kernel log (looked for " + strings.Join(tried, ", ") + ")",
		Lift:   "copy the host's kernel log into the tree as var/log/kern.log (syslog) or var/log/dmesg (dmesg output)"}
}

// readTail reads a file of a tree as ReadFile does, except that of a file larger than limit it
// reads the last limit bytes, from the first whole line in them on (the line the cut falls in is
// dropped), and says so in the LogPart it returns.
func (h *Host) readTail(p string, limit int64) (b []byte, part *LogPart, err error) {
	if h.fsroot == nil {
		b, err := h.ReadFile(p)
		return b, nil, err
	}
	if len(h.readErrs) > 0 {
		if real, err := h.realpath(p); err == nil {
			if en, ok := h.readErrs[real]; ok {
				return nil, nil, &fs.PathError{Op: "read", Path: p, Err: en}
			}
		}
	}
	defer func() {
		if h.obs != nil {
			h.obs.FileRead(p, b, err)
		}
	}()
	defer h.begin("read " + p)()
	f, err := h.open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	size := st.Size()
	if size <= limit {
		b, err := readLimited(f, p)
		return b, nil, err
	}
	// One byte before the cut tells whether it falls at the start of a line.
	off := size - limit - 1
	b = make([]byte, limit+1)
	n, err := f.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, &fs.PathError{Op: "read", Path: p, Err: err}
	}
	b = b[:n]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	} else {
		b = nil // one line longer than limit: nothing whole to judge
	}
	return b, &LogPart{Path: p, Read: int64(len(b)), Size: size}, nil
}
