package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
