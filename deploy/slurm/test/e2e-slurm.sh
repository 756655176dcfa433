#!/usr/bin/env bash
# e2e-slurm: deploy/slurm/rdmadiag-healthcheck as the HealthCheckProgram of a real one-node Slurm
# (Debian's slurm-wlm and munge) on localhost, with rdmadiag reading recorded snapshots:
#
#   1. a garbled snapshot (could not check)      the node stays in service
#   2. port-down (critical: rxe0/1 DOWN)         the node drains, Reason "rdmadiag: ..."
#   3. healthy                                   the node resumes
#   4. someone else drains the node; healthy     it stays drained with their reason
#   5. the same, and critical                    their reason is kept, not overwritten
#
# Needs root (slurmd runs the program as root; packages are installed when missing). munged,
# slurmctld and slurmd run in the foreground as children of this script with every file under a
# temporary directory and non-default ports (E2E_SLURM_PORT, E2E_SLURM_PORT+1), and are stopped on
# exit (cluster.sh). E2E_KEEP=1 keeps the directory (logs) afterwards. Nothing is stood in for
# but the host's RDMA devices: rdmadiag reads recorded snapshots.
#
# E2E_NHC=DIR runs the same steps with LBNL NHC as the HealthCheckProgram and
# deploy/nhc/rdmadiag.nhc as its check; DIR holds NHC's nhc, scripts/common.nhc and helpers/
# (a checkout of github.com/mej/nhc; Debian does not package NHC). The reason is then NHC's,
# "NHC: check_rdmadiag: ...", and could-not-check exits 0.
set -euo pipefail
# shellcheck source=cluster.sh
. "$(dirname "$0")/cluster.sh"
program=$repo/deploy/slurm/rdmadiag-healthcheck
critical=$repo/fixtures/sysfs/port-down/snapshot.txtar
healthy=$repo/fixtures/sysfs/healthy/snapshot.txtar
interval=${E2E_SLURM_INTERVAL:-5}
port=${E2E_SLURM_PORT:-16817}
nhc=${E2E_NHC:-}

if [ -n "$nhc" ]; then
	for f in nhc scripts/common.nhc helpers/node-mark-offline helpers/node-mark-online; do
		[ -f "$nhc/$f" ] || fail "E2E_NHC=$nhc has no $f"
	done
	nhc=$(cd "$nhc" && pwd)
fi

node=$(hostname -s)
show_on_failure=(hc-runs hc.out "slurmd-$node.log" slurmctld.log munged.log)
cluster_prepare e2e-slurm "$port" $((port + 1))

# What rdmadiag-healthcheck reads: slurmd hands it an empty environment, so its settings file
# names rdmadiag, the snapshot the test swaps under it, and this cluster's slurm.conf.
cat >"$d/rdmadiag-healthcheck.conf" <<EOF
RDMADIAG=$rdmadiag
RDMADIAG_ARGS="--snapshot $d/snapshot.txtar"
RDMADIAG_TIMEOUT=20
SLURM_CONF=$d/slurm.conf
EOF
# set_snapshot FILE: atomically, so a health check never reads half a file.
set_snapshot() {
	cp "$1" "$d/snapshot.txtar.new"
	mv -f "$d/snapshot.txtar.new" "$d/snapshot.txtar"
}
head -c 4096 /dev/urandom >"$d/garbled.txtar"
set_snapshot "$d/garbled.txtar"

# The HealthCheckProgram: the program itself in an empty environment (as slurmd starts it),
# pointed at the settings file; its output goes to slurmd as well as to hc.out, and each run's
# exit status is counted in hc-runs.
run="RDMADIAG_HEALTHCHECK_CONF=$d/rdmadiag-healthcheck.conf $program"
# Expected of each step: the reason's start, and the exit status when rdmadiag could not check.
leader="rdmadiag: " unknown_rc=3
if [ -n "$nhc" ]; then
	mkdir -p "$d/nhc/scripts"
	cp "$nhc/scripts/common.nhc" "$repo/deploy/nhc/rdmadiag.nhc" "$d/nhc/scripts/"
	cat >"$d/nhc/nhc.conf" <<EOF
* || export RDMADIAG=$rdmadiag
* || export RDMADIAG_ARGS="--snapshot $d/snapshot.txtar"
* || check_rdmadiag -t 20
EOF
	run="SLURM_CONF=$d/slurm.conf $nhc/nhc -D $d/nhc -l - NHC_RM=slurm HELPERDIR=$nhc/helpers"
	leader="NHC: check_rdmadiag: " unknown_rc=0
