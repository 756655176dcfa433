package firmware

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

// Driver kinds in the matrix.
const (
	// KindOFED is MLNX_OFED or DOCA-OFED, identified by /sys/module/mlx5_core/version.
	KindOFED = "ofed"
	// KindInbox is the kernel's own driver, identified by the kernel release.
	KindInbox = "inbox"
)

// Driver is the driver a device's firmware must be compatible with.
type Driver struct {
	Module  string // mlx5_core
	Kind    string // ofed or inbox
	Version string // "5.7-1.0.2" or the kernel release "6.1.0-27-amd64"
	Source  string // where the version was read
}

func (d Driver) String() string {
	if d.Kind == KindOFED {
		return fmt.Sprintf("%s %s (MLNX_OFED/DOCA-OFED)", d.Module, d.Version)
	}
	return fmt.Sprintf("%s in-box, kernel %s", d.Module, d.Version)
}

// detectDriver tells OFED from in-box: upstream mlx5_core declares no MODULE_VERSION since
// Linux 5.11 (drivers/net/ethernet/mellanox/mlx5/core/main.c has only MODULE_AUTHOR,
// _DESCRIPTION and _LICENSE), and the kernel creates /sys/module/<m>/version only for a module
// that declares one (kernel/module/main.c, modinfo_version), so the file exists for the OFED
// driver, whose version reads like "24.10-1.1.4" — and for in-box drivers before 5.11, whose
// mlx5_core.h defined DRIVER_VERSION as a fixed "5.0-0" (earlier "3.0-1"), removed by commit
// 17a7612b99e6 "net/mlx5_core: Clean driver version and name" (also in 5.10.y stable).
func detectDriver(h *host.Host, module string) (Driver, error) {
	d := Driver{Module: module}
	p := "/sys/module/" + module + "/version"
	v, err := h.ReadString(p)
	switch {
	case err == nil && module == "mlx5_core" && upstreamVersions[v]:
		// The in-box driver of an older kernel: judged as in-box, by the kernel release.
	case err == nil && module == "mlx5_core":
		if err := checkOFEDVersion(v); err != nil {
			return d, fmt.Errorf("%s: %w", p, err)
		}
		d.Kind, d.Version, d.Source = KindOFED, v, p
		return d, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return d, err
	}
	d.Kind = KindInbox
	if rel, err := h.ReadString("/proc/sys/kernel/osrelease"); err == nil && rel != "" {
		d.Version, d.Source = rel, "/proc/sys/kernel/osrelease"
		return d, nil
	}
	if f, err := h.Facts(); err == nil && f.KernelRelease != "" {
		d.Version, d.Source = f.KernelRelease, "facts.kernel_release"
		return d, nil
	}
	return d, errors.New("kernel release unknown (/proc/sys/kernel/osrelease unreadable and not in the facts)")
}

// upstreamVersions are the fixed DRIVER_VERSION strings of the in-box mlx5_core before Linux 5.11.
var upstreamVersions = map[string]bool{"5.0-0": true, "3.0-1": true}

// checkOFEDVersion accepts the DRIVER_VERSION forms seen in OFED trees ("5.8-1.0.1",
// "24.10-1.1.4", "5.7-1.0.2.0"): numbers separated by dots with one dash.
func checkOFEDVersion(v string) error {
	base, rel, ok := strings.Cut(v, "-")
	if !ok {
		return fmt.Errorf("OFED driver version %q: want <series>-<release> such as 5.7-1.0.2", v)
	}
	for _, part := range append(strings.Split(base, "."), strings.Split(rel, ".")...) {
		if _, err := strconv.ParseUint(part, 10, 16); err != nil {
			return fmt.Errorf("OFED driver version %q: %q is not a number", v, part)
		}
	}
	return nil
}

// seriesMatch reports whether a driver version belongs to a matrix series: "5.7" matches
// "5.7-1.0.2" and "5.7"; "6.1" matches the kernel release "6.1.0-27-amd64"; "" matches all.
func seriesMatch(series, version string) bool {
	if series == "" {
		return true
	}
	if !strings.HasPrefix(version, series) {
		return false
	}
	rest := version[len(series):]
	return rest == "" || rest[0] == '-' || rest[0] == '.'
}
