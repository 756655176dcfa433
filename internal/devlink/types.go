package devlink

import "strings"

// Handle names a devlink instance: bus and device ("pci", "0000:3b:00.0"), as `devlink dev`
// prints it ("pci/0000:3b:00.0").
type Handle struct {
	Bus, Dev string
}

func (h Handle) String() string { return h.Bus + "/" + h.Dev }

// PCI returns a "pci/<BDF>" handle.
func PCI(bdf string) Handle { return Handle{Bus: "pci", Dev: strings.ToLower(bdf)} }

// Version is one name/value pair of devlink info ("fw.version", "28.39.1002").
type Version struct {
	Name, Value string
}

// Info is what DEVLINK_CMD_INFO_GET reports for one instance. Fixed, running and stored versions
// are kept apart: vishvananda/netlink merges them into one map, in which the stored version
// overwrites the running one, so a flashed-but-inactive firmware is invisible through it
// (collectInfoData in its devlink_linux.go keys fixed, running and stored values by name alone).
type Info struct {
	Handle
	Driver  string
	Serial  string
	Fixed   []Version
	Running []Version
	Stored  []Version
}

func lookup(vs []Version, name string) (string, bool) {
	for _, v := range vs {
		if v.Name == name {
			return v.Value, true
		}
	}
	return "", false
}

// FixedVersion returns the fixed (hardware) version called name, e.g. "fw.psid".
func (i *Info) FixedVersion(name string) (string, bool) { return lookup(i.Fixed, name) }

// RunningVersion returns the running version called name, e.g. "fw.version".
func (i *Info) RunningVersion(name string) (string, bool) { return lookup(i.Running, name) }

// StoredVersion returns the stored (flashed, active after a reset) version called name.
func (i *Info) StoredVersion(name string) (string, bool) { return lookup(i.Stored, name) }

// Reporter is one health reporter as DEVLINK_CMD_HEALTH_REPORTER_GET reports it (the fields of
// `devlink health show`: pr_out_health() in iproute2's devlink/devlink.c).
type Reporter struct {
	Handle
	// Port is the devlink port index of a per-port reporter (mlx5 tx, rx); HasPort is false for
	// device reporters (fw, fw_fatal, vnic).
	Port    uint32
	HasPort bool
	Name    string
	// State is StateHealthy or StateError.
	State        uint8
	ErrCount     uint64
	RecoverCount uint64
	// GracePeriod is the minimum time between recoveries in ms; HasGracePeriod is false for
	// reporters without a recover operation (mlx5 fw, vnic).
	GracePeriod    uint64
	HasGracePeriod bool
	AutoRecover    bool
	AutoDump       bool
	HasAutoDump    bool
	// DumpTSNs is the CLOCK_REALTIME time of the last dump in ns, 0 when none was taken.
	DumpTSNs uint64
}

// StateName is the state as `devlink health show` prints it.
func (r Reporter) StateName() string {
	switch r.State {
	case StateHealthy:
		return "healthy"
	case StateError:
		return "error"
	}
	return "<unknown state>"
}

// Reporter names of mlx5 (Documentation/networking/devlink/mlx5.rst, "Health reporters").
const (
	FWReporter      = "fw"
	FWFatalReporter = "fw_fatal"
	TxReporter      = "tx"
	RxReporter      = "rx"
	// VnicReporter is diagnose-only: its counters (cq_overrun, comp_eq_overrun,
	// async_eq_overrun, ...) come from DEVLINK_CMD_HEALTH_REPORTER_DIAGNOSE, not from the
	// reporter's error count.
	VnicReporter = "vnic"
)
