// Package firmware holds the firmware-layer checks: the firmware of each RDMA device against the
// compatibility matrix of its family and driver, drift between identical cards and the fleet
// policy, and pending (flashed, not yet running) firmware.
package firmware

import (
	"context"
	"fmt"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"sort"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/optfile"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "firmware.version",
		Description: "Firmware version of each device against the family/driver compatibility matrix (embedded, extended by --matrix)",
		Fault:       "firmware",
		Run:         runVersion,
	})
	checks.Register(checks.Check{
		ID:          "firmware.consistency",
		Description: "Identical cards run the same firmware and PSID; allowed PSIDs and minimum versions of the fleet policy (--policy)",
		Fault:       "firmware",
		Run:         runConsistency,
	})
	checks.Register(checks.Check{
		ID:          "firmware.pending",
		Description: "Running versus stored firmware (devlink info): a flashed update waiting for a reset",
		Fault:       "firmware",
		Run:         runPending,
	})
}

// nvidiaVendor is the PCI vendor id of Mellanox/NVIDIA.
const nvidiaVendor = 0x15b3

// loadMatrix returns the embedded matrix merged with the --matrix rows (decoded before the run).
func loadMatrix(o checks.Options) (*Matrix, error) {
	m, err := DefaultMatrix()
	if err != nil {
		return nil, err
	}
	if len(o.MatrixAdditions) == 0 {
		return m, nil
	}
	return m.Merge(&Matrix{Rows: o.MatrixAdditions}), nil
}

func devSubject(d *inventory.Device) report.Subject {
	s := report.Subject{Kind: "device", Name: d.Name, Device: d.Name}
	if d.PCI != nil {
		s.PCI = d.PCI.BDF
	}
	return s
}

func classPath(d *inventory.Device, file string) string {
	return inventory.ClassDir + "/" + d.Name + "/" + file
}

// identity is the evidence every firmware finding starts with.
func identity(d *inventory.Device) []report.Evidence {
	ev := []report.Evidence{
		report.Ev("fw_ver", orNone(d.FWVer), classPath(d, "fw_ver")),
		report.Ev("board_id (PSID)", orNone(d.BoardID), classPath(d, "board_id")),
		report.Ev("hca_type", orNone(d.HCAType), classPath(d, "hca_type")),
	}
	if d.PCI != nil {
		ev = append(ev, report.Ev("pci id", fmt.Sprintf("%04x:%04x", d.PCI.Vendor, d.PCI.DeviceID), d.PCI.SysPath+"/{vendor,device}"))
	}
	return ev
}

func noDevices(inv *inventory.Inventory) []engine.Finding {
	if len(inv.Devices) > 0 {
		return nil
	}
	return []engine.Finding{{Finding: report.Finding{Subject: report.Subject{Kind: "host"}, Severity: report.Skipped,
		Summary: "skipped: no RDMA device to check (see driver.devices)"}}}
}

func runVersion(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	if f := noDevices(inv); f != nil {
		return f, nil
	}
	// The matrix is decoded only for a device it can judge: decoding it costs more than the
	// rest of this check on a host of software or other vendors' devices (docs/speed.md).
	var m *Matrix
	for _, d := range inv.Devices {
		if !d.Software() && d.PCI.Vendor == nvidiaVendor {
			var err error
			if m, err = loadMatrix(env.Opts); err != nil {
				return nil, err
			}
			break
		}
	}
	var out []engine.Finding
	for _, d := range inv.Devices {
		out = append(out, judgeVersion(env, m, d))
	}
	return out, nil
}

