#!/usr/bin/env bash
# e2e-slurm-pairs: `sbatch deploy/slurm/rdmadiag-pairs.sbatch` on a real Slurm of six nodes
# (Debian's slurm-wlm and munge: munged, slurmctld and one `slurmd -N nI` per node, all on
# localhost; cluster.sh), with one bad link planted, then one bad node:
#
#   1. n_a <-> n_b fails (a pair of round 2)   every planned end writes its result; the job
#                                              exits 1 and fleet names BAD LINK n_a <-> n_b
#   2. nI fails with every partner             the job exits 1 and fleet names BAD HOST nI
#
# Real: sbatch, the batch step on the first node, scontrol show hostnames, one srun step per
# round with one task per node (each seeing its own SLURMD_NODENAME; every node here has the
# same hostname), `rdmadiag probe plan` and `rdmadiag fleet --pairs` (bin/rdmadiag). Stood in:
# `rdmadiag probe --listen/--peer` only (probe-standin: this host has no RDMA device), which
# meets its partner over a shared directory, not TCP, and writes a result of the real schema.
#
# Needs root and `make build`. Ports: slurmctld E2E_SLURM_PORT+2 (default 16819), the slurmds
# the next E2E_PAIRS_NODES (default 6, at least 4). E2E_KEEP=1 keeps the directory.
set -euo pipefail
# shellcheck source=cluster.sh
. "$(dirname "$0")/cluster.sh"
base=${E2E_SLURM_PORT:-16817}
count=${E2E_PAIRS_NODES:-6}
rounds=3
recipe=$repo/deploy/slurm/rdmadiag-pairs.sbatch
[ "$count" -ge 4 ] || fail "E2E_PAIRS_NODES=$count: at least 4, so that each end of a failed pair has other partners"

nodes=()
for ((i = 1; i <= count; i++)); do nodes+=("n$i"); done
ports=()
for ((i = 0; i <= count; i++)); do ports+=($((base + 2 + i))); done
show_on_failure=(slurmctld.log munged.log)
for n in "${nodes[@]}"; do show_on_failure+=("slurmd-$n.log"); done
cluster_prepare e2e-slurm-pairs "${ports[@]}"

# rdmadiag as the jobs find it on PATH: the real binary, but for the probe itself.
mkdir -p "$d/bin" "$d/rdv"
cat >"$d/bin/rdmadiag" <<EOF
#!/bin/sh
case "\$1 \$2" in
"probe --listen" | "probe --peer") exec $repo/deploy/slurm/test/probe-standin "\$@" ;;
esac
exec $rdmadiag "\$@"
EOF
chmod 0755 "$d/bin/rdmadiag"

{
	cluster_conf
	echo "NodeName=DEFAULT CPUs=$(nproc) State=UNKNOWN"
	for ((i = 1; i <= count; i++)); do
		echo "NodeName=n$i NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 Port=${ports[i]}"
	done
	echo "PartitionName=e2e Nodes=n[1-$count] Default=YES MaxTime=INFINITE State=UP"
} >"$SLURM_CONF"

step "slurmctld and $count slurmds (n1-n$count) on localhost"
cluster_start "${nodes[@]}"
# Registered nodes only: sinfo counts a node that has not answered yet as idle* otherwise.
idle() { [ "$(sinfo --noheader --responding --states=idle --format=%D 2>/dev/null)" = "$count" ]; }
until=$((SECONDS + 60))
until idle; do
	[ $SECONDS -lt $until ] || fail "not all $count nodes idle within 60s: $(sinfo --noheader 2>&1)"
	sleep 0.5
done
grep -q 'MULTIPLE_SLURMD *= *Yes' <<<"$(scontrol show config)" ||
	fail "this Slurm is not built with --enable-multiple-slurmd"

# The plan the job will make, to choose the planted link and to check every end against.
printf '%s\n' "${nodes[@]}" >"$d/hosts"
"$rdmadiag" probe plan "$d/hosts" --rounds $rounds >"$d/plan.txt"
read -r link_a link_b < <(sed -n 's/^round 2: \([^ ]*\) listens, \([^ ]*\) dials$/\1 \2/p' "$d/plan.txt" | head -n 1)
[ -n "$link_b" ] || fail "no pair in round 2 of the plan: $(cat "$d/plan.txt")"
# fleet names a pair with its hosts in order.
link=$(printf '%s\n' "$link_a" "$link_b" | sort | paste -sd' ' - | sed 's/ / <-> /')

