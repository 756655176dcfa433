package firmware

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// mlx5 devlink info (drivers/net/ethernet/mellanox/mlx5/core/devlink.c, mlx5_devlink_info_get;
// Documentation/networking/devlink/mlx5.rst): fixed "fw.psid" = board_id, running and stored
// "fw.version"; stored is the flashed image that the next reset activates, or the running one
// when nothing is pending.
const (
	infoFWVersion = "fw.version"
	infoPSID      = "fw.psid"
)

// devlinkView is what the host's devlink says about its instances, asked once per check run.
type devlinkView struct {
	client *devlink.Client
	// present holds the instances the kernel lists; err says why none could be listed.
	present map[devlink.Handle]bool
	err     error
}

func newDevlinkView(h *host.Host) *devlinkView {
	v := &devlinkView{client: devlink.NewClient(h.Devlink()), present: map[devlink.Handle]bool{}}
	hs, err := v.client.Devices()
	v.err = err
	for _, x := range hs {
		v.present[x] = true
	}
	return v
}

// unavailable turns a failed instance listing into the finding for one device: skipped when
// devlink is simply not there (kernel without it, not recorded), unknown when asking failed.
func (v *devlinkView) unavailable(f engine.Finding, d *inventory.Device) engine.Finding {
	switch {
	case errors.Is(v.err, devlink.ErrNoDevlink):
		f.Severity = report.Skipped
		f.Summary = fmt.Sprintf("skipped: %s: devlink not available (the kernel has no devlink family), so a pending firmware update cannot be seen", d.Name)
	case errors.Is(v.err, host.ErrNotRecorded):
		f.Severity = report.Skipped
		f.Summary = fmt.Sprintf("skipped: %s: devlink answers not recorded in this snapshot, so a pending firmware update cannot be seen", d.Name)
	default:
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("%s: devlink could not be asked for running vs stored firmware: %v", d.Name, v.err)
		f.Remediation = fmt.Sprintf("Run `devlink dev info pci/%s` by hand and compare the running and stored fw.version.", d.PCI.BDF)
	}
	f.Evidence = append(f.Evidence, report.Ev("devlink", v.err.Error(), "netlink:devlink"))
	return f
}

func runPending(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	if f := noDevices(inv); f != nil {
		return f, nil
	}
	var view *devlinkView
	var out []engine.Finding
	for _, d := range inv.Devices {
		f := engine.Finding{Finding: report.Finding{Subject: devSubject(d)}}
		switch {
		case d.Software():
			f.Severity = report.Skipped
			f.Summary = fmt.Sprintf("skipped: %s is a software device (%s): no firmware to update", d.Name, orNone(d.Driver))
		case d.PCI.IsVF():
			f.Severity = report.Skipped
			f.Summary = fmt.Sprintf("skipped: %s is a VF: devlink info reports firmware versions for PFs only (its PF %s carries them)", d.Name, d.PCI.PF)
		case d.PCI.Vendor != nvidiaVendor || d.PCI.Driver != "mlx5_core":
			f.Severity = report.Skipped
			f.Summary = fmt.Sprintf("skipped: %s is not an mlx5 PF (vendor %04x, driver %s); running vs stored firmware is read for mlx5 only", d.Name, d.PCI.Vendor, orNone(d.PCI.Driver))
		default:
			if view == nil {
				view = newDevlinkView(env.Host)
			}
			f = judgePending(view, d, f)
		}
		out = append(out, f)
	}
	return out, nil
}

func judgePending(v *devlinkView, d *inventory.Device, f engine.Finding) engine.Finding {
	if v.err != nil {
		return v.unavailable(f, d)
	}
	h := devlink.PCI(d.PCI.BDF)
	src := "netlink:devlink INFO_GET " + h.String()
	if !v.present[h] {
		f.Severity = report.Skipped
		f.Summary = fmt.Sprintf("skipped: %s: no devlink instance %s (driver without devlink support)", d.Name, h)
		return f
	}
	info, err := v.client.Info(h)
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno) && errno == syscall.EOPNOTSUPP:
		f.Severity = report.Skipped
		f.Summary = fmt.Sprintf("skipped: %s: the driver gives no devlink info for %s", d.Name, h)
		return f
	case err != nil:
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("%s: devlink info %s could not be read: %v", d.Name, h, err)
		f.Remediation = fmt.Sprintf("Run `devlink dev info %s` by hand and compare the running and stored fw.version.", h)
		return f
	}
	running, okR := info.RunningVersion(infoFWVersion)
	stored, okS := info.StoredVersion(infoFWVersion)
	psid, okP := info.FixedVersion(infoPSID)
	f.Evidence = []report.Evidence{
		report.Ev("running fw.version", orNone(running), src),
		report.Ev("stored fw.version", orNone(stored), src),
		report.Ev("fw_ver", orNone(d.FWVer), classPath(d, "fw_ver")),
	}
	if !okR || !okS {
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("%s: devlink info %s lacks the running or stored fw.version, so a pending update cannot be judged", d.Name, h)
		f.Remediation = "Query the card with mlxfwmanager --query -d " + d.PCI.BDF + " (it shows the running and the pending image)."
		return f
	}
	var problems []string
	f.Severity = report.OK
	if running != stored {
		// A flashed image runs only after a firmware reset: until then the host runs (and
		// firmware.version judged) the old one, and the next reboot changes the firmware under
		// the workload. Worth fixing in a maintenance window, not an outage: warning.
		f.Severity = report.Warning
		problems = append(problems, fmt.Sprintf("firmware %s flashed but not active (running %s): reset the card (mlxfwreset -d %s reset, or reboot) to run it", stored, running, d.PCI.BDF))
		f.Remediation = fmt.Sprintf("Reset the card so that firmware %s runs: mlxfwreset -d %s reset (or reboot) in a maintenance window; then check firmware.version again.", stored, d.PCI.BDF)
		// The image is already flashed: what remains is the reset, not an update.
		f.Action = report.ActionResetDevice
	}
	if okP && d.BoardID != "" {
		f.Evidence = append(f.Evidence, report.EvExp("fw.psid", psid, d.BoardID, src+" vs "+classPath(d, "board_id")))
		if psid != d.BoardID {
			// Both come from the same QUERY_ADAPTER PSID in mlx5 (mlx5_query_board_id() in
			// mlx5/core/fw.c fills dev->board_id, which sysfs board_id shows and
			// mlx5_devlink_info_get() reports as fw.psid), so a difference means the card was
			// reconfigured or the two views disagree: the image selection by PSID (mlxup,
			// mlxfwmanager) can pick the wrong firmware.
			f.Severity = report.Warning
			problems = append(problems, fmt.Sprintf("devlink fw.psid %s differs from board_id %s", psid, d.BoardID))
			if f.Remediation == "" {
				f.Remediation = "Query the card (mlxfwmanager --query -d " + d.PCI.BDF + ") to see which PSID it reports, and reload the driver or reset the card so that both views agree before flashing anything."
			}
			f.Action = report.ActionResetDevice
		}
	}
	if len(problems) > 0 {
		f.Summary = d.Name + ": " + strings.Join(problems, "; ")
		return f
	}
	f.Summary = fmt.Sprintf("%s: running firmware %s is also the stored one: no update waiting for a reset", d.Name, running)
	return f
}
