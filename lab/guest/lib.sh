# lib.sh: helpers for scenario files and payloads in the guest (busybox sh). Sourced by /init.

# lab_log MSG: one line on the console and in /out/lab/steps.log, so a failure can be traced.
lab_log() {
	echo "lab: $*"
	echo "$*" >>/out/lab/steps.log
}

# lab_wait SECONDS DESCRIPTION CMD...: run CMD every 0.2 s until it succeeds or SECONDS pass.
# Only for what the kernel does asynchronously (port state, GID table, AER counters); returns 1 on
# timeout after logging what was awaited.
lab_wait() {
	_lw_limit=$(($1 * 5)) _lw_what=$2 _lw_n=0
	shift 2
	until "$@" >/dev/null 2>&1; do
		_lw_n=$((_lw_n + 1))
		if [ "$_lw_n" -ge "$_lw_limit" ]; then
			lab_log "timed out after ${_lw_limit}x0.2s waiting for: $_lw_what"
			return 1
		fi
		sleep 0.2
	done
	lab_log "ok after ${_lw_n}x0.2s: $_lw_what"
}

# lab_host_step NAME SECONDS CMD...: ask the host to run the scenario's host_step_NAME (e.g. inject
# an error through the QEMU monitor), then wait until CMD sees its effect. The host watches the
# console for the marker line.
lab_host_step() {
	_hs_name=$1
	shift
	lab_log "host step $_hs_name requested"
	echo "@@LAB-HOST-STEP $_hs_name@@"
	lab_wait "$@"
}

# lab_file_has FILE PATTERN: FILE exists and contains a line matching the extended regex PATTERN.
lab_file_has() { grep -Eq "$2" "$1" 2>/dev/null; }

# lab_port_state DEV PORT: the numeric port state (4 = ACTIVE, 1 = DOWN), empty when unreadable.
lab_port_state() { cut -d: -f1 "/sys/class/infiniband/$1/ports/$2/state" 2>/dev/null; }

lab_port_is() { [ "$(lab_port_state "$1" "$2")" = "$3" ]; }

# lab_gid_ready DEV PORT INDEX: the GID table entry is populated (the kernel fills it after the
# netdev's addresses appear, asynchronously).
lab_gid_ready() {
	_g=$(cat "/sys/class/infiniband/$1/ports/$2/gids/$3" 2>/dev/null) || return 1
	[ -n "$_g" ] && [ "$_g" != "0000:0000:0000:0000:0000:0000:0000:0000" ]
}

# lab_aer_total BDF FILE: the TOTAL_* counter of /sys/bus/pci/devices/BDF/aer_dev_FILE (0 if absent).
lab_aer_total() {
	awk '$1 ~ /^TOTAL_/ {print $2; found=1} END {if (!found) print 0}' "/sys/bus/pci/devices/$1/aer_dev_$2" 2>/dev/null || echo 0
}

# lab_kernel_aer_inject BDF COR_STATUS UNCOR_STATUS: report an AER error on BDF (domain 0) through the
# kernel's aer_inject module, which runs the real AER handling (logging, aer_dev_* counters) on the
# values it is given. QEMU 7.2 sets the correctable status bits but never delivers ERR_COR to the
# root port, so correctable errors can only be produced this way.
lab_kernel_aer_inject() {
	lab_kernel_aer_prepare "$@" && lab_kernel_aer_fire
}
# lab_kernel_aer_prepare BDF COR UNCOR: load aer_inject and write the request to /tmp/aer_error_inj;
# its ~40 forks cost a TCG guest about half a second, which a timed injection must not count.
lab_kernel_aer_prepare() {
	modprobe aer_inject || return 1
	_bus=$(echo "$1" | cut -d: -f2) _dev=$(echo "$1" | cut -d: -f3 | cut -d. -f1) _fn=${1##*.}
	# struct aer_error_inj (drivers/pci/pcie/aer_inject.c): u8 bus, dev, fn; u32 uncor_status,
	# cor_status, header_log0..3, domain: 32 bytes, little endian, one write().
	{
		_le8() { printf "\\$(printf %03o "$1")"; }
		_le32() { _le8 $(($1 & 255)); _le8 $((($1 >> 8) & 255)); _le8 $((($1 >> 16) & 255)); _le8 $((($1 >> 24) & 255)); }
		_le8 $((0x$_bus)); _le8 $((0x$_dev)); _le8 $((0x$_fn)); _le8 0
		_le32 $(($3)); _le32 $(($2)); _le32 0; _le32 0; _le32 0; _le32 0; _le32 0
	} >/tmp/aer_error_inj
}
# lab_kernel_aer_fire: the one write() that makes the kernel handle the prepared error.
lab_kernel_aer_fire() {
	dd if=/tmp/aer_error_inj of=/dev/aer_inject bs=32 count=1 2>/dev/null
}