# job NAME VAR=VALUE [ARG...]: sbatch the recipe from $d/NAME with VAR set for the stand-in,
# wait for it, and set job_id, job_rc and job_out (its output).
job() {
	local name=$1 var=$2
	shift 2
	mkdir -p "$d/$name"
	job_rc=0
	job_id=$(cd "$d/$name" && PATH=$d/bin:$PATH timeout 100 sbatch --wait --parsable -N "$count" --exclusive \
		--time=2 --output="$d/$name/slurm-%j.out" --export="ALL,E2E_PAIRS_RDV=$d/rdv,$var" "$recipe" "$@") ||
		job_rc=$?
	job_out=$(cat "$d/$name/slurm-$job_id.out" 2>/dev/null || :)
	printf '%s\n' "$job_out" | sed 's/^/   /'
	[ "$job_rc" != 124 ] || fail "job $name did not end within 100s"
}
# check_job WANT_RC: the job's exit code as sbatch --wait and scontrol report it.
check_job() {
	[ "$job_rc" = "$1" ] || fail "sbatch --wait exit $job_rc, want $1"
	local state
	state=$(scontrol show job "$job_id")
	case $state in
	*"ExitCode=$1:0"*) ;;
	*) fail "job $job_id: want ExitCode=$1:0 in: $state" ;;
	esac
}
# check_end DIR ROUND ME PARTNER: ME's result of ROUND is a pair result naming ME and PARTNER.
check_end() {
	local f=$1/r$2-$3.json
	[ -s "$f" ] || fail "round $2: $3 (paired with $4) wrote no result"
	grep -q "^{\"probe\":\"pair\".*\"local\":{\"host\":\"$3\".*\"remote\":{\"host\":\"$4\"" "$f" ||
		fail "round $2: $f is not $3's result with $4: $(cat "$f")"
}
# check_ends DIR: every planned pair's both ends wrote their result, and nothing else was written.
check_ends() {
	local r l p
	cmp -s "$d/plan.txt" "$1/plan.txt" || fail "the job planned otherwise: $(cat "$1/plan.txt")"
	while read -r _ r l _ p _; do
		check_end "$1" "${r%:}" "$l" "$p"
		check_end "$1" "${r%:}" "$p" "$l"
	done <"$d/plan.txt"
	[ "$(find "$1" -name 'r*.json' | wc -l)" = $((2 * $(wc -l <"$d/plan.txt"))) ] ||
		fail "results beyond the plan's: $(ls "$1")"
}

pairs=$(wc -l <"$d/plan.txt")
step "1. link $link fails: the job names that link ($pairs pairs in $rounds rounds)"
job link "E2E_PAIRS_BAD_LINK=$link_a $link_b"
check_job 1
# The recipe's default OUTDIR: rdmadiag-pairs-JOBID in the directory sbatch ran from.
check_ends "$d/link/rdmadiag-pairs-$job_id"
grep -qx "$pairs pairs probed, 1 failed ($pairs planned, 0 ends without a result)" <<<"$job_out" || fail "want $pairs pairs probed, 1 failed, every planned end reported"
grep -q "^BAD LINK $link: failed at pair_write" <<<"$job_out" || fail "fleet does not name the link"
! grep -q '^BAD HOST\|^FAILED\|^SLOW' <<<"$job_out" || fail "fleet names more than the link"

bad=n$((count / 2 + 1))
partners=$(sed -n "s/^round [0-9]*: $bad listens, \([^ ]*\) dials$/\1/p; s/^round [0-9]*: \([^ ]*\) listens, $bad dials$/\1/p" "$d/plan.txt" |
	sort | paste -sd, - | sed 's/,/, /g')
step "2. $bad fails with every partner ($partners): the job names that node"
job node "E2E_PAIRS_BAD_NODE=$bad" "$rounds" "$d/node/out"
check_job 1
check_ends "$d/node/out"
grep -qx "$pairs pairs probed, $rounds failed ($pairs planned, 0 ends without a result)" <<<"$job_out" || fail "want $pairs pairs probed, $rounds failed, every planned end reported"
grep -q "^BAD HOST $bad: failed with every partner ($partners) at pair_write" <<<"$job_out" ||
	fail "fleet does not name $bad with $partners"
! grep -q '^BAD LINK\|^FAILED\|^SLOW' <<<"$job_out" || fail "fleet names more than the node"

step "PASS"
