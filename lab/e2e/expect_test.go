package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// report is shaped like rdmadiag's JSON report (report.Report).
const report = `{"schema_version":"1","summary":{"verdict":"critical","exit_code":2},"findings":[
 {"check_id":"pcie.aer","layer":"pcie","subject":{"kind":"pci","name":"0000:00:02.0"},"severity":"critical",
  "evidence":[{"name":"aer_dev_nonfatal","observed":"CmpltTO 1","source":"/sys/bus/pci/devices/0000:00:02.0/aer_dev_nonfatal"}]},
 {"check_id":"port.state","layer":"port","subject":{"kind":"port","name":"rxe0/1"},"severity":"ok","count":3}]}`

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		exp      string
		out      string
		rc       int
		wantFail []string // substrings, one per expected failure line
	}{
		{"present matches", `{"present":[{"check_id":{"eq":"pcie.aer"},"subject.name":{"eq":"0000:00:02.0"},"severity":{"in":["warning","critical"]},"evidence":{"contains":"CmpltTO"}}]}`, report, 2, nil},
		{"present misses on one field", `{"present":[{"check_id":{"eq":"pcie.aer"},"severity":{"eq":"warning"}}]}`, report, 2, []string{`present[0]: no finding has {check_id eq "pcie.aer", severity eq "warning"}`}},
		{"absent holds", `{"absent":[{"severity":{"eq":"critical"},"layer":{"eq":"port"}}]}`, report, 2, nil},
		{"absent violated", `{"absent":[{"severity":{"eq":"critical"}}]}`, report, 2, []string{"absent[0]: finding 0 has"}},
		{"exit code allowed", `{"exit_codes":[1,2]}`, report, 2, nil},
		{"exit code refused", `{"exit_codes":[0]}`, report, 2, []string{"exit code 2, want one of [0]"}},
		{"document predicate", `{"document":{"summary.verdict":{"eq":"critical"},"summary.exit_code":{"eq":2}}}`, report, 2, nil},
		{"document predicate fails", `{"document":{"summary.verdict":{"eq":"ok"}}}`, report, 2, []string{`summary.verdict="critical", want eq "ok"`}},
		{"numbers compare numerically", `{"present":[{"count":{"eq":3.0}}]}`, report, 0, nil},
		{"regexp on nested value", `{"present":[{"evidence.0.source":{"re":"^/sys/bus/pci/devices/[0-9a-f:.]+/aer_dev_"}}]}`, report, 0, nil},
		{"exists false", `{"present":[{"check_id":{"eq":"port.state"},"evidence":{"exists":false}}]}`, report, 0, nil},
		{"exists true fails", `{"present":[{"check_id":{"eq":"port.state"},"evidence":{"exists":true}}]}`, report, 0, []string{"present[0]"}},
		{"not JSON", `{}`, "rdmadiag: unknown flag", 2, []string{"output is not JSON"}},
		{"empty output", `{}`, "", 2, []string{"output is not JSON"}},
		{"trailing garbage", `{}`, `{"findings":[]} x`, 0, []string{"trailing data"}},
		{"no findings key", `{"present":[{"check_id":{"eq":"x"}}]}`, `{"summary":{}}`, 0, []string{`no "findings" in the output`}},
		{"findings not an array", `{}`, `{"findings":{}}`, 0, []string{"not an array"}},
		{"null findings are empty", `{"absent":[{"check_id":{"exists":true}}]}`, `{"findings":null}`, 0, nil},
		{"top-level array", `{"findings_path":".","present":[{"ifname":{"eq":"rxe0"},"state":{"eq":"ACTIVE"}}]}`,
			`[{"ifname":"rxe0","port":1,"state":"ACTIVE"}]`, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ParseExpectation([]byte(tt.exp))
			if err != nil {
				t.Fatalf("ParseExpectation: %v", err)
			}
			got := e.Check(Result{Output: []byte(tt.out), ExitCode: tt.rc})
			if len(got) != len(tt.wantFail) {
				t.Fatalf("Check = %q, want %d failures like %q", got, len(tt.wantFail), tt.wantFail)
			}
			for i, want := range tt.wantFail {
				if !strings.Contains(got[i], want) {
					t.Errorf("failure %d = %q, want it to contain %q", i, got[i], want)
				}
			}
		})
	}
}

func TestParseExpectationRejects(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"unknown field", `{"presnt":[]}`, "unknown field"},
		{"two matchers", `{"present":[{"check_id":{"eq":"a","contains":"a"}}]}`, "exactly one"},
		{"no matcher", `{"present":[{"check_id":{}}]}`, "exactly one"},
		{"empty present entry", `{"present":[{}]}`, "would match anything"},
		{"empty absent entry", `{"absent":[{}]}`, "would forbid every finding"},
		{"bad regexp", `{"absent":[{"summary":{"re":"("}}]}`, "absent[0].summary"},
		{"empty path", `{"document":{"":{"eq":1}}}`, "empty field path"},
		{"empty log path", `{"log":["a",""]}`, "log[1]: empty field path"},
		{"payload not a string", `{"payload":["labtest"]}`, "decoding"},
		{"trailing data", `{} {}`, "trailing data"},
		{"not an object", `[]`, "decoding"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseExpectation([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseExpectation(%s) error = %v, want %q", tt.in, err, tt.want)
			}
		})
	}
}

