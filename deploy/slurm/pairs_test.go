package slurm

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The pairs job, run with stand-ins for scontrol (the allocation's nodes), srun (one task per
// node, at the same time, each with its node name in SLURMD_NODENAME, as slurmstepd sets it),
// hostname (the same on every node, as with several slurmds on one host, or node names that are
// not hostnames) and the probe itself (a pair result naming both ends, failing for the pair
// n2/n3); `rdmadiag probe plan` and `rdmadiag fleet --pairs` are the real ones, built from this
// repository. The job must probe every planned pair and end with fleet's verdict: n2 <-> n3 a
// bad link. deploy/slurm/test/e2e-slurm-pairs.sh runs the same job under a real Slurm.
func TestPairsJob(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "rdmadiag-real")
	build := exec.Command("go", "build", "-o", real, "./cmd/rdmadiag")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	stub(t, bin, "scontrol", `printf 'n1\nn2\nn3\nn4\n'`+"\n")
	stub(t, bin, "hostname", "echo login1\n")
	stub(t, bin, "srun", `while [ $# -gt 0 ]; do case $1 in --*) shift ;; *) break ;; esac; done
for h in n1 n2 n3 n4; do SLURMD_NODENAME=$h "$@" & done; wait`+"\n")
	// The probe stand-in: the real plan answers who the partner is; the pair n2/n3 fails.
	stub(t, bin, "rdmadiag", `
case "$1 $2" in
"probe --listen"|"probe --peer") ;;
*) exec `+real+` "$@" ;;
esac
name= out= round=
while [ $# -gt 0 ]; do case $1 in --name) name=$2; shift ;; --round) round=$2; shift ;; esac; shift; done
# fleet holds results against the plan by round: the recipe must pass it.
[ -n "$round" ] || { echo "no --round" >&2; exit 64; }
dir=${PAIRS_OUT:?}
partner=
for r in 1 2 3; do
	role=$(`+real+` probe plan "$dir/hosts" --rounds 3 --me "$name" --round "$r")
	case $role in
	listen) for h in n1 n2 n3 n4; do [ "$(`+real+` probe plan "$dir/hosts" --rounds 3 --me "$h" --round "$r")" = "peer $name" ] && p=$h; done ;;
	peer\ *) p=${role#peer } ;;
	*) continue ;;
	esac
	[ -e "$dir/seen-$name-$r" ] && continue
	: >"$dir/seen-$name-$r"; partner=$p; break
done
status=pass stage=done
case "$name$partner" in n2n3|n3n2) status=fail stage=pair_write ;; esac
printf '{"probe":"pair","status":"%s","stage":"%s","host":"%s","round":%d,"local":{"host":"%s","rate_gbps":100},"remote":{"host":"%s","rate_gbps":100},"link_gbps":100,"out":{"gbit_per_s":90},"in":{"gbit_per_s":90}}\n' "$status" "$stage" "$name" "$round" "$name" "$partner"
`)
	out := filepath.Join(dir, "out")
	cmd := exec.Command("bash", "rdmadiag-pairs.sbatch", "3", out)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=n[1-4]", "PAIRS_OUT=" + out, "HOME=" + dir}
	got, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != 1 || !strings.Contains(string(got), "BAD LINK n2 <-> n3") || strings.Contains(string(got), "BAD HOST") ||
		!strings.Contains(string(got), "(6 planned, 0 ends without a result)") {
		t.Fatalf("exit %d:\n%s", code, got)
	}
	results, _ := filepath.Glob(filepath.Join(out, "r*-n*.json"))
	if len(results) != 12 {
		t.Errorf("%d results, want 3 rounds x 4 nodes", len(results))
	}
	for _, f := range results {
		b, _ := os.ReadFile(f)
		var v map[string]any
		if json.Unmarshal(b, &v) != nil || v["probe"] != "pair" {
			t.Errorf("%s: %s", f, b)
		}
	}
}
