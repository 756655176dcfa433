package report

import "fmt"

// Action is what automation acting on a finding should do next, from a closed vocabulary
// (Actions), so that a repair workflow can route a node without reading the text. A problem
// finding (Severity.Problem) always carries one: its fault row's (report/engine/faults.json),
// unless the check that made it knows better; other findings carry none, or ActionNone.
// docs/output.md says when each is given.
type Action string

// Actions, from the least to the most disruptive step; docs/output.md describes each.
const (
	// ActionNone: nothing to do.
	ActionNone Action = "none"
	// ActionFixConfiguration: a setting of the host, the fabric, the application or the run
	// (a module option, a netdev down, no subnet manager, the card in a slower slot, no root).
	ActionFixConfiguration Action = "fix-configuration"
	// ActionLoadDriver: a kernel module of the RDMA stack is not loaded.
	ActionLoadDriver Action = "load-driver"
	// ActionUpdateFirmware: the firmware is older than required, or differs between identical cards.
	ActionUpdateFirmware Action = "update-firmware"
	// ActionResetDevice: the device must be reset (firmware reset, driver reload, function
	// reset): a firmware fault, a stalled queue, firmware flashed but not active.
	ActionResetDevice Action = "reset-device"
	// ActionRebootHost: only a reboot clears it (a module stuck unloading).
	ActionRebootHost Action = "reboot-host"
	// ActionCheckCooling: the adapter runs hot; its airflow or the chassis fans need a look
	// before the card is suspected.
	ActionCheckCooling Action = "check-cooling"
	// ActionReseatOrCleanCable: the link's cable or connector (reseat it, clean the optics).
	ActionReseatOrCleanCable Action = "reseat-or-clean-cable"
	// ActionReplaceCableOrModule: the cable or pluggable module itself reports a fault.
	ActionReplaceCableOrModule Action = "replace-cable-or-module"
	// ActionReseatCard: the adapter's PCIe link (reseat the card in its slot, check the riser).
	ActionReseatCard Action = "reseat-card"
	// ActionReplaceCard: the adapter itself is faulty.
	ActionReplaceCard Action = "replace-card"
	// ActionContactVendor: nothing the site can do on its own resolves it.
	ActionContactVendor Action = "contact-vendor"
)

// Actions is the whole vocabulary, in the order of the constants; the schema's enum is the same list.
var Actions = []Action{ActionNone, ActionFixConfiguration, ActionLoadDriver, ActionUpdateFirmware, ActionResetDevice,
	ActionRebootHost, ActionCheckCooling, ActionReseatOrCleanCable, ActionReplaceCableOrModule, ActionReseatCard,
	ActionReplaceCard, ActionContactVendor}

// Valid reports whether a is one of Actions.
func (a Action) Valid() bool {
	for _, v := range Actions {
		if a == v {
			return true
		}
	}
	return false
}

// ParseAction reads an action's name.
func ParseAction(s string) (Action, error) {
	if a := Action(s); a.Valid() {
		return a, nil
	}
	return "", fmt.Errorf("unknown action %q", s)
}
