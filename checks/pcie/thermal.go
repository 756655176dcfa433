package pcie

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID: "pcie.thermal",
		Description: "Temperature of each RDMA adapter's ASIC and module sensors as its driver exposes them (hwmon: mlx5, bnxt_en, ice), " +
			"against the device's own max, critical and emergency thresholds and alarms",
		Fault: "nic-thermal",
		Run:   runThermal,
	})
}

// The hwmon ABI (Documentation/hwmon/sysfs-interface.rst): temperatures in millidegrees Celsius;
// tempN_max a "max value", tempN_crit a "critical max value, typically greater than the
// corresponding temp_max", tempN_emergency an "emergency max value … equal or greater than
// temp_crit"; tempN_*_alarm 0 or 1; tempN_highest the historical maximum.
const srcHwmonABI = "Documentation/hwmon/sysfs-interface.rst (tempN_input, _max, _crit, _emergency, _highest, _*_alarm)"

// Which NIC drivers register hwmon, and what their thresholds are. mlx5 registers one hwmon device
// named "mlx5" on the PCI function (drivers/net/ethernet/mellanox/mlx5/core/hwmon.c,
// mlx5_hwmon_dev_register(), Linux 6.6+): the ASIC and each module's MTMP sensor, tempN_crit being
// MTMP temperature_threshold_hi and tempN_highest max_temperature. bnxt_en
// (drivers/net/ethernet/broadcom/bnxt/bnxt_hwmon.c) exposes the firmware's warning, critical and
// fatal thresholds as max, crit and emergency with their alarms; ice (ice_hwmon.c) max, crit and
// emergency.
const srcHwmonDrivers = "drivers/net/ethernet/mellanox/mlx5/core/hwmon.c mlx5_hwmon_read(); drivers/net/ethernet/broadcom/bnxt/bnxt_hwmon.c bnxt_hwmon_read(); drivers/net/ethernet/intel/ice/ice_hwmon.c"

// tempChannel is N of a "tempN_input" file name.
func tempChannel(name string) (int, bool) {
	num, ok1 := strings.CutPrefix(name, "temp")
	num, ok2 := strings.CutSuffix(num, "_input")
	if !ok1 || !ok2 || num == "" {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	return n, err == nil && n > 0
}

// sensor is one temperature channel of a hwmon device, in millidegrees; a nil threshold is one
// the driver does not expose.
type sensor struct {
	dir, label                          string
	input                               int64
	max, crit, emergency, highest       *int64
	maxAlarm, critAlarm, emergencyAlarm bool
	err                                 error
}

func runThermal(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	if f := noDevices(env.Inventory()); f != nil {
		return f, nil
	}
	ts, out := sharedTargets(env)
	for _, t := range ts {
		out = append(out, judgeThermal(env.Host, t))
	}
	return out, nil
}

func judgeThermal(h *host.Host, t *target) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: t.subject(), Evidence: viaEvidence(t)}}
	if t.Devices[0].PCI == nil {
		f.Severity = report.Skipped
		f.Summary = fmt.Sprintf("not judged: %s is the NIC under software device %s, not an RDMA adapter", t.BDF, t.deviceNames())
		return f
	}
	dir := path.Join(t.Nodes[0].Dir, "hwmon")
	sensors, err := readHwmon(h, dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(sensors) == 0) {
		// Older kernels (mlx5 before 6.6), firmware without the MTMP register, a driver with no
		// hwmon support, or a snapshot recorded before this check existed: nothing to judge.
		// Not a limit the run could lift, so --strict does not turn it into unknown.
		f.Severity = report.Skipped
		f.Summary = fmt.Sprintf("skipped: %s exposes no hwmon temperature sensors (mlx5 registers them from Linux 6.6 on firmware with MTMP, bnxt_en and ice too); "+
			"NVIDIA MFT's mget_temp -d <device> reads a ConnectX ASIC's temperature without them", t.BDF)
		f.Evidence = append(f.Evidence, report.Ev("hwmon", "none", dir))
		return f
	}
	if err != nil {
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("cannot list the hwmon sensors of %s: %v", t.BDF, err)
		f.Evidence = append(f.Evidence, report.Ev("hwmon", err.Error(), dir))
		f.Remediation = "read " + dir + " by hand; rerun as root"
		return f
	}
	f.Severity = report.OK
	worst := -1
	for i, s := range sensors {
		sev, why := judgeSensor(s)
		f.Evidence = append(f.Evidence, report.Ev(s.label, describeSensor(s), s.dir))
		if worse(sev, f.Severity) {
			f.Severity, worst = sev, i
			f.Summary = why
		}
	}
	f.Evidence = append(f.Evidence, report.Ev("thresholds", "the device's own, as its driver reports them", srcHwmonABI+"; "+srcHwmonDrivers))
	switch {
	case worst < 0:
		f.Summary = fmt.Sprintf("%d temperature sensor(s) below their thresholds; hottest %s", len(sensors), hottest(sensors))
	case f.Severity == report.Unknown:
		f.Remediation = "the driver could not read the sensor (a firmware register access): look at driver.kernel_log and `devlink health show` for this device"
	case f.Severity == report.Critical:
		f.Remediation = "check the airflow over the adapter (fans, blanking panels, a cable blocking the intake) and the server's thermal profile; the firmware shuts the adapter down at its emergency threshold. Replace the card or its heat sink if it runs hot with normal airflow"
	default:
		f.Remediation = "check the airflow over the adapter and the server's fan profile before the temperature reaches its critical threshold"
	}
	return f
}