fi
cat >"$d/healthcheck" <<EOF
#!/bin/sh
out=\$(env -i SLURMD_NODENAME="\$SLURMD_NODENAME" $run 2>&1)
rc=\$?
printf '%s\\n' "\$out" | tee -a $d/hc.out
echo "\$(date +%T) rc=\$rc" >>$d/hc-runs
exit \$rc
EOF
chmod 0755 "$d/healthcheck"

{
	cluster_conf
	cat <<EOF
SlurmdPort=$((port + 1))
HealthCheckProgram=$d/healthcheck
HealthCheckInterval=$interval
HealthCheckNodeState=ANY
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=e2e Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
} >"$SLURM_CONF"

step "slurmctld and slurmd for node $node (HealthCheckInterval=$interval)"
cluster_start "$node"

# Helpers reading the node the way an operator does.
node_state() { scontrol show node "$node" | sed -n 's/^ *State=\([^ ]*\).*/\1/p'; }
# The reason without the "[user@time]" scontrol appends.
node_reason() { scontrol show node "$node" | sed -n 's/^ *Reason=\(.*\) \[[^]]*\]$/\1/p'; }
sinfo_reason() { sinfo -R --noheader --format='%E|%N'; }
runs() { if [ -f "$d/hc-runs" ]; then wc -l <"$d/hc-runs"; else echo 0; fi; }
# wait_until SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.5 s.
wait_until() {
	local limit=$1 what=$2
	shift 2
	local until=$((SECONDS + limit))
	while ! "$@"; do
		[ $SECONDS -lt $until ] || fail "$what: not within ${limit}s (state $(node_state), reason '$(node_reason)')"
		sleep 0.5
	done
}
# settle N: wait until N more health checks have finished (the node has had N chances to change).
settle() {
	local want=$(($(runs) + $1))
	wait_until $(($1 * interval * 3 + 30)) "$1 more health check run(s)" test_runs_ge "$want"
}
test_runs_ge() { [ "$(runs)" -ge "$1" ]; }
# shellcheck disable=SC2254 # the state is matched against a glob on purpose
state_is() { case $(node_state) in $1) return 0 ;; esac; return 1; }
last_rc() { tail -n 1 "$d/hc-runs" | sed 's/.*rc=//'; }

step "1. garbled snapshot (could not check): the node registers and stays in service"
wait_until 60 "node $node registers" state_is 'IDLE'
settle 2
[ "$(last_rc)" = "$unknown_rc" ] || fail "health check exit $(last_rc) on a garbled snapshot, want $unknown_rc"
state_is 'IDLE' || fail "could not check changed the node: $(node_state) '$(node_reason)'"
grep -q 'could not check (rdmadiag exit 3)' "$d/hc.out" || fail "could-not-check is not logged"

step "2. port-down snapshot (critical): the node drains with reason $leader..."
set_snapshot "$critical"
wait_until 60 "node drains" state_is '*DRAIN*'
reason=$(node_reason)
case $reason in
"$leader"*"rxe0/1 is DOWN"*) ;;
*) fail "drain reason '$reason', want '$leader... rxe0/1 is DOWN ...'" ;;
esac
sinfo_reason | grep -qF "$reason|$node" || fail "sinfo -R does not list $node with '$reason': $(sinfo_reason)"
echo "   scontrol: State=$(node_state) Reason=$reason"
settle 1
[ "$(node_reason)" = "$reason" ] || fail "reason changed on a repeated critical run: '$(node_reason)'"
grep -q "health_check failed: rc:1 output:.*rxe0/1 is DOWN" "$d/slurmd-$node.log" ||
	fail "slurmd.log does not show the failed health check"

step "3. healthy snapshot: the node resumes"
set_snapshot "$healthy"
wait_until 60 "node resumes" state_is 'IDLE'
[ -z "$(node_reason)" ] || fail "reason left after resume: '$(node_reason)'"
[ -z "$(sinfo_reason)" ] || fail "sinfo -R still lists: $(sinfo_reason)"

other="maintenance: cable swap"
step "4. drained by someone else ('$other'), healthy: the node stays drained"
scontrol update NodeName="$node" State=DRAIN Reason="$other"
settle 2
state_is '*DRAIN*' || fail "a node drained by someone else was resumed: $(node_state)"
[ "$(node_reason)" = "$other" ] || fail "their reason became '$(node_reason)'"

step "5. drained by someone else, critical: their reason is kept"
set_snapshot "$critical"
settle 2
[ "$(last_rc)" = 1 ] || fail "health check exit $(last_rc) on a critical snapshot, want 1"
state_is '*DRAIN*' || fail "node not drained: $(node_state)"
[ "$(node_reason)" = "$other" ] || fail "their reason was overwritten with '$(node_reason)'"
sinfo_reason | grep -qF "$other|$node" || fail "sinfo -R: $(sinfo_reason)"

step "PASS ($(runs) health check runs)"