func judgeVersion(env *checks.Env, m *Matrix, d *inventory.Device) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: devSubject(d)}}
	if d.Software() {
		f.Severity = report.Skipped
		f.Summary = fmt.Sprintf("skipped: %s is a software device (%s) and has no firmware", d.Name, orNone(d.Driver))
		f.Evidence = []report.Evidence{report.Ev("fw_ver", orNone(d.FWVer), classPath(d, "fw_ver"))}
		return f
	}
	f.Evidence = identity(d)
	if d.PCI.Vendor != nvidiaVendor {
		// No compatibility matrix exists for other vendors, and --matrix cannot add one (rows are
		// keyed by NVIDIA firmware majors): nothing failed, so this is information, not "unknown".
		f.Severity = report.Info
		fw := "firmware " + d.FWVer
		if d.FWVer == "" {
			// fw_ver is empty when the driver has no get_dev_fw_str (efa; ib_get_device_fw_str,
			// drivers/infiniband/core/device.c, 6.12).
			fw = "firmware (fw_ver empty: the driver reports none)"
		}
		f.Summary = fmt.Sprintf("%s: %s not judged: rdmadiag has a firmware/driver matrix for NVIDIA/Mellanox (vendor 15b3) only, not for vendor %04x (driver %s)",
			d.Name, fw, d.PCI.Vendor, orNone(d.Driver))
		f.Remediation = "Compare the firmware with the release notes of the vendor's driver for this kernel."
		return f
	}
	v, err := ParseVersion(d.FWVer)
	if err != nil {
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("%s: firmware version not judged: %v", d.Name, err)
		f.Remediation = "Read the version with another tool (ethtool -i <netdev>, mlxfwmanager --query) and check why the driver reports this one; a query failure can mean the firmware is not responding."
		return f
	}
	fam, ok := FamilyOf(v.Major)
	if !ok {
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("%s: firmware %s: family %d is not in the matrix (unknown device family), not judged", d.Name, v, v.Major)
		f.Remediation = "Add the family's rows to a --matrix file, citing the vendor's release notes."
		return f
	}
	f.Evidence = append(f.Evidence, report.Ev("family", fmt.Sprintf("%s (firmware major %d)", fam.Name, fam.Major), classPath(d, "fw_ver")))
	// The firmware major must match the silicon: a mismatch means the wrong image or a corrupt query.
	mismatch := ""
	if !d.PCI.IsVF() {
		if pf, ok := familyOfPCI(d.PCI.DeviceID); ok && pf.Major != fam.Major {
			mismatch = fmt.Sprintf("PCI device id %04x is a %s but the firmware major %d is a %s", d.PCI.DeviceID, pf.Name, fam.Major, fam.Name)
		}
		if id, err := ParseHCAType(d.HCAType); err == nil && d.HCAType != "" {
			if hf, ok := familyOfPCI(id); ok && hf.Major != fam.Major && mismatch == "" {
				mismatch = fmt.Sprintf("hca_type %s is a %s but the firmware major %d is a %s", d.HCAType, hf.Name, fam.Major, fam.Name)
			}
		}
	}
	drv, derr := detectDriver(env.Host, d.Driver)
	if derr != nil {
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("%s: firmware %s (%s): driver version unknown: %v", d.Name, v, fam.Name, derr)
		if nh := env.Host.Lacks(host.PartOSRelease); nh != nil && d.DriverVersion == "" {
			// Without the kernel release an in-box driver cannot be named: a limit of the source.
			f.Summary = fmt.Sprintf("%s: firmware %s (%s); compatibility with the driver not judged: %s", d.Name, v, fam.Name, nh.Reason)
			return f.SkippedBy(report.LimitSource, nh.Lift)
		}
		return f
	}
	f.Evidence = append(f.Evidence, report.Ev("driver", drv.String(), drv.Source))
	row, ok := m.Lookup(fam.Major, drv)
	var matched *Entry
	if ok {
		matched = &row
	}
	earlier, later := m.Neighbours(fam.Major, drv, matched)
	judgeRow(&f, d, v, fam, drv, row, ok, mismatch, bounds{earlier, later})
	return f
}

// bounds are the nearest releases around the running one that the matrix has firmware for.
type bounds struct{ earlier, later *Neighbour }

// release names a neighbour's release for a summary.
func (n *Neighbour) release() string { return "MLNX_OFED/DOCA-OFED " + n.DriverVersion }

func (n *Neighbour) evidence(name string) report.Evidence {
	return report.Ev(name, fmt.Sprintf("%s: %s %s", n.release(), needWord(n), n.Need), n.From+": "+n.Source)
}

// needWord says what a neighbour's firmware is: a minimum a --matrix file set, or the
// firmware the release was bundled or validated with.
func needWord(n *Neighbour) string {
	if n.min != nil {
		return "minimum"
	}
	return "validated with"
}