// Every shipped expectation file must parse, or make e2e would fail for a reason unrelated to
// rdmadiag.
func TestShippedExpectationsParse(t *testing.T) {
	files, _ := filepath.Glob("expect/*.json")
	more, _ := filepath.Glob("testdata/*/*.json")
	files = append(files, more...)
	if len(files) == 0 {
		t.Fatal("no expectation files found")
	}
	for _, f := range files {
		if _, err := LoadExpectation(f); err != nil {
			t.Error(err)
		}
	}
}

// The scenario list is lab/scenarios/*.sh; each needs an expectation file (even a TODO one), so a
// new scenario cannot silently go unasserted.
func TestEveryScenarioHasExpectations(t *testing.T) {
	scen, _ := filepath.Glob("../scenarios/*.sh")
	if len(scen) == 0 {
		t.Fatal("no scenarios found in ../scenarios")
	}
	for _, s := range scen {
		name := strings.TrimSuffix(filepath.Base(s), ".sh")
		for _, dir := range []string{"expect", "testdata/rdma-link"} {
			if _, err := os.Stat(filepath.Join(dir, name+".json")); err != nil {
				t.Errorf("scenario %s has no %s/%s.json", name, dir, name)
			}
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add(`{"present":[{"check_id":{"eq":"pcie.aer"},"evidence":{"contains":"x"}}]}`, report)
	f.Add(`{"findings_path":".","absent":[{"a.0.b":{"re":"^x"}}]}`, `[{"a":[{"b":"x"}]}]`)
	f.Add(`{"document":{"summary.exit_code":{"in":[1,2]}}}`, `{"summary":{"exit_code":1},"findings":null}`)
	f.Fuzz(func(t *testing.T, exp, out string) {
		e, err := ParseExpectation([]byte(exp))
		if err != nil {
			return
		}
		_ = e.Check(Result{Output: []byte(out)})
	})
}

func TestContainsSeesUnescapedText(t *testing.T) {
	e, err := ParseExpectation([]byte(`{"present":[{"evidence":{"contains":"RESET->INIT"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	out := []byte(`{"findings":[{"evidence":[{"name":"transitions","observed":"RESET->INIT->RTR->RTS"}]}]}`)
	if fails := e.Check(Result{Output: out}); len(fails) > 0 {
		t.Errorf("%v", fails)
	}
}

func TestLogged(t *testing.T) {
	e, err := ParseExpectation([]byte(`{"payload":"labtest -json","log":["bandwidth.ratio","bandwidth.runs","unit","nope.x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.Payload != "labtest -json" {
		t.Errorf("Payload = %q", e.Payload)
	}
	out := []byte(`{"unit":"MiB/s","bandwidth":{"ratio":0.93,"runs":[21.5,22.25]}}`)
	got := strings.Join(e.Logged(out), "\n")
	want := "bandwidth.ratio = 0.93\nbandwidth.runs = [21.5,22.25]\nunit = \"MiB/s\"\nnope.x missing"
	if got != want {
		t.Errorf("Logged =\n%s\nwant\n%s", got, want)
	}
	if got := e.Logged([]byte("not json")); len(got) != 1 || !strings.Contains(got[0], "not JSON") {
		t.Errorf("Logged(garbage) = %q", got)
	}
	if got := (&Expectation{}).Logged(out); got != nil {
		t.Errorf("no log paths: Logged = %q, want nil", got)
	}
}

func TestMinMatcher(t *testing.T) {
	e, err := ParseExpectation([]byte(`{"document":{"bandwidth.ratio":{"min":0.7}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for out, ok := range map[string]bool{
		`{"findings":[],"bandwidth":{"ratio":0.835}}`: true,
		`{"findings":[],"bandwidth":{"ratio":0.7}}`:   true,
		`{"bandwidth":{"ratio":0.55}}`:                false,
		`{"bandwidth":{"ratio":"0.9"}}`:               false,
		`{"bandwidth":{}}`:                            false,
	} {
		if fails := e.Check(Result{Output: []byte(out)}); (len(fails) == 0) != ok {
			t.Errorf("%s: fails %v, want ok=%v", out, fails, ok)
		}
	}
	if _, err := ParseExpectation([]byte(`{"document":{"x":{"min":1,"eq":1}}}`)); err == nil {
		t.Error("two matchers accepted")
	}
}

func TestMaxMatcher(t *testing.T) {
	e, err := ParseExpectation([]byte(`{"document":{"tool.duration_seconds":{"max":20}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for out, ok := range map[string]bool{
		`{"findings":[],"tool":{"duration_seconds":12.5}}`: true,
		`{"findings":[],"tool":{"duration_seconds":20}}`:   true,
		`{"tool":{"duration_seconds":20.01}}`:              false,
		`{"tool":{"duration_seconds":"3"}}`:                false,
		`{"tool":{}}`:                                      false,
	} {
		if fails := e.Check(Result{Output: []byte(out)}); (len(fails) == 0) != ok {
			t.Errorf("%s: fails %v, want ok=%v", out, fails, ok)
		}
	}
}
