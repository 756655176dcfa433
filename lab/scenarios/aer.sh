# aer: the PCIe root port 0000:00:02.0 (QEMU id rp1) has reported one uncorrectable non-fatal error
# (Completion Timeout, status bit 0x4000) and one correctable error (Bad TLP, 0x40); the kernel has
# logged and counted both.
#
# The uncorrectable error comes through the QEMU monitor, i.e. the emulated hardware raises it. The
# correctable one cannot: QEMU 7.2 sets CESta.BadTLP and DevSta.CorrErr on the port but drops the
# ERR_COR message (RootSta CERcvd stays clear, nothing is counted). It is therefore reported with the
# kernel's aer_inject module, which drives the same kernel AER code.
LAB_RP=0000:00:02.0

# Runs on the host (bash), with the monitor socket as $1.
host_step_aer_uncorrectable() {
	printf 'pcie_aer_inject_error rp1 0x4000\n' | socat -t 2 - "UNIX-CONNECT:$1"
}

lab_aer_grew() { # lab_aer_grew FILE BEFORE
	[ "$(lab_aer_total $LAB_RP "$1")" -gt "$2" ]
}

guest_setup() {
	nf0=$(lab_aer_total $LAB_RP nonfatal) cor0=$(lab_aer_total $LAB_RP correctable)
	lab_host_step aer_uncorrectable 60 "uncorrectable AER counted on $LAB_RP" lab_aer_grew nonfatal "$nf0" || return 1
	lab_kernel_aer_inject $LAB_RP 0x40 0 || return 1
	lab_wait 30 "correctable AER counted on $LAB_RP" lab_aer_grew correctable "$cor0"
}

guest_verify() {
	[ "$(lab_aer_total $LAB_RP nonfatal)" -ge 1 ] && [ "$(lab_aer_total $LAB_RP correctable)" -ge 1 ]
}