// judgeRow sets the verdict of a parsed firmware version against the matrix row for its family
// and driver (found says whether there is one); f already carries the identity evidence.
func judgeRow(f *engine.Finding, d *inventory.Device, v Version, fam Family, drv Driver, row Entry, found bool, mismatch string, nb bounds) {
	reflash := "Query the card (mlxfwmanager --query -d " + d.PCI.BDF + ") and reflash the image for its PSID."
	// A VF runs its PF's firmware: the card is flashed and reset through the PF.
	bdf := d.PCI.BDF
	if d.PCI.IsVF() {
		bdf = d.PCI.PF
	}
	update := func(target Version, extra string) string {
		return fmt.Sprintf("Update the firmware with mlxup, or mlxfwmanager --online -u -d %s, to %s or newer%s, then reset the card (mlxfwreset -d %s reset, or reboot) so that the new image runs.",
			bdf, target, extra, bdf)
	}
	if !found {
		switch {
		case mismatch != "":
			f.Severity = report.Warning
			f.Summary = fmt.Sprintf("%s: %s", d.Name, mismatch)
			f.Remediation = reflash
		case drv.Kind == KindInbox:
			// NVIDIA states no minimum firmware for any family on the in-box driver, so a family
			// without a row hides no known incompatibility: only the newest firmware is not known.
			f.Severity = report.Info
			f.Summary = fmt.Sprintf("%s: firmware %s (%s) on %s: NVIDIA documents no minimum firmware for the in-box driver; the matrix lists no newest firmware for %s",
				d.Name, v, fam.Name, drv, fam.Name)
		case nb.earlier != nil && v.Less(nb.earlier.Need):
			// Firmware older than what an earlier release already asked for was validated
			// with no release since: it is outdated for this later one too.
			f.Evidence = append(f.Evidence, nb.earlier.evidence("matrix (earlier release)"))
			target, extra := nb.earlier.Need, ""
			if nb.later != nil {
				f.Evidence = append(f.Evidence, nb.later.evidence("matrix (later release)"))
				extra = fmt.Sprintf(" (%s was validated with %s)", nb.later.release(), nb.later.Need)
			}
			f.Severity = report.Critical
			f.Summary = fmt.Sprintf("%s: firmware %s (%s) is older than %s, %s; the matrix has no row for %s, but firmware older than an earlier release's is outdated for every later one",
				d.Name, v, fam.Name, nb.earlier.Need, earlierClause(nb.earlier), drv)
			f.Remediation = update(target, extra)
		case nb.later != nil && !v.Less(nb.later.Need):
			f.Evidence = append(f.Evidence, nb.later.evidence("matrix (later release)"))
			if nb.earlier != nil {
				f.Evidence = append(f.Evidence, nb.earlier.evidence("matrix (earlier release)"))
			}
			f.Severity = report.Info
			f.Summary = fmt.Sprintf("%s: firmware %s (%s) is at or past %s, which %s (later than this one) was validated with: very likely compatible with %s, inferred because the matrix has no row for it",
				d.Name, v, fam.Name, nb.later.Need, nb.later.release(), drv)
		default:
			// Neither neighbour settles it: whether this firmware fits the release was not
			// checked, so the host cannot be called healthy; say what is known.
			known := "the matrix has no earlier or later release for this family"
			switch {
			case nb.earlier != nil && nb.later != nil:
				known = fmt.Sprintf("it is not older than %s (%s, earlier) but older than %s (%s, later)", nb.earlier.Need, nb.earlier.release(), nb.later.Need, nb.later.release())
			case nb.earlier != nil:
				known = fmt.Sprintf("it is not older than %s (%s, the newest earlier release the matrix knows)", nb.earlier.Need, nb.earlier.release())
			case nb.later != nil:
				known = fmt.Sprintf("it is older than %s (%s, later) and the matrix knows no earlier release", nb.later.Need, nb.later.release())
			}
			for _, n := range []struct {
				nb   *Neighbour
				name string
			}{{nb.earlier, "matrix (earlier release)"}, {nb.later, "matrix (later release)"}} {
				if n.nb != nil {
					f.Evidence = append(f.Evidence, n.nb.evidence(n.name))
				}
			}
			f.Severity = report.Unknown
			f.Summary = fmt.Sprintf("%s: firmware %s (%s): the matrix has no row for %s, compatibility not judged; %s", d.Name, v, fam.Name, drv, known)
			f.Remediation = fmt.Sprintf("Add a row for family %d and this driver release to a --matrix file, from the release's documentation (\"General Support\" or \"Legal Notices and 3rd Party Licenses\" name the bundled firmware).", fam.Major)
		}
		return
	}
	src := row.From + ": " + row.Source
	if row.Unsupported {
		f.Evidence = append(f.Evidence, report.Ev("matrix", "not supported", src))
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("%s: %s is not supported by %s", d.Name, fam.Name, drv)
		f.Remediation = "Run a driver that supports this card"
		if row.Note != "" {
			f.Remediation += ": " + row.Note
		}
		f.Remediation += "."
		return
	}
	f.Evidence = append(f.Evidence, report.Ev("matrix", matrixValue(row.Row, drv), src))
	target := row.Recommended
	if row.min != nil {
		target = row.Min
	}
	fix := fmt.Sprintf("update the firmware with mlxup, or mlxfwmanager --online -u -d %s, to %s or newer", bdf, target)
	if row.rec != nil && row.Recommended != target {
		fix += fmt.Sprintf(" (recommended %s)", row.Recommended)
	}
	if row.Note != "" {
		fix += "; " + row.Note
	}
	fix += fmt.Sprintf(", then reset the card (mlxfwreset -d %s reset, or reboot) so that the new image runs.", bdf)
	noMin := ""
	if row.min == nil {
		noMin = "; no minimum is documented"
	}
	switch {
	case row.min != nil && v.Less(*row.min):
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s: firmware %s is older than %s, the minimum for %s on %s", d.Name, v, row.Min, fam.Name, drv)
		f.Remediation = capitalize(fix)
	case mismatch != "":
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("%s: %s", d.Name, mismatch)
		f.Remediation = reflash
	case row.min == nil && row.rec != nil && v.Less(*row.rec) && nb.earlier != nil && v.Less(nb.earlier.Need):
		// Behind this release's firmware and behind an earlier release's too: no release
		// since that earlier one was validated with firmware this old. A row with a minimum
		// (a site's qualification) says itself what is too old.
		f.Evidence = append(f.Evidence, nb.earlier.evidence("matrix (earlier release)"))
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s: firmware %s (%s) is older than %s, %s; the running %s was validated with %s",
			d.Name, v, fam.Name, nb.earlier.Need, earlierClause(nb.earlier), drv, row.Recommended)
		f.Remediation = capitalize(fix)
	case row.rec != nil && v.Less(*row.rec) && drv.Kind == KindInbox:
		// Being behind the newest firmware is worth knowing, not a fault: no document ties the
		// in-box driver to a firmware version.
		f.Severity = report.Info
		f.Summary = fmt.Sprintf("%s: firmware %s (%s) on %s: NVIDIA documents no minimum firmware for the in-box driver; the newest firmware it publishes for %s is %s",
			d.Name, v, fam.Name, drv, fam.Name, row.Recommended)
		f.Remediation = "Optional: " + fix
	case row.rec != nil && v.Less(*row.rec):
		// NVIDIA validates each release with the firmware it bundles and documents no minimum,
		// so being behind it is notable, not a fault.
		f.Severity = report.Info
		f.Summary = fmt.Sprintf("%s: firmware %s (%s) is older than %s, bundled with MLNX_OFED/DOCA-OFED %s (running %s %s)%s",
			d.Name, v, fam.Name, row.Recommended, row.DriverVersion, drv.Module, drv.Version, noMin)
		f.Remediation = capitalize(fix)
	case row.rec != nil:
		f.Severity = report.OK
		if drv.Kind == KindInbox {
			f.Summary = fmt.Sprintf("%s: firmware %s (%s) is at or past %s, the newest firmware NVIDIA publishes for %s; no minimum is documented for %s",
				d.Name, v, fam.Name, row.Recommended, fam.Name, drv)
		} else {
			f.Summary = fmt.Sprintf("%s: firmware %s (%s) is at or past %s, bundled with MLNX_OFED/DOCA-OFED %s (running %s %s)%s",
				d.Name, v, fam.Name, row.Recommended, row.DriverVersion, drv.Module, drv.Version, noMin)
		}
	default:
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s: firmware %s (%s) meets the minimum %s for %s", d.Name, v, fam.Name, row.Min, drv)
	}
}

