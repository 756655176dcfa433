package report

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SchemaVersion is the version of the JSON document. Bump the major number when a field is
// removed or changes meaning; adding optional fields bumps the minor number.
const SchemaVersion = "1.3"

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

// checkOutcomes gives each check that ran, in order of first finding, its outcome: Critical,
// Warning, Unknown, Skipped, or OK for passed.
func checkOutcomes(fs []Finding) ([]string, map[string]Severity) {
	worst := map[string]Severity{}
	skipped := map[string]bool{}
	var order []string
	for _, f := range fs {
		w, seen := worst[f.CheckID]
		if !seen {
			order = append(order, f.CheckID)
		}
		if !seen || f.Severity > w {
			worst[f.CheckID] = f.Severity
		}
		if f.Severity == Skipped {
			skipped[f.CheckID] = true
		}
	}
	for id, w := range worst {
		switch {
		case w.Problem():
		case skipped[id]:
			worst[id] = Skipped
		default:
			worst[id] = OK
		}
	}
	return order, worst
}

func countChecks(fs []Finding, notRun int) *CheckCounts {
	order, outcome := checkOutcomes(fs)
	c := &CheckCounts{Run: len(order), NotRun: notRun}
	for _, id := range order {
		switch outcome[id] {
		case Critical:
			c.Critical++
		case Warning:
			c.Warning++
		case Unknown:
			c.Unknown++
		case Skipped:
			c.Skipped++
		default:
			c.Passed++
		}
	}
	return c
}

// NotRun is a check that was not run because of a limit, with how to lift it.
type NotRun struct {
	CheckID string `json:"check_id"`
	Limit   Limit  `json:"limit"`
}

// BuildOptions are the run's circumstances that change the verdict, not the findings.
type BuildOptions struct {
	// Strict counts a skip held back by a limit (no root, no kernel log in a tree) as unknown.
	Strict bool
	// Interrupted: the run was stopped (Ctrl-C, SIGTERM); the verdict says so and exits 130.
	Interrupted bool
	NotRun      []NotRun
	NotSelected int
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

// Build assembles a report: it fills the fault rows, links consequences to their causes, sorts
// the findings in troubleshooting order and computes the verdict.
func Build(findings []Finding, faults *FaultTable, tool Tool, host HostInfo) *Report {
	return BuildWith(findings, faults, tool, host, BuildOptions{})
}

// BuildWith is Build for a run with options that change the verdict.
func BuildWith(findings []Finding, faults *FaultTable, tool Tool, host HostInfo, o BuildOptions) *Report {
	fs := make([]Finding, len(findings))
	copy(fs, findings)
	for i := range fs {
		f := &fs[i]
		if o.Strict && f.Severity == Skipped && f.Limit != nil {
			f.Severity = Unknown
		}
		if f.Layer == "" {
			f.Layer = layerOf(f.CheckID)
		}
		if f.Ref == "" {
			f.Ref = f.ref()
		}
		// Links are the engine's: checks state what they saw (Observation, Events), the fault
		// table and the shared events link.
		f.ExplainedBy = nil
		f.Evidence = slices.Clip(f.Evidence)
	}
	sortFindings(fs)
	link(fs, faults)
	linkEvents(fs, faults)

	r := &Report{SchemaVersion: SchemaVersion, Tool: tool, Host: host, Findings: fs}
	if r.Host.Devices == nil {
		r.Host.Devices = []string{}
	}
	used := map[string]bool{}
	for _, f := range fs {
		used[f.Fault] = true
	}
	r.Faults = []FaultRow{}
	for _, row := range faults.Rows {
		if used[row.ID] {
			r.Faults = append(r.Faults, row)
		}
	}
	r.Summary = summarize(fs, len(r.Host.Devices), o)
	return r
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := &fs[i], &fs[j]
		if ra, rb := LayerRank(a.Layer), LayerRank(b.Layer); ra != rb {
			return ra < rb
		}
		if a.CheckID != b.CheckID {
			return a.CheckID < b.CheckID
		}
		if a.Subject.Name != b.Subject.Name {
			return naturalLess(a.Subject.Name, b.Subject.Name)
		}
		return a.Summary < b.Summary
	})
	disambiguate(fs)
}

