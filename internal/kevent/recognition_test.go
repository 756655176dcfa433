package kevent

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/report"
)

// corpusLine is one real kernel log line of testdata/corpus, with what it means.
type corpusLine struct {
	file, source, line string
	layer, severity    string
	rec                kmsg.Record
}

// readCorpus reads testdata/corpus/*.txt (format in its README.md). A line is parsed as a text
// log would be: a syslog line by ParseSyslog, anything else by ParseDmesg.
func readCorpus(t *testing.T, dir string) []corpusLine {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var out []corpusLine
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var source, layer, sev string
		for n := 1; sc.Scan(); n++ {
			l := strings.TrimRight(sc.Text(), " \t")
			switch {
			case strings.HasPrefix(l, "## source: "):
				source, layer, sev = strings.TrimPrefix(l, "## source: "), "", ""
				if !strings.HasPrefix(source, "http") {
					t.Errorf("%s:%d: a source must start with its URL: %q", name, n, source)
				}
				continue
			case strings.HasPrefix(l, "## expect: "):
				w := strings.Fields(strings.TrimPrefix(l, "## expect: "))
				if len(w) != 2 {
					t.Fatalf("%s:%d: want \"## expect: <layer> <severity>\"", name, n)
				}
				layer, sev = w[0], w[1]
				continue
			case l == "" || strings.HasPrefix(l, "#"):
				continue
			}
			if source == "" || layer == "" {
				t.Fatalf("%s:%d: a line before its source and expectation", name, n)
			}
			recs, _ := kmsg.ParseSyslog([]byte(l + "\n"))
			if len(recs) == 0 {
				recs, _ = kmsg.ParseDmesg([]byte(l + "\n"))
			}
			if len(recs) != 1 {
				t.Errorf("%s:%d: %q is not one log line", name, n, l)
				continue
			}
			out = append(out, corpusLine{file: filepath.Base(name), source: source, line: l, layer: layer, severity: sev, rec: recs[0]})
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// lineDevice stands for the host a line came from: an RDMA device at the function the line names,
// with every word of the line as its netdev, so that a line counting only about an RDMA device's
// netdev (the transmit watchdog) counts; the reports quote lines of hosts with RDMA devices.
func lineDevice(r kmsg.Record) []Device {
	d := Device{Name: "dut", PCI: r.BDF(), Netdevs: map[string]int{}}
	for _, w := range strings.Fields(r.Text) {
		d.Netdevs[strings.Trim(w, ":()")] = 1
	}
	return []Device{d}
}

// recognitionTargets is the share of a group's fault lines that must be recognised at the
// layer their expectation names.
var recognitionTargets = map[string]float64{
	"mlx5.txt": 0.90, "pcie.txt": 0.90, "iommu.txt": 0.90,
	"mlx4.txt": 0.60, "vendors.txt": 0.60, "rdmacore.txt": 0.60,
}

// TestRecognition classifies every line of the real-line corpus (without devices, as a foreign
// snapshot would be): each fault line must be an event (recognised, or reported unrecognised:
// never dropped), the recognised share at the right layer must meet the group's target, and no
// benign line may alarm.
func TestRecognition(t *testing.T) {
	// testdata/corpus is the corpus the table was completed against, and held to the targets;
	// testdata/holdout has sources disjoint from it, gathered without the table in view: its
	// shares are logged, below the targets for now.
	// testdata/fresh is a third set of cited lines, gathered to find why lines go unrecognised
	// (a wrapper, a prefix, a conversion): measured, not held to the targets.
	// testdata/fresh2, a fourth set on RDMA drivers and their consumers, testdata/fresh3, a
	// fifth mostly from the kernel's mailing lists, and testdata/fresh4, a sixth on mlx5, mlx4 and
	// the PCIe path, are measured the same way.
	for _, dir := range []string{"testdata/corpus", "testdata/holdout", "testdata/fresh", "testdata/fresh2", "testdata/fresh3", "testdata/fresh4"} {
		t.Run(filepath.Base(dir), func(t *testing.T) { recognition(t, dir, dir == "testdata/corpus") })
	}
}

// recognition holds a corpus to no alarm on benign lines; with targets, also to the recognition
// targets and to no fault line dropped. The held-out corpus is measured (its shares are logged)
// but not yet held to the targets: the table does not meet them there.
func recognition(t *testing.T, dir string, targets bool) {
	tb := table(t)
	type tally struct{ faults, right int }
	by := map[string]*tally{}
	var misses []string
	for _, c := range readCorpus(t, dir) {
		evs := tb.Classify([]kmsg.Record{c.rec}, lineDevice(c.rec))
		var ev *Event
		if len(evs) == 1 {
			ev = &evs[0]
		}
		if c.severity == "benign" {
			if ev != nil && (!ev.Recognised() || ev.Sig.Sev.Problem() && !ev.Sig.Benign) {
				id := "unrecognised"
				if ev.Recognised() {
					id = ev.Sig.ID
				}
				t.Errorf("%s: benign line alarms as %s: %s", c.file, id, c.line)
			}
			continue
		}
		tl := by[c.file]
		if tl == nil {
			tl = &tally{}
			by[c.file] = tl
		}
		tl.faults++
		switch {
		case ev == nil && (c.severity == "critical" || c.severity == "warning"):
			misses = append(misses, fmt.Sprintf("%s: dropped (want %s %s): %s", c.file, c.layer, c.severity, c.line))
		case ev == nil || !ev.Recognised():
			misses = append(misses, fmt.Sprintf("%s: unrecognised (want %s %s): %s", c.file, c.layer, c.severity, c.line))
		case ev.Layer() != c.layer:
			misses = append(misses, fmt.Sprintf("%s: %s at layer %s (want %s): %s", c.file, ev.Sig.ID, ev.Layer(), c.layer, c.line))
		case ev.Sig.Benign && (c.severity == "critical" || c.severity == "warning"):
			misses = append(misses, fmt.Sprintf("%s: %s is benign (want %s): %s", c.file, ev.Sig.ID, c.severity, c.line))
		default:
			tl.right++
			if ev.Sig.Sev < report.Warning && (c.severity == "critical" || c.severity == "warning") {
				// Recognised at its layer, rated lower than the corpus rates it: said, not
				// counted against the target (corrected AER, for one, is judged from the
				// counters).
				misses = append(misses, fmt.Sprintf("%s: note: %s is %s (the corpus says %s): %s", c.file, ev.Sig.ID, ev.Sig.Severity, c.severity, c.line))
			}
		}
	}
	sort.Strings(misses)
	for _, m := range misses {
		t.Log(m)
	}
	files := make([]string, 0, len(by))
	for f := range by {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		tl := by[f]
		share := float64(tl.right) / float64(tl.faults)
		t.Logf("%s: %d of %d fault lines recognised at their layer (%.0f %%)", f, tl.right, tl.faults, 100*share)
		if want, ok := recognitionTargets[f]; targets && ok && share < want {
			t.Errorf("%s: %.0f %% recognised at the right layer, want at least %.0f %%", f, 100*share, 100*want)
		}
	}
	for _, m := range misses {
		if targets && strings.Contains(m, ": dropped ") {
			t.Errorf("%s", m)
		}
	}
}