// earlierClause describes an earlier release's firmware after "is older than <version>, ".
func earlierClause(n *Neighbour) string {
	if n.min != nil {
		return fmt.Sprintf("the minimum %s (a release earlier than this one) already needed", n.release())
	}
	return fmt.Sprintf("the firmware %s (a release earlier than this one) was already validated with", n.release())
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// matrixValue says what the row gives: the minimum (only a --matrix file sets one) and the
// firmware bundled with the release, or the newest one NVIDIA publishes for the in-box driver.
func matrixValue(row Row, drv Driver) string {
	var parts []string
	if row.Min != "" {
		parts = append(parts, "min "+row.Min)
	} else {
		parts = append(parts, "no minimum documented")
	}
	if row.Recommended != "" {
		if drv.Kind == KindInbox {
			parts = append(parts, "newest "+row.Recommended)
		} else {
			parts = append(parts, "bundled "+row.Recommended)
		}
	}
	return strings.Join(parts, ", ")
}

// group is identical cards: same PCI id, family (firmware major), hca_type and board (PSID).
// The PCI id alone does not make cards identical: every ConnectX VF since ConnectX-5 is
// 15b3:101e (mlx5_core_pci_table), whichever card it comes from.
type group struct {
	key  string
	name string
	devs []*inventory.Device
}

func runConsistency(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	if f := noDevices(inv); f != nil {
		return f, nil
	}
	var pol *optfile.FirmwarePolicy
	if env.Opts.Policy != nil {
		pol = env.Opts.Policy.Firmware
	}
	groups := map[string]*group{}
	var keys []string
	var out []engine.Finding
	for _, d := range inv.Devices {
		// VFs report their PF's firmware; software devices have none.
		if d.Software() || d.PCI.IsVF() {
			continue
		}
		k, name := identicalKey(d)
		g, ok := groups[k]
		if !ok {
			g = &group{key: k, name: name}
			groups[k] = g
			keys = append(keys, k)
		}
		g.devs = append(g.devs, d)
	}
	nameGroups(groups)
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, judgeGroup(groups[k]))
	}
	if pol != nil {
		for _, d := range inv.Devices {
			if d.Software() || d.PCI.IsVF() {
				continue
			}
			out = append(out, judgePolicy(pol, env.Opts.PolicyFile, d))
		}
	}
	if len(out) == 0 {
		out = append(out, engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host"}, Severity: report.Skipped,
			Summary: "skipped: no hardware RDMA device (software devices and VFs have no firmware of their own)"}})
	}
	return out, nil
}