// disambiguate gives findings that share a ref distinct ones derived from their content, never
// from their order, so that a ref names the same finding in every run that produces it. Checks
// set Key so that this is rare (two processes of one command with the same problem on one
// port); the suffix is then a hash of the summary with its numbers masked, so that values that
// change across restarts (PIDs, counts, sizes) do not change it, and only findings that differ
// in nothing but such values fall back to a hash of their full content.
func disambiguate(fs []Finding) {
	byRef := map[string][]int{}
	for i := range fs {
		byRef[fs[i].Ref] = append(byRef[fs[i].Ref], i)
	}
	for ref, idx := range byRef {
		if len(idx) < 2 {
			continue
		}
		masked := map[string]int{}
		for _, i := range idx {
			masked[contentHash(fs[i], true)]++
		}
		seen := map[string]int{}
		for _, i := range idx {
			h := contentHash(fs[i], true)
			if masked[h] > 1 {
				h = contentHash(fs[i], false)
			}
			n := seen[h]
			seen[h] = n + 1
			fs[i].Ref = ref + "~" + h
			if n > 0 {
				// Identical findings: nothing in them tells them apart.
				fs[i].Ref += fmt.Sprintf("-%d", n+1)
			}
		}
	}
}

// contentHash is a short hash of what a finding says; mask replaces every run of digits so that
// PIDs, counts and sizes do not change it.
func contentHash(f Finding, mask bool) string {
	h := fnv.New32a()
	text := f.Severity.String() + "\x00" + f.Fault + "\x00" + f.Summary
	if !mask {
		text = f.Subject.Name + "\x00" + text
		for _, e := range f.Evidence {
			text += "\x00" + e.Name + "=" + e.Observed
		}
	} else {
		text = digitRuns.ReplaceAllString(text, "N")
	}
	h.Write([]byte(text))
	return fmt.Sprintf("%08x", h.Sum32())
}

var digitRuns = regexp.MustCompile(`[0-9]+`)

// link marks every problem finding that a lower-or-equal layer problem explains. A cause must be a
// warning or critical finding (an unknown explains nothing), on the same device or host-wide,
// whose fault row lists the effect. Probes are evidence, never causes.
func link(fs []Finding, faults *FaultTable) {
	for i := range fs {
		e := &fs[i]
		// A skipped probe was usually skipped because of the cause (port down, no uverbs); other
		// checks skip for their own reasons (not applicable, not declared), which no lower-layer
		// problem explains.
		// An unknown finding could not be judged because something could not be read: that is its
		// own cause, and no host fault explains it.
		switch {
		case e.Severity == Warning || e.Severity == Critical:
		case e.Severity == Skipped && e.Probe:
		default:
			continue
		}
		for j := range fs {
			c := &fs[j]
			if i == j || !(c.Severity == Warning || c.Severity == Critical) {
				continue
			}
			if c.Probe {
				continue
			}
			if c.Subject.Device != "" && c.Subject.Device != e.Subject.Device {
				continue
			}
			if c.Fault == e.Fault && c.CheckID == e.CheckID {
				continue
			}
			ev, ok := logLink(c, e)
			if !ok {
				continue
			}
			if faults.canExplain(c, e) && !slices.Contains(e.ExplainedBy, c.Ref) {
				e.ExplainedBy = append(e.ExplainedBy, c.Ref)
				if ev != nil {
					e.Evidence = append(e.Evidence, *ev)
				}
			}
		}
	}
}

