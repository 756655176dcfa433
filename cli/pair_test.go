package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The pair probe's usage errors exit 64 before anything is opened; without libibverbs it could
// not run (3), which is the host's, not the operator's.
func TestProbeUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"probe"}, "exactly one of --listen"},
		{[]string{"probe", "--listen=:1", "--peer", "h"}, "exactly one of --listen"},
		{[]string{"probe", "--peer", "h", "--format", "xml"}, `--format "xml"`},
		{[]string{"probe", "--peer", "h", "--iters", "0"}, "must be positive"},
	} {
		_, errOut, code := run(t, c.args...)
		if code != 64 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q", c.args, code, errOut)
		}
	}
}

// fleet --pairs judges what it can read: a result file cut short is named and skipped, and a
// run in which nothing was probed (or part could not be read) is not a healthy fabric (3).
func TestFleetPairsUnreadableAndEmpty(t *testing.T) {
	end := func(local, remote string) string {
		return fmt.Sprintf(`{"probe":"pair","status":"pass","stage":"","error":"","role":"connect","local":{"host":%q,"rate_gbps":100},"remote":{"host":%q,"rate_gbps":100},"link_gbps":100,"out":{"gbit_per_s":90},"in":{"gbit_per_s":90}}`, local, remote)
	}
	write := func(dir, name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := t.TempDir()
	write(good, "a.json", end("a", "b"))
	write(good, "b.json", end("b", "a"))
	if out, errOut, code := run(t, "fleet", "--pairs", good); code != 0 || !strings.Contains(out, "1 pairs probed, 0 failed") {
		t.Errorf("two good ends: exit %d, %q %q", code, out, errOut)
	}
	cut := t.TempDir()
	write(cut, "a.json", end("a", "b"))
	write(cut, "b.json", end("b", "a"))
	write(cut, "c.json", `{"probe":"pair",`)
	if out, errOut, code := run(t, "fleet", "--pairs", cut); code != 3 || !strings.Contains(out, "1 pairs probed") || !strings.Contains(errOut, "c.json") {
		t.Errorf("one file cut short: exit %d, %q %q; want 3, the pair judged and c.json named", code, out, errOut)
	}
	if out, _, code := run(t, "fleet", "--pairs", "--format", "json", cut); code != 3 || !strings.Contains(out, `"unreadable": [`) || !strings.Contains(out, "c.json") {
		t.Errorf("one file cut short, JSON: exit %d, %s; want 3 and c.json under unreadable", code, out)
	}
	empty := t.TempDir()
	if _, errOut, code := run(t, "fleet", "--pairs", empty); code != 3 || !strings.Contains(errOut, "nothing was probed") {
		t.Errorf("no result: exit %d, %q; want 3", code, errOut)
	}
}

// With the plan (plan.txt beside the results, as the Slurm recipe leaves it, or --plan), an end
// that never met its partner is held against the planned pair, and a planned end without a
// result is named: the run is not healthy (3) when nothing else failed.
func TestFleetPairsPlan(t *testing.T) {
	pass := func(local, remote string) string {
		return fmt.Sprintf(`{"probe":"pair","status":"pass","stage":"done","role":"connect","host":%q,"round":1,"local":{"host":%q,"rate_gbps":100},"remote":{"host":%q,"rate_gbps":100},"link_gbps":100,"out":{"gbit_per_s":90},"in":{"gbit_per_s":90}}`, local, local, remote)
	}
	write := func(dir, name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	write(dir, "plan.txt", "round 1: a listens, b dials\nround 1: c listens, d dials\n")
	write(dir, "r1-a.json", pass("a", "b"))
	write(dir, "r1-b.json", pass("b", "a"))
	write(dir, "r1-c.json", pass("c", "d"))
	out, errOut, code := run(t, "fleet", "--pairs", dir)
	if code != 3 || !strings.Contains(out, "2 planned, 1 ends without a result") || !strings.Contains(out, "MISSING round 1: no result from d (partner c)") {
		t.Errorf("d's result missing: exit %d, %q %q; want 3 and d named", code, out, errOut)
	}
	write(dir, "r1-d.json", pass("d", "c"))
	if out, errOut, code := run(t, "fleet", "--pairs", dir); code != 0 || !strings.Contains(out, "2 pairs probed, 0 failed (2 planned, 0 ends without a result)") {
		t.Errorf("every end: exit %d, %q %q; want 0", code, out, errOut)
	}
	// d failed before the exchange (no local endpoint, only its name and round): the plan puts it
	// on c <-> d, which fails; --plan names the plan when it is elsewhere.
	other := t.TempDir()
	write(other, "plan.json", `[{"round":1,"listen":"a","peer":"b"},{"round":1,"listen":"c","peer":"d"}]`)
	write(dir, "r1-c.json", `{"probe":"pair","status":"fail","stage":"side_channel","error":"no peer","role":"listen","peer":"0.0.0.0:18515","host":"c","round":1}`)
	write(dir, "r1-d.json", `{"probe":"pair","status":"fail","stage":"query_port","error":"port 1 is DOWN","role":"connect","peer":"c:18515","host":"d","round":1}`)
	os.Remove(filepath.Join(dir, "plan.txt"))
	out, errOut, code = run(t, "fleet", "--pairs", "--format", "json", "--plan", filepath.Join(other, "plan.json"), dir)
	if code != 1 || !strings.Contains(out, `"failed": 1`) || !strings.Contains(out, `"stage": "query_port"`) || !strings.Contains(out, `"planned": 2`) {
		t.Errorf("d's port down: exit %d, %s %q; want 1, c <-> d failed at query_port", code, out, errOut)
	}
	fifo := filepath.Join(other, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fleet", "--plan", "x", dir}, "--plan goes with --pairs"},
		{[]string{"fleet", "--pairs", "--plan", filepath.Join(other, "none"), dir}, "--plan"},
		{[]string{"fleet", "--pairs", "--plan", filepath.Join(dir, "r1-c.json"), dir}, "not \"round N"},
		{[]string{"fleet", "--pairs", "--plan", fifo, dir}, "not a regular file"},
	} {
		if _, errOut, code := run(t, c.args...); code != 64 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 64 and %q", c.args, code, errOut, c.want)
		}
	}
	// A FIFO among the results (named like one) is skipped by what it is, never opened to wait
	// for a writer; the pairs are judged as before.
	if err := syscall.Mkfifo(filepath.Join(dir, "r1-e.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	type res struct {
		out, errOut string
		code        int
	}
	done := make(chan res, 1)
	go func() {
		out, errOut, code := run(t, "fleet", "--pairs", "--plan", filepath.Join(other, "plan.json"), dir)
		done <- res{out, errOut, code}
	}()
	select {
	case r := <-done:
		if r.code != 1 || !strings.Contains(r.errOut, "r1-e.json: not a regular file") || !strings.Contains(r.out, "2 pairs probed, 1 failed") {
			t.Errorf("a FIFO among the results: exit %d, %q %q; want 1, the FIFO skipped", r.code, r.out, r.errOut)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("fleet --pairs blocked on a FIFO among the results")
	}
}

// The text report's lines for ends the plan holds and the results do not, and the reverse.
func TestFleetPairsPlanText(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"plan.txt":  "round 1: a listens, b dials\nround 1: c listens, d dials\nround 1: g listens, h dials\n",
		"r1-a.json": `{"probe":"pair","status":"pass","stage":"done","role":"listen","host":"a","round":1,"local":{"host":"a","rate_gbps":100},"remote":{"host":"b","rate_gbps":100},"link_gbps":100,"out":{"gbit_per_s":90},"in":{"gbit_per_s":90}}`,
		"r1-b.json": `{"probe":"pair","status":"pass","stage":"done","role":"connect","host":"b","round":1,"local":{"host":"b","rate_gbps":100},"remote":{"host":"a","rate_gbps":100},"link_gbps":100,"out":{"gbit_per_s":90},"in":{"gbit_per_s":90}}`,
		"r1-e.json": `{"probe":"pair","status":"pass","stage":"done","role":"listen","host":"e","round":1,"local":{"host":"e","rate_gbps":100},"remote":{"host":"f","rate_gbps":100},"link_gbps":100,"out":{"gbit_per_s":90},"in":{"gbit_per_s":90}}`,
		"r1-c.json": `{"probe":"pair","status":"fail","stage":"side_channel","error":"no peer","role":"listen","peer":"0.0.0.0:18515","host":"c","round":1}`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := run(t, "fleet", "--pairs", dir)
	for _, want := range []string{
		"(3 planned, 3 ends without a result)",
		"NOT PROBED round 1: g <-> h: neither end wrote a result",
		"MISSING round 1: no result from d (partner c)",
		"at side_channel: one end sent no result, so host and link cannot be told apart",
		"NOT IN PLAN ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("exit %d (%s); want 1: c <-> d failed", code, errOut)
	}
}