// identicalKey is what makes two cards identical: the PCI id, the family (the firmware
// major, which names the silicon of a VF whose PCI id does not), the hca_type and the board
// (PSID). A firmware that does not parse leaves the family unknown, so such a card is compared
// with the others of its PCI id, hca_type and board. name is the group's name before
// groups sharing it are told apart (nameGroups): the family and the PCI id.
func identicalKey(d *inventory.Device) (key, name string) {
	major := "?"
	name = fmt.Sprintf("%04x:%04x", d.PCI.Vendor, d.PCI.DeviceID)
	if d.PCI.Vendor == nvidiaVendor {
		v, err := ParseVersion(d.FWVer)
		if err == nil {
			major = fmt.Sprint(v.Major)
		}
		if fam, ok := familyOfPCI(d.PCI.DeviceID); ok {
			name = fam.Name + " " + name
		} else if fam, ok := FamilyOf(v.Major); ok && err == nil {
			name = fam.Name + " " + name
		}
	}
	return fmt.Sprintf("%04x:%04x %s %s %s", d.PCI.Vendor, d.PCI.DeviceID, major, d.HCAType, d.BoardID), name
}

// nameGroups tells apart the groups that share a name (one PCI id, different boards or
// families) by their PSID, then hca_type, then firmware major.
func nameGroups(groups map[string]*group) {
	for _, part := range []func(d *inventory.Device) string{
		func(d *inventory.Device) string { return orNone(d.BoardID) },
		func(d *inventory.Device) string { return "hca_type " + orNone(d.HCAType) },
		func(d *inventory.Device) string {
			if v, err := ParseVersion(d.FWVer); err == nil {
				return fmt.Sprintf("firmware %d.x", v.Major)
			}
			return "firmware " + orNone(d.FWVer)
		},
	} {
		count := map[string]int{}
		for _, g := range groups {
			count[g.name]++
		}
		for _, g := range groups {
			if count[g.name] > 1 {
				g.name += " " + part(g.devs[0])
			}
		}
	}
}

