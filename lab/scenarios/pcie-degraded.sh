# pcie-degraded: the PCIe root port 0000:00:02.0 is capable of 16 GT/s x32 (LnkCap) but its link to
# the virtio endpoint 0000:01:00.0 trained at 2.5 GT/s x1 (LnkSta), the endpoint's own maximum.
: "${RP_SPEED:=16}" "${RP_WIDTH:=32}"

guest_verify() {
	d=/sys/bus/pci/devices/0000:00:02.0
	[ "$(cat $d/max_link_speed)" != "$(cat $d/current_link_speed)" ] &&
		[ "$(cat $d/max_link_width)" != "$(cat $d/current_link_width)" ]
}
