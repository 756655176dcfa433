# cluster.sh, sourced by the e2e-slurm scripts: a Slurm cluster of real daemons (Debian's
# slurm-wlm and munge) on localhost. munged, slurmctld and one slurmd per node run in the
# foreground as children of the sourcing script, with every file under one temporary directory
# ($d) and non-default ports, and are stopped by pid on exit; E2E_KEEP=1 keeps $d (logs).
#
# Several nodes on one host: Debian builds Slurm with --enable-multiple-slurmd
# (`scontrol show config` says MULTIPLE_SLURMD = Yes), so each node is one `slurmd -N NAME`
# with NodeHostname and NodeAddr this host's and its own Port; %n in the slurmd files' paths
# keeps their spool directories, pid files and logs apart (slurm.conf(5)).
#
#   cluster_prepare NAME PORT...   root, packages, free ports, $d, the exit trap, munged
#   cluster_conf                   the common slurm.conf lines (SlurmctldPort=$ctld_port)
#   cluster_start NODE...          slurmctld, then one slurmd per node
#   fail MESSAGE, step MESSAGE     report; fail exits 1 (the trap prints $show_on_failure)

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
rdmadiag=$repo/bin/rdmadiag
cd "$repo"
start=$SECONDS
pids=()
d=
# Files of $d whose tails are printed when the script fails.
show_on_failure=(slurmctld.log munged.log)

fail() {
	echo "e2e-slurm: FAIL: $*" >&2
	exit 1
}
step() { printf '>> [%3ds] %s\n' $((SECONDS - start)) "$*"; }

cluster_cleanup() {
	rc=$?
	trap - EXIT INT TERM
	if [ $rc -ne 0 ] && [ -n "$d" ]; then
		for f in "${show_on_failure[@]}"; do
			[ -f "$d/$f" ] && { echo "---- $d/$f (last 25 lines)"; tail -n 25 "$d/$f"; }
		done
	fi
	# Children of this script only, newest first (the slurmds, slurmctld, munged), by pid.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[i]}" 2>/dev/null || continue
		for _ in $(seq 50); do kill -0 "${pids[i]}" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "${pids[i]}" 2>/dev/null || :
		wait "${pids[i]}" 2>/dev/null || :
	done
	if [ -n "$d" ]; then
		if [ "${E2E_KEEP:-0}" = 1 ]; then echo "e2e-slurm: kept $d"; else rm -rf "$d"; fi
	fi
	step "torn down"
	exit $rc
}

# cluster_prepare NAME CTLD_PORT SLURMD_PORT...: everything but the Slurm daemons.
cluster_prepare() {
	local name=$1 p
	ctld_port=$2
	[ "$(id -u)" = 0 ] || fail "needs root: slurmd runs its programs and tasks as root here"
	[ -x "$rdmadiag" ] || fail "$rdmadiag missing: run make build"
	local need=() c
	for c in slurmctld slurmd scontrol sinfo sbatch srun; do
		command -v "$c" >/dev/null || need=(slurm-wlm)
	done
	command -v munged >/dev/null || need+=(munge)
	if [ ${#need[@]} -gt 0 ]; then
		step "installing ${need[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
	fi
	shift
	for p in "$@"; do
		if ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; then
			fail "port $p is in use; set E2E_SLURM_PORT"
		fi
	done

	d=$(mktemp -d "/tmp/$name.XXXXXX")
	trap cluster_cleanup EXIT
	trap 'exit 130' INT TERM

	step "munge key and munged in $d"
	# munged wants its socket's directories searchable by everyone; the key stays 0400.
	chmod 0711 "$d"
	mkdir -m 0711 "$d/munge"
	if command -v mungekey >/dev/null; then
		mungekey --create --keyfile="$d/munge/munge.key"
	else
		dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
	fi
	chmod 0400 "$d/munge/munge.key"
	munged --foreground --force --socket="$d/munge/munge.socket" --key-file="$d/munge/munge.key" \
		--pid-file="$d/munge/munged.pid" --seed-file="$d/munge/munged.seed" \
		--log-file="$d/munged.log" >"$d/munged.out" 2>&1 &
	pids+=($!)
	mkdir -p "$d/ctld"
	export SLURM_CONF=$d/slurm.conf
}

# cluster_conf: the slurm.conf lines every e2e cluster shares; the caller adds its nodes.
cluster_conf() {
	cat <<EOF
ClusterName=rdmadiag-e2e
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket
StateSaveLocation=$d/ctld
SlurmdSpoolDir=$d/slurmd-%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd-%n.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/linear
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
EOF
}

# cluster_start NODE...: slurmctld, then `slurmd -N NODE` for each node, once munged answers.
cluster_start() {
	local n
	for _ in $(seq 50); do [ -S "$d/munge/munge.socket" ] && break; sleep 0.2; done
	[ -S "$d/munge/munge.socket" ] || fail "munged did not create its socket"
	slurmctld -D -i -f "$SLURM_CONF" >>"$d/slurmctld.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 50); do scontrol ping >/dev/null 2>&1 && break; sleep 0.2; done
	scontrol ping >/dev/null 2>&1 || fail "slurmctld does not answer"
	for n in "$@"; do
		mkdir -p "$d/slurmd-$n"
		slurmd -D -N "$n" -f "$SLURM_CONF" >>"$d/slurmd-$n.out" 2>&1 &
		pids+=($!)
	done
}
