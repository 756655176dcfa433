package host

import (
	"strconv"
	"time"
)

// Facts are the parts of a host that are not files but that checks judge: they are computed on a
// live host and recorded in snapshots (facts.json).
type Facts struct {
	// Hostname as the kernel reports it (redacted in redacted snapshots).
	Hostname string `json:"hostname"`
	// KernelRelease is uname -r.
	KernelRelease string `json:"kernel_release"`
	// EUID is the effective uid of the process that read the host; non-root hides files.
	EUID int `json:"euid"`
	// MemlockSoft and MemlockHard are RLIMIT_MEMLOCK in bytes; ^uint64(0) is unlimited.
	MemlockSoft uint64 `json:"memlock_soft"`
	MemlockHard uint64 `json:"memlock_hard"`
	// CharDevs lists /dev/infiniband/* and whether this process could open each read-write.
	CharDevs []CharDev `json:"char_devs"`
	// Libraries says where the verbs user space was found: libibverbs.so.1 and the providers.
	Libraries []Library `json:"libraries"`
	// InContainer is a best guess (/.dockerenv, /run/.containerenv, cgroup names); it changes how a
	// missing /dev/infiniband is explained.
	InContainer bool `json:"in_container"`
	// CapEff is the process's effective capability set as /proc/self/status prints it (hex,
	// proc(5) "CapEff"); empty when unknown. It tells a refusal of the kernel log that
	// kernel.dmesg_restrict makes (no CAP_SYSLOG) from one a container's device cgroup makes.
	CapEff string `json:"cap_eff,omitempty"`
	// VerbsDevices are the limits ibv_query_device reported for each device libibverbs could
	// open. Netlink and sysfs do not expose them (max_qp above all), so they are recorded here to
	// let snapshots judge exhaustion exactly as a live run does. Nil means not queried (a plain
	// root tree, an older snapshot); VerbsError then may say why.
	VerbsDevices []VerbsDevice `json:"verbs_devices,omitempty"`
	VerbsError   string        `json:"verbs_error,omitempty"`
	// SourceLacks lists the parts of the machine a --root tree did not hold (Host.Lacks), so
	// that a recording of the tree still says so; empty for a live host.
	SourceLacks []Part `json:"source_lacks,omitempty"`
}

// VerbsDevice is one device's ibv_query_device limits and its number of completion vectors.
type VerbsDevice struct {
	Name           string `json:"name"`
	MaxQP          int64  `json:"max_qp"`
	MaxQPWR        int64  `json:"max_qp_wr"`
	MaxCQ          int64  `json:"max_cq"`
	MaxCQE         int64  `json:"max_cqe"`
	MaxSRQ         int64  `json:"max_srq"`
	MaxMR          int64  `json:"max_mr"`
	MaxPD          int64  `json:"max_pd"`
	NumCompVectors int    `json:"num_comp_vectors"`
	// Error is set (and the limits are zero) when the device could not be opened or queried.
	Error string `json:"error,omitempty"`
	// GIDsRead says GIDs holds the device's whole GID table (every port's valid entries, from one
	// ibv_query_gid_table while the device was open): sysfs needs one file per entry for the same
	// (1024 per port on rxe). False when the library lacks the call, the query failed
	// (GIDError) or the recording predates it; the table is then read from sysfs.
	GIDsRead bool       `json:"gids_read,omitempty"`
	GIDs     []VerbsGID `json:"gids,omitempty"`
	GIDError string     `json:"gid_error,omitempty"`
}

// VerbsGID is one valid GID table entry as ibv_query_gid_table gives it (struct ibv_gid_entry).
type VerbsGID struct {
	Port  int `json:"port"`
	Index int `json:"index"`
	// GID is the 16-byte GID as sysfs prints it (gids/N: eight groups of four hex digits).
	GID string `json:"gid"`
	// Type is the kernel's GID type (0 IB, 1 RoCE v1, 2 RoCE v2: enum ib_uverbs_gid_type,
	// include/uapi/rdma/ib_user_ioctl_verbs.h).
	Type uint32 `json:"type"`
	// Ifindex is the index of the entry's netdev in its network namespace; 0 when none. It names
	// the netdev only in that namespace, so the name is read from sysfs (gid_attrs/ndevs/N).
	Ifindex uint32 `json:"ifindex,omitempty"`
}

// CharDev is one character device node and the result of opening it.
type CharDev struct {
	Path  string `json:"path"`
	Major uint32 `json:"major"`
	Minor uint32 `json:"minor"`
	Mode  string `json:"mode"`
	// OpenError is empty when open(O_RDWR) succeeded (the node was closed at once) or was not
	// tried: only uverbs nodes are opened (opening issmN would set the port's IsSM bit).
	OpenError string `json:"open_error,omitempty"`
}

// Library is a shared object the verbs stack needs, looked up the way the dynamic loader and
// libibverbs would (ld.so.cache directories, then the provider directory).
type Library struct {
	// Name is the soname or provider file name, e.g. "libibverbs.so.1", "librxe-rdmav34.so".
	Name string `json:"name"`
	// Path where it was found; empty when it was not found.
	Path string `json:"path,omitempty"`
}

// RecordInfo is written by `rdmadiag record` into meta.json.
type RecordInfo struct {
	ToolVersion string    `json:"tool_version"`
	Time        time.Time `json:"time"`
	Redacted    bool      `json:"redacted"`
	// Unreadable lists what could not be captured and why (not root, permission, vanished).
	Unreadable []Unreadable `json:"unreadable,omitempty"`
	// KernelLog says where the recorded kernel log was read, or which limit kept it out.
	KernelLog *KernelLogInfo `json:"kernel_log,omitempty"`
}

// Unreadable is one path or source that could not be recorded.
type Unreadable struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Capability numbers of include/uapi/linux/capability.h.
const (
	CapSysAdmin = 21
	CapSyslog   = 34
)

// HasCap reports whether the effective set holds capability c; known is false when the set was
// not read (an older snapshot, a tree) or does not parse.
func (f *Facts) HasCap(c uint) (has, known bool) {
	if f == nil || f.CapEff == "" {
		return false, false
	}
	v, err := strconv.ParseUint(f.CapEff, 16, 64)
	if err != nil {
		return false, false
	}
	return v&(1<<c) != 0, true
}

// FormatGID prints a GID as sysfs does (gids/N, "%pI6": eight groups of four hex digits).
func FormatGID(g [16]byte) string {
	b := make([]byte, 0, 39)
	const hex = "0123456789abcdef"
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			b = append(b, ':')
		}
		b = append(b, hex[g[i]>>4], hex[g[i]&15], hex[g[i+1]>>4], hex[g[i+1]&15])
	}
	return string(b)
}
