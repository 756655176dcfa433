package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/report"
)

const portDown = fixturesDir + "/port-down/snapshot.txtar"

func writeFile(t *testing.T, name, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A malformed option file stops the run before anything is checked: exit 64, no report, and a
// message naming the flag, the file and where in it. (Before, the checks that read it turned
// unknown: on port-down a bad --policy hid the critical and the exit code went from 2 to 3.)
func TestOptionFileErrorsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, flag, doc string
		want            string // stderr after "rdmadiag: <flag>: <file>: "
	}{
		{"policy: unknown section", "--policy", `{"prots": {}}`, "prots: unknown section (want ports, firmware, topology or devices)"},
		{"policy: unknown key", "--policy", `{"ports": {"expect_rate": 400}}`, "ports.expect_rate: unknown key (want expect_rate_gbps, by_board_id, link_layer, expect_up, pkeys, pfc_priorities or trust)"},
		{"policy: mistyped rate", "--policy", `{"ports": {"by_board_id": {"MT_0000000838": "400"}}}`,
			`ports.by_board_id["MT_0000000838"]: want a number of Gb/s > 0 (at most 24000), got "400"`},
		{"policy: negative rate", "--policy", `{"ports": {"expect_rate_gbps": -100}}`, "ports.expect_rate_gbps: want a number of Gb/s > 0 (at most 24000), got -100"},
		{"policy: bad minimum", "--policy", `{"firmware": {"min_version": {"MT_0000000838": "28.41"}}}`,
			`firmware.min_version["MT_0000000838"]: want a firmware version "MAJOR.MINOR.SUBMINOR" like "28.39.1002", got "28.41"`},
		{"policy: not JSON", "--policy", "{\n  \"ports\": {\n    \"expect_rate_gbps\": 400,\n  }\n}",
			"line 4, column 3: not JSON: invalid character '}' looking for beginning of object key string"},
		{"policy: trailing data", "--policy", `{"ports": {}}}`, "line 1, column 14: trailing data after the JSON document (one object per file)"},
		{"matrix: unknown family", "--matrix", `{"rows": [{"family": 99, "driver": "ofed", "min": "99.1.1", "source": "x"}]}`,
			"rows[0].family: want the firmware major of a device family, like 16 for ConnectX-5 (one the firmware checks know), got 99"},
		{"matrix: version of another family", "--matrix", `{"rows": [{"family": 16, "driver": "ofed", "min": "20.27.2000", "source": "x"}]}`,
			`rows[0].min: want a firmware version "16.MINOR.SUBMINOR" (family 16), got "20.27.2000"`},
		{"matrix: no source", "--matrix", `{"rows": [{"family": 16, "driver": "ofed", "min": "16.27.2000"}]}`,
			`rows[0]: missing key "source" (a row needs family, driver and source)`},
		{"wr-profile: zero", "--wr-profile", `{"applications": {"trainer": 0}}`,
			`applications["trainer"]: want a whole number of outstanding work requests from 1 to 2147483648, got 0`},
		{"wr-profile: unknown key", "--wr-profile", `{"apps": {"trainer": 64}}`, "apps: unknown key (want applications)"},
		{"policy: missing file", "--policy", "", "no such file"},
		{"matrix: missing file", "--matrix", "", "no such file"},
		{"wr-profile: missing file", "--wr-profile", "", "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, "missing.json")
			if tc.doc != "" {
				file = writeFile(t, "opt.json", tc.doc)
			}
			out, stderr, code := run(t, "check", "--snapshot", portDown, tc.flag, file)
			if code != report.ExitUsage {
				t.Errorf("exit %d, want %d (%s)", code, report.ExitUsage, stderr)
			}
			if out != "" {
				t.Errorf("a report was printed although the run could not start: %q", out)
			}
			if want := "rdmadiag: " + tc.flag + ": " + file + ": " + tc.want + "\n"; stderr != want {
				t.Errorf("stderr\n%q\nwant\n%q", stderr, want)
			}
		})
	}
}