// linkEvents makes one root cause of the problem findings drawn from one event (Finding.Events):
// a PCIe link shared by two functions, an AER error the root port counts and the function
// reports, a kernel log record two checks read. The first of them in eventOrder is the cause of
// the others, which say so in their evidence; no fault row is needed, since one event is one
// fault. A pair the fault table already links, either way, is left as it is, so that the two
// rules never make findings explain each other.
func linkEvents(fs []Finding, faults *FaultTable) {
	holders := map[string][]int{}
	var events []string
	for i := range fs {
		f := &fs[i]
		if f.Probe || !(f.Severity == Warning || f.Severity == Critical) {
			continue
		}
		for _, ev := range f.Events {
			hs := holders[ev]
			if len(hs) > 0 && hs[len(hs)-1] == i {
				continue // named twice by one finding
			}
			if hs == nil {
				events = append(events, ev)
			}
			holders[ev] = append(hs, i)
		}
	}
	for _, ev := range events {
		hs := holders[ev]
		if len(hs) < 2 {
			continue
		}
		best := hs[0]
		for _, i := range hs[1:] {
			if eventOrder(faults, &fs[i], &fs[best]) {
				best = i
			}
		}
		c := &fs[best]
		for _, i := range hs {
			e := &fs[i]
			if i == best || slices.Contains(e.ExplainedBy, c.Ref) || slices.Contains(c.ExplainedBy, e.Ref) {
				continue
			}
			e.ExplainedBy = append(e.ExplainedBy, c.Ref)
			e.Evidence = append(e.Evidence, Evidence{Name: "same event as its cause",
				Observed: fmt.Sprintf("%s was drawn from %s too", c.Ref, ev),
				Source:   "link rule: findings drawn from one event have one root cause"})
		}
	}
}

// eventOrder reports whether a comes before b as the cause of an event both were drawn from: the
// lower layer, then the earlier fault row, then the graver, then the subject, the check and the
// ref, so that the choice never depends on the order checks reported in.
func eventOrder(faults *FaultTable, a, b *Finding) bool {
	if ra, rb := LayerRank(a.Layer), LayerRank(b.Layer); ra != rb {
		return ra < rb
	}
	if ra, rb := faults.rank(a.Fault), faults.rank(b.Fault); ra != rb {
		return ra < rb
	}
	if a.Severity != b.Severity {
		return a.Severity > b.Severity
	}
	if a.Subject.Name != b.Subject.Name {
		return naturalLess(a.Subject.Name, b.Subject.Name)
	}
	if a.CheckID != b.CheckID {
		return a.CheckID < b.CheckID
	}
	return a.Ref < b.Ref
}

// LogLinkWindow is how far apart a cause drawn from the kernel log and a consequence drawn from
// it too may have been logged and still be linked. A fault's consequences follow it within its
// own recovery: the slowest steps of the mlx5 flow are a command timeout (60 s) and waiting for
// the firmware after a reset (120 s; drivers/net/ethernet/mellanox/mlx5/core/lib/tout.c), and
// the lines of one health event come at most five minutes apart. Ten minutes is twice that:
// what the device logs while it is still failing or recovering is linked, a CQ overrun an hour
// after a page-allocation failure is not, since the device has run in between.
const LogLinkWindow = 10 * time.Minute