func judgeGroup(g *group) engine.Finding {
	// The board (PSID) is part of what makes cards identical, so only the firmware can differ.
	fws := map[string][]string{}
	for _, d := range g.devs {
		fws[d.FWVer] = append(fws[d.FWVer], d.Name)
	}
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: g.name}}}
	for _, d := range g.devs {
		f.Evidence = append(f.Evidence, report.Ev(d.Name, fmt.Sprintf("fw %s, PSID %s", orNone(d.FWVer), orNone(d.BoardID)), classPath(d, "{fw_ver,board_id}")))
	}
	// The PFs of a multi-port card (0000:3b:00.0 and .1) are one card with one flash: count
	// cards by PCI slot (domain:bus:device), not by function.
	slots := map[string]bool{}
	for _, d := range g.devs {
		bdf := d.PCI.BDF
		if i := strings.LastIndexByte(bdf, '.'); i > 0 {
			bdf = bdf[:i]
		}
		slots[bdf] = true
	}
	cards := fmt.Sprintf("%d identical cards", len(slots))
	if len(slots) != len(g.devs) {
		cards = fmt.Sprintf("%d identical card(s) with %d PCI functions", len(slots), len(g.devs))
	}
	if len(g.devs) == 1 {
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s: one card (%s), nothing to compare", g.name, g.devs[0].Name)
		return f
	}
	if len(slots) == 1 && len(fws) == 1 {
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s: one card with %d PCI functions (%s), firmware %s and PSID %s, nothing to compare with",
			g.name, len(g.devs), deviceNames(g.devs), g.devs[0].FWVer, orNone(g.devs[0].BoardID))
		return f
	}
	if len(fws) == 1 {
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s: %s run the same firmware %s and PSID %s", g.name, cards, g.devs[0].FWVer, orNone(g.devs[0].BoardID))
		return f
	}
	// Tie the finding to the card with the oldest firmware so that its consequences link to it.
	oldest := g.devs[0]
	for _, d := range g.devs[1:] {
		a, errA := ParseVersion(d.FWVer)
		b, errB := ParseVersion(oldest.FWVer)
		if errA == nil && (errB != nil || a.Less(b)) {
			oldest = d
		}
	}
	f.Subject.Kind, f.Subject.Device = "device", oldest.Name
	if oldest.PCI != nil {
		f.Subject.PCI = oldest.PCI.BDF
	}
	f.Severity = report.Warning
	f.Summary = fmt.Sprintf("%s: %s differ: firmware %s", g.name, cards, describeSplit(fws))
	f.Remediation = "Identical cards (same family, board and PSID) should run the same image: update the older ones with mlxup/mlxfwmanager to the fleet's version, then reset them."
	return f
}

func deviceNames(devs []*inventory.Device) string {
	n := make([]string, len(devs))
	for i, d := range devs {
		n[i] = d.Name
	}
	return strings.Join(n, ", ")
}

func describeSplit(m map[string][]string) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s on %s", orNone(k), strings.Join(m[k], ",")))
	}
	return strings.Join(parts, " vs ")
}

func judgePolicy(p *optfile.FirmwarePolicy, from string, d *inventory.Device) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "device", Name: d.Name + " policy", Device: d.Name, PCI: d.PCI.BDF}, Evidence: identity(d)}}
	if !p.Allows(d.BoardID) {
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("%s: PSID %s is not among the fleet's allowed PSIDs", d.Name, orNone(d.BoardID))
		f.Evidence = append(f.Evidence, report.EvExp("PSID", orNone(d.BoardID), strings.Join(p.AllowedPSIDs, " or "), from))
		f.Remediation = "A PSID outside the policy is a board SKU or firmware configuration the fleet has not qualified: replace the card or add the PSID to the policy after qualifying it."
		return f
	}
	fleetMin, ok := p.MinVersion[d.BoardID]
	if !ok {
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s: PSID %s is allowed by the fleet policy (no minimum firmware set for it)", d.Name, orNone(d.BoardID))
		return f
	}
	minV := Version(fleetMin)
	v, err := ParseVersion(d.FWVer)
	if err != nil {
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("%s: fleet minimum %s for PSID %s not judged: %v", d.Name, minV, d.BoardID, err)
		return f
	}
	f.Evidence = append(f.Evidence, report.EvExp("firmware vs fleet minimum", v.String(), ">= "+minV.String(), from))
	if v.Less(minV) {
		// The operator wrote this minimum as a fleet requirement, so missing it is a failure.
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s: firmware %s is below the fleet minimum %s for PSID %s", d.Name, v, minV, d.BoardID)
		f.Remediation = fmt.Sprintf("Update with mlxup or mlxfwmanager --online -u -d %s to %s or newer, then reset the card (mlxfwreset -d %s reset, or reboot).", d.PCI.BDF, minV, d.PCI.BDF)
		return f
	}
	f.Severity = report.OK
	f.Summary = fmt.Sprintf("%s: firmware %s meets the fleet minimum %s for PSID %s", d.Name, v, minV, d.BoardID)
	return f
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