// An option file that is a FIFO without a writer, or a device, is a usage error at once: the run
// used to wait for a writer that never came, before it had checked anything.
func TestOptionFileMustBeRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "policy.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct{ flag, file, want string }{
		{"--policy", fifo, "a named pipe (FIFO)"},
		{"--matrix", fifo, "a named pipe (FIFO)"},
		{"--wr-profile", fifo, "a named pipe (FIFO)"},
		{"--policy", "/dev/zero", "a character device"},
	} {
		type result struct {
			stderr string
			code   int
		}
		ch := make(chan result, 1)
		go func() {
			_, stderr, code := run(t, "check", "--snapshot", portDown, tc.flag, tc.file)
			ch <- result{stderr, code}
		}()
		select {
		case r := <-ch:
			want := "rdmadiag: " + tc.flag + ": " + tc.file + ": cannot read: " + tc.want + ", not a regular file: give the option file itself\n"
			if r.code != report.ExitUsage || r.stderr != want {
				t.Errorf("%s %s: exit %d, stderr %q, want %q", tc.flag, tc.file, r.code, r.stderr, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %s: no answer after 10 s", tc.flag, tc.file)
		}
	}
}

// A valid policy leaves the verdict to the host: port-down is still critical (exit 2) with its
// port.state finding, now also held to the policy's link layer.
func TestValidOptionFilesOnPortDown(t *testing.T) {
	pol := writeFile(t, "fleet.json", `{"ports": {"expect_rate_gbps": 10, "link_layer": "Ethernet"}, "firmware": {"allowed_psids": ["MT_0000000838"]}}`)
	prof := writeFile(t, "profile.json", `{"applications": {"ib_write_bw": 128}}`)
	out, stderr, code := run(t, "check", "--snapshot", portDown, "--format", "json", "--policy", pol, "--wr-profile", prof,
		"--matrix", "../docs/examples/matrix.json")
	if code != report.ExitCritical {
		t.Fatalf("exit %d, want %d (%s)", code, report.ExitCritical, stderr)
	}
	r := decode(t, out)
	var state *report.Finding
	for i, f := range r.Findings {
		if f.Severity == report.Unknown {
			t.Errorf("unknown finding %s: %s", f.CheckID, f.Summary)
		}
		if f.CheckID == "port.state" && f.Subject.Name == "rxe0/1" {
			state = &r.Findings[i]
		}
	}
	if state == nil || state.Severity != report.Critical || !strings.Contains(state.Summary, "DOWN") {
		t.Fatalf("port.state on rxe0/1: %+v", state)
	}
	cited := false
	for _, e := range state.Evidence {
		cited = cited || (e.Name == "policy link_layer" && e.Source == "policy "+pol+" ports.link_layer")
	}
	if !cited {
		t.Errorf("the link-layer evidence must name the policy file: %+v", state.Evidence)
	}
}

// The documented examples decode with the decoders and family table a run uses, so that
// docs/options.md cannot describe a file rdmadiag would refuse.
func TestDocumentedExamplesDecode(t *testing.T) {
	ex := filepath.Join("..", "docs", "examples")
	o := checks.Options{
		PolicyFile:    filepath.Join(ex, "policy.json"),
		MatrixFile:    filepath.Join(ex, "matrix.json"),
		WRProfileFile: filepath.Join(ex, "wr-profile.json"),
	}
	if err := loadOptionFiles(&o); err != nil {
		t.Fatal(err)
	}
	if o.Policy.Ports == nil || o.Policy.Firmware == nil || o.Policy.Topology == nil || len(o.MatrixAdditions) == 0 || len(o.WRProfile.Applications) == 0 {
		t.Errorf("an example leaves a format's part undocumented: %+v %+v %+v", o.Policy, o.MatrixAdditions, o.WRProfile)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "options.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Each example is shown in full in the documentation.
	for _, name := range []string{"policy.json", "matrix.json", "wr-profile.json"} {
		b, err := os.ReadFile(filepath.Join(ex, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "```json\n"+string(b)+"```") {
			t.Errorf("docs/options.md does not show examples/%s as it is", name)
		}
	}
}