// logLink decides whether c, when drawn from the kernel log, may explain e: only on the same
// device (lines that name no RDMA device, such as a module's load failure or a page-allocation
// failure, explain only host-wide findings, never one device's), and, when e is drawn from the
// log too, only within LogLinkWindow. A present state (a port down now) may have lasted since the
// cause, whenever that was, so only the device is required of it. ev is the evidence the link
// adds to e; nil when c is not from the kernel log (no condition applies).
func logLink(c, e *Finding) (ev *Evidence, ok bool) {
	if c.LogSpan == nil {
		return nil, true
	}
	if c.Subject.Device != e.Subject.Device {
		return nil, false
	}
	where := "on " + c.Subject.Device
	if c.Subject.Device == "" {
		where = "for no RDMA device in particular"
	}
	rule := fmt.Sprintf("same device; kernel log lines within %s of each other", LogLinkWindow)
	if e.LogSpan == nil {
		if c.Subject.Device == "" {
			return nil, true // host-wide cause and state: nothing to state beyond the fault table
		}
		return &Evidence{Name: "cause in the kernel log", Source: "link rule: " + rule,
			Observed: fmt.Sprintf("%s, logged %s %s after boot; the state judged here may have lasted since",
				c.Ref, where, seconds(c.LogSpan.First))}, true
	}
	gap := spanGap(c.LogSpan, e.LogSpan)
	if gap > LogLinkWindow {
		return nil, false
	}
	return &Evidence{Name: "cause in the kernel log", Source: "link rule: " + rule,
		Observed: fmt.Sprintf("%s, logged %s %s after boot, %s from this finding's lines", c.Ref, where,
			seconds(c.LogSpan.First), gap.Round(time.Millisecond))}, true
}

// spanGap is the time between two spans of log lines, 0 when they overlap.
func spanGap(a, b *LogSpan) time.Duration {
	switch {
	case b.First > a.Last:
		return b.First - a.Last
	case a.First > b.Last:
		return a.First - b.Last
	}
	return 0
}

// seconds formats a time since boot as dmesg does.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64) + "s"
}

func summarize(fs []Finding, devices int, o BuildOptions) Summary {
	s := Summary{Devices: devices, Counts: map[string]int{}, RootCauses: []string{}, NotRun: o.NotRun, NotSelected: o.NotSelected, Strict: o.Strict}
	for _, n := range severityNames {
		s.Counts[n] = 0
	}
	worst := OK
	for _, f := range fs {
		s.Counts[f.Severity.String()]++
		if f.Severity > worst {
			worst = f.Severity
		}
		if f.Severity.Problem() && len(f.ExplainedBy) == 0 {
			s.RootCauses = append(s.RootCauses, f.Ref)
		}
	}
	judged := len(fs) - s.Counts["skipped"]
	switch {
	case o.Interrupted:
		// A partial run proves nothing either way; scripts see the shell's convention.
		s.Verdict, s.ExitCode = "interrupted", ExitInterrupted
	case s.Counts["critical"] > 0:
		s.Verdict, s.ExitCode = "critical", ExitCritical
	case s.Counts["unknown"] > 0:
		// Something could not be checked: the host cannot be called healthy. Unknown outranks
		// warning so that a script never keeps a node whose state it does not know.
		s.Verdict, s.ExitCode = "unknown", ExitUnknown
	case s.Counts["warning"] > 0:
		s.Verdict, s.ExitCode = "warning", ExitWarning
	case judged == 0:
		// Nothing was judged (every selected check skipped or not run): that is not health.
		s.Verdict, s.ExitCode = "unknown", ExitUnknown
	default:
		s.Verdict, s.ExitCode = "healthy", ExitHealthy
	}
	s.Checks = countChecks(fs, len(o.NotRun))
	s.Line = summaryLine(s, fs)
	return s
}

func summaryLine(s Summary, fs []Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, verdict %s", plural(s.Devices, "RDMA device"), strings.ToUpper(s.Verdict))
	judged := len(fs) - s.Counts["skipped"]
	switch {
	case s.Verdict == "interrupted":
		b.WriteString(": the run was stopped before every check finished; the findings below are partial")
	case judged == 0 && s.Verdict == "unknown":
		b.WriteString(": nothing was judged")
	}
	b.WriteString(": " + checksText(s, fs))
	// Every root cause, gravest first, is what an operator should read first.
	if roots := rootCauses(fs); len(roots) > 0 && s.Verdict != "healthy" {
		if len(roots) == 1 {
			b.WriteString("; root cause: " + rootText(roots[0], fs))
		} else {
			fmt.Fprintf(&b, "; %d root causes:", len(roots))
			for i, f := range roots {
				if i > 0 {
					b.WriteByte(';')
				}
				fmt.Fprintf(&b, " (%d) %s", i+1, rootText(f, fs))
			}
		}
	}
	return b.String()
}