// worse orders severities for the finding's summary (report.Severities is ordered OK..Critical).
func worse(a, b report.Severity) bool {
	rank := func(s report.Severity) int {
		for i, x := range report.Severities {
			if x == s {
				return i
			}
		}
		return -1
	}
	return rank(a) > rank(b)
}

// judgeSensor applies the device's own thresholds: at or above emergency or crit (or its alarm)
// is critical, at or above max (or its alarm) a warning, a historical maximum at or above crit a
// warning (it got there since the history was last reset, usually since the driver loaded).
func judgeSensor(s sensor) (report.Severity, string) {
	if s.err != nil {
		return report.Unknown, fmt.Sprintf("%s: the temperature could not be read: %v", s.label, s.err)
	}
	at := func(th *int64) bool { return th != nil && s.input >= *th }
	switch {
	case s.emergencyAlarm || at(s.emergency):
		return report.Critical, fmt.Sprintf("%s at %s, at or above its emergency threshold %s: the firmware shuts the adapter down here", s.label, degrees(s.input), degreesOf(s.emergency))
	case s.critAlarm || at(s.crit):
		return report.Critical, fmt.Sprintf("%s at %s, at or above its critical threshold %s", s.label, degrees(s.input), degreesOf(s.crit))
	case s.maxAlarm || at(s.max):
		return report.Warning, fmt.Sprintf("%s at %s, at or above its warning threshold %s", s.label, degrees(s.input), degreesOf(s.max))
	case s.highest != nil && s.crit != nil && *s.highest >= *s.crit:
		return report.Warning, fmt.Sprintf("%s reached %s, its critical threshold %s, since its history was reset (now %s)", s.label, degrees(*s.highest), degreesOf(s.crit), degrees(s.input))
	}
	return report.OK, ""
}

func describeSensor(s sensor) string {
	if s.err != nil {
		return "unreadable: " + s.err.Error()
	}
	var th []string
	for _, x := range []struct {
		name string
		v    *int64
	}{{"max", s.max}, {"crit", s.crit}, {"emergency", s.emergency}, {"highest", s.highest}} {
		if x.v != nil {
			th = append(th, x.name+" "+degrees(*x.v))
		}
	}
	for _, a := range []struct {
		name string
		on   bool
	}{{"max", s.maxAlarm}, {"crit", s.critAlarm}, {"emergency", s.emergencyAlarm}} {
		if a.on {
			th = append(th, a.name+" alarm set")
		}
	}
	if len(th) == 0 {
		return degrees(s.input) + " (no threshold exposed)"
	}
	return degrees(s.input) + " (" + strings.Join(th, ", ") + ")"
}

func hottest(ss []sensor) string {
	best := -1
	for i, s := range ss {
		if s.err == nil && (best < 0 || s.input > ss[best].input) {
			best = i
		}
	}
	if best < 0 {
		return "none readable"
	}
	return ss[best].label + " " + degrees(ss[best].input)
}

func degrees(milli int64) string {
	return strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64) + " °C"
}

func degreesOf(v *int64) string {
	if v == nil {
		return "(none)"
	}
	return degrees(*v)
}

// readHwmon reads every temperature channel of every hwmon device under dir (a PCI function's
// hwmon directory). A channel whose input cannot be read is kept with its error; a threshold that
// cannot be read counts as not exposed.
func readHwmon(h *host.Host, dir string) ([]sensor, error) {
	devs, err := h.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	sort.Strings(devs)
	var out []sensor
	for _, d := range devs {
		if !strings.HasPrefix(d, "hwmon") {
			continue
		}
		hd := path.Join(dir, d)
		files, err := h.ReadDir(hd)
		if err != nil {
			return nil, err
		}
		name, _ := h.ReadString(path.Join(hd, "name"))
		var chans []int
		for _, f := range files {
			if n, ok := tempChannel(f); ok {
				chans = append(chans, n)
			}
		}
		sort.Ints(chans)
		for _, n := range chans {
			out = append(out, readSensor(h, hd, strings.TrimSpace(name), n))
		}
	}
	return out, nil
}

func readSensor(h *host.Host, hd, name string, n int) sensor {
	file := func(attr string) string { return path.Join(hd, fmt.Sprintf("temp%d_%s", n, attr)) }
	s := sensor{dir: file("input")}
	label, err := h.ReadString(file("label"))
	if label = strings.TrimSpace(label); err != nil || label == "" {
		label = fmt.Sprintf("temp%d", n)
	}
	if name != "" {
		label = name + " " + label
	}
	s.label = label
	v, err := readMilli(h, file("input"))
	if err != nil {
		s.err = err
		return s
	}
	s.input = *v
	s.max, _ = readMilli(h, file("max"))
	s.crit, _ = readMilli(h, file("crit"))
	s.emergency, _ = readMilli(h, file("emergency"))
	s.highest, _ = readMilli(h, file("highest"))
	alarm := func(attr string) bool {
		v, err := readMilli(h, file(attr))
		return err == nil && *v != 0
	}
	s.maxAlarm, s.critAlarm, s.emergencyAlarm = alarm("max_alarm"), alarm("crit_alarm"), alarm("emergency_alarm")
	return s
}

// readMilli parses one hwmon value: a decimal integer and a newline.
func readMilli(h *host.Host, p string) (*int64, error) {
	s, err := h.ReadString(p)
	if err != nil {
		return nil, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not a hwmon value: %w", p, strings.TrimSpace(s), err)
	}
	return &v, nil
}
