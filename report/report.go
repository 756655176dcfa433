package report

import "time"

// SchemaVersion is the version of the JSON document. Bump the major number when a field is
// removed or changes meaning; adding optional fields bumps the minor number.
const SchemaVersion = "1.4"

// Report is the whole result of one run.
type Report struct {
	SchemaVersion string    `json:"schema_version"`
	Tool          Tool      `json:"tool"`
	Host          HostInfo  `json:"host"`
	Summary       Summary   `json:"summary"`
	Findings      []Finding `json:"findings"`
	// Faults is the fault table rows that findings refer to, so a ticket is self-contained.
	Faults []FaultRow `json:"faults"`
}

// Tool identifies the program and the options that change its verdicts.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from (schema 1.3); omitted when unknown.
	Commit string `json:"commit,omitempty"`
	// Started is the time the run began; zero (and omitted) in golden outputs.
	Started *time.Time `json:"started,omitempty"`
	// Options are the verdict-changing flags that were set, as "name=value".
	Options []string `json:"options,omitempty"`
	// DurationSeconds is how long the checks ran; omitted in golden outputs.
	DurationSeconds *float64 `json:"duration_seconds,omitempty"`
}

// HostInfo describes the analysed machine.
type HostInfo struct {
	Source        string   `json:"source"`
	Origin        string   `json:"origin,omitempty"`
	Hostname      string   `json:"hostname,omitempty"`
	KernelRelease string   `json:"kernel_release,omitempty"`
	Recorded      string   `json:"recorded,omitempty"`
	Devices       []string `json:"devices"`
	// Unreadable lists what the recorder or the live reader could not read, and why.
	Unreadable []string `json:"unreadable,omitempty"`
	// KernelLog names where the kernel log was read, empty when none was.
	KernelLog string `json:"kernel_log,omitempty"`
	// Inventory describes each RDMA device in typed fields (schema 1.2); nil when the host
	// could not be described before the run's deadline.
	Inventory *Inventory `json:"inventory,omitempty"`
	// Excluded lists the devices the run left out (policy devices.exclude, --exclude): no
	// finding is about them and no comparison counts them.
	Excluded []ExcludedDevice `json:"excluded,omitempty"`
}

// ExcludedDevice is a device left out of the run and the rule that left it out.
type ExcludedDevice struct {
	Device string `json:"device"`
	PCI    string `json:"pci,omitempty"`
	// By names the rule: `--exclude "mlx5_2"`, `policy fleet.json devices.exclude[0] "eno*"`.
	By string `json:"by"`
}

// Summary is the verdict.
type Summary struct {
	// Verdict is healthy, warning, critical or unknown (could not check).
	Verdict    string         `json:"verdict"`
	ExitCode   int            `json:"exit_code"`
	Devices    int            `json:"devices"`
	Counts     map[string]int `json:"counts"`
	RootCauses []string       `json:"root_causes"`
	// Checks counts checks by outcome, where Counts counts findings (schema 1.3).
	Checks *CheckCounts `json:"checks,omitempty"`
	// NotRun lists the selected checks that did not run and why (--no-probe, probes on a
	// snapshot); checks left out by --only/--skip are counted in NotSelected.
	NotRun      []NotRun `json:"not_run,omitempty"`
	NotSelected int      `json:"not_selected,omitempty"`
	// Strict is set when skips held back by a limit counted as unknown (--strict).
	Strict bool `json:"strict,omitempty"`
	// Line is the one-line summary shown under the table.
	Line string `json:"line"`
}

// CheckCounts counts each check that ran once, under its outcome: the gravest problem among its
// findings (critical, warning, unknown), else skipped when any of its findings could not be
// judged, else passed (every finding ok or info). A check reports one finding per subject, so
// counting findings would count a host's devices, ports and modules instead.
type CheckCounts struct {
	Run      int `json:"run"`
	Passed   int `json:"passed"`
	Skipped  int `json:"skipped"`
	Unknown  int `json:"unknown"`
	Warning  int `json:"warning"`
	Critical int `json:"critical"`
	// NotRun is the number of selected checks a limit kept from running (Summary.NotRun).
	NotRun int `json:"not_run"`
}

// NotRun is a check that was not run because of a limit, with how to lift it.
type NotRun struct {
	CheckID string `json:"check_id"`
	Limit   Limit  `json:"limit"`
}

// Exit codes: documented in the README and in `rdmadiag check --help`.
const (
	ExitHealthy  = 0
	ExitWarning  = 1
	ExitCritical = 2
	ExitUnknown  = 3
	ExitUsage    = 64
	// ExitInterrupted follows the shell's 128+SIGINT.
	ExitInterrupted = 130
)