// rootText names a root cause with its subject and the first clause of its summary, and says how
// many findings it explains.
func rootText(f *Finding, fs []Finding) string {
	t := f.shortText()
	if n := consequences(f, fs); n > 0 {
		t += fmt.Sprintf(" (explains %s)", plural(n, "other finding"))
	}
	return t
}

// consequences counts the findings that name f as their cause.
func consequences(f *Finding, fs []Finding) int {
	n := 0
	for i := range fs {
		if slices.Contains(fs[i].ExplainedBy, f.Ref) {
			n++
		}
	}
	return n
}

// checksText counts the checks by outcome and, where a check found problems, its problem
// findings by severity: one check can report a critical and two warnings, and the count of checks
// alone would read as one critical finding.
func checksText(s Summary, fs []Finding) string {
	var b strings.Builder
	c := s.Checks
	fmt.Fprintf(&b, "%s run: %d passed", plural(c.Run, "check"), c.Passed)
	if bad := c.Critical + c.Warning + c.Unknown; bad > 0 {
		var sev []string
		for _, n := range []string{"critical", "warning", "unknown"} {
			if s.Counts[n] > 0 {
				sev = append(sev, fmt.Sprintf("%d %s", s.Counts[n], n))
			}
		}
		fmt.Fprintf(&b, ", %d with problems (findings: %s)", bad, strings.Join(sev, ", "))
	}
	if c.Skipped > 0 {
		fmt.Fprintf(&b, ", %d skipped", c.Skipped)
	}
	// Say how many of the skipped checks a limit held back (no root, a source without the kernel
	// log): the others were not applicable, which nothing can lift.
	var kinds, limited []string
	for _, f := range fs {
		if f.Severity != Skipped || f.Limit == nil {
			continue
		}
		if !slices.Contains(kinds, limitWords(f.Limit.Kind)) {
			kinds = append(kinds, limitWords(f.Limit.Kind))
		}
		if !slices.Contains(limited, f.CheckID) {
			limited = append(limited, f.CheckID)
		}
	}
	if c.Skipped > 0 && len(kinds) > 0 {
		_, outcome := checkOutcomes(fs)
		n := 0
		for _, id := range limited {
			if outcome[id] == Skipped {
				n++
			}
		}
		if n > 0 {
			fmt.Fprintf(&b, " (%d by a limit: %s)", n, strings.Join(kinds, ", "))
		}
	}
	if c.NotRun > 0 {
		kinds = kinds[:0]
		for _, n := range s.NotRun {
			if !slices.Contains(kinds, limitWords(n.Limit.Kind)) {
				kinds = append(kinds, limitWords(n.Limit.Kind))
			}
		}
		fmt.Fprintf(&b, "; %d not run (limit: %s)", c.NotRun, strings.Join(kinds, ", "))
	}
	return b.String()
}

// limitWords says what a limit kind means, for the summary line.
func limitWords(kind string) string {
	switch kind {
	case LimitPrivilege:
		return "not root"
	case LimitSource:
		return "not in the source"
	case LimitSelection:
		return "left out by an option"
	case LimitLiveOnly:
		return "live host only"
	}
	return kind
}

// plural writes "1 check", "2 checks".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// naturalLess orders "mlx5_2" before "mlx5_10" and "1" before "10".
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		if da && db {
			na, ra := leadingNumber(a)
			nb, rb := leadingNumber(b)
			if na != nb {
				return na < nb
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func leadingNumber(s string) (uint64, string) {
	var n uint64
	i := 0
	for i < len(s) && isDigit(s[i]) && i < 18 {
		n = n*10 + uint64(s[i]-'0')
		i++
	}
	return n, s[i:]
}
