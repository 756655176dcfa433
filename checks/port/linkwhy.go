package port

import (
	"errors"
	"fmt"
	"strconv"
	"syscall"

	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
)

// Why a link is down, as the driver tells ethtool (LINKSTATE_GET's extended state, what
// `ethtool <dev>` prints as "Link detected: no (Autoneg, No partner detected)"): mlx5e maps
// the port's PDDR troubleshooting status opcode to it (mlx5e_link_ext_state_opcode_map in
// drivers/net/ethernet/mellanox/mlx5/core/en_ethtool.c, Linux 5.10 and later), which is the
// reason mlxlink prints as "Troubleshooting Info". Drivers without get_link_ext_state, kernels
// before 5.10 and snapshots recorded without the answer say nothing, and the finding reads as
// before.

// linkWhy is a down netdev's link state.
type linkWhy struct {
	netdev string
	ls     *ethtoolnl.LinkState
}

// linkStateOf asks ethtool for nd's link state. It is nil with no error when the source has no
// ethtool, the kernel or driver does not answer (EOPNOTSUPP) or a snapshot lacks the answer: an
// absent reason is no evidence. Any other failure is returned, to be quoted.
func linkStateOf(h *host.Host, nd string) (*ethtoolnl.LinkState, error) {
	c := ethtoolClient(h)
	if c == nil {
		return nil, nil
	}
	ls, err := c.LinkState(nd)
	if errors.Is(err, host.ErrNotRecorded) || errors.Is(err, syscall.EOPNOTSUPP) {
		return nil, nil
	}
	return ls, err
}

// evidence is what the finding quotes: the reason and the driver's link-down count.
func (w linkWhy) evidence() []report.Evidence {
	src := "ethtool netlink LINKSTATE_GET " + w.netdev
	var out []report.Evidence
	if w.ls.ExtState != nil {
		v := w.ls.ExtState.String()
		if s := w.ls.Substate(); s != "" {
			v += ", " + s
		}
		out = append(out, report.Ev("netdev "+w.netdev+" link down reason (driver)", v, src))
	}
	if w.ls.DownCount != nil {
		out = append(out, report.Ev("netdev "+w.netdev+" link down events (driver)", strconv.FormatUint(uint64(*w.ls.DownCount), 10), src))
	}
	return out
}

// explain turns the extended state into the cause, the fix and the action automation should
// take; all empty when the driver gave no reason. The causes follow the states' comments in include/uapi/linux/ethtool.h and the
// PDDR opcodes mlx5e maps to each.
func (w linkWhy) explain() (cause, fix string, act report.Action) {
	if w.ls == nil || w.ls.ExtState == nil {
		return "", "", ""
	}
	nd, sub := w.netdev, w.ls.Substate()
	// with puts the substate after the cause's head: "auto-negotiation failed (No partner
	// detected): the far end ...".
	with := func(head, rest string) string {
		if sub != "" {
			head += " (" + sub + ")"
		}
		return head + rest
	}
	switch *w.ls.ExtState {
	case ethtoolnl.ExtNoCable:
		return "the driver sees no cable or module in the cage", fmt.Sprintf("Plug a cable or module into %s's port, or seat it fully; if the port is meant to be unused, ignore it.", nd), report.ActionReseatOrCleanCable
	case ethtoolnl.ExtAutoneg:
		return with("auto-negotiation failed", ": the far end does not answer (switch port down or disabled, unplugged at the far end, or set to a fixed speed)"),
			fmt.Sprintf("Check that the switch port facing %s is enabled and negotiates (or set both ends to the same fixed speed and FEC: ethtool -s %s speed <Mb/s> autoneg off); then reseat the cable.", nd, nd), report.ActionFixConfiguration
	case ethtoolnl.ExtLinkTrainingFailure:
		return with("link training failed", ": the two ends could not tune the lanes"),
			fmt.Sprintf("Reseat, then replace the cable or module of %s; check the switch port's speed setting against the cable's rate.", nd), report.ActionReseatOrCleanCable
	case ethtoolnl.ExtLinkLogicalMismatch:
		return with("the PCS or FEC of the two ends do not lock", ": different FEC or speed settings"),
			fmt.Sprintf("Set the same FEC on both ends (ethtool --show-fec %s; ethtool --set-fec %s encoding rs|baser|off, and the switch port alike) and the same speed.", nd, nd), report.ActionFixConfiguration
	case ethtoolnl.ExtBadSignalIntegrity:
		return with("the received signal is too poor to hold a link", ""),
			fmt.Sprintf("Clean the fibre ends or reseat the copper cable of %s, then replace the cable or module; an unsupported rate needs a supported speed setting.", nd), report.ActionReseatOrCleanCable
	case ethtoolnl.ExtCableIssue:
		return with("the cable or module is not one the adapter supports, or failed its test", ""),
			fmt.Sprintf("Replace the cable or module of %s with one the adapter's firmware supports (NVIDIA's firmware release notes list qualified cables).", nd), report.ActionReplaceCableOrModule
	case ethtoolnl.ExtEEPROMIssue:
		return "the module's EEPROM could not be read or parsed", fmt.Sprintf("Reseat the module of %s; replace it if the reason stays.", nd), report.ActionReplaceCableOrModule
	case ethtoolnl.ExtCalibrationFailure:
		return "the PHY's calibration failed", fmt.Sprintf("Reseat the cable of %s and reset the port (ip link set %s down; ip link set %s up); if it persists, contact the adapter's vendor.", nd, nd, nd), report.ActionReseatOrCleanCable
	case ethtoolnl.ExtPowerBudgetExceeded:
		return "the module needs more power than the port can give", fmt.Sprintf("Use a module within the port's power class for %s (or a port that allows high-power modules).", nd), report.ActionReplaceCableOrModule
	case ethtoolnl.ExtOverheat:
		return "the module overheated and was shut down", fmt.Sprintf("Check the airflow and fans around %s's module and the module's temperature (port.transceiver); replace a module that overheats in a cooled chassis.", nd), report.ActionCheckCooling
	case ethtoolnl.ExtModule:
		return with("the module is not ready", ""), fmt.Sprintf("Reseat the module of %s; replace it if it stays not ready.", nd), report.ActionReplaceCableOrModule
	}
	return "the driver reports " + w.ls.ExtState.String(), fmt.Sprintf("Check the cable, module and switch port of %s.", nd), report.ActionReseatOrCleanCable
}
