# unprivileged: the healthy guest checked by an ordinary user (uid 1000) with
# kernel.dmesg_restrict=1, as a Nagios or node-problem-detector plugin runs: what needs root (the
# kernel log) is skipped with the way to lift it, nothing is unknown, and the verdict is healthy.
: "${RP_SPEED:=2_5}" "${RP_WIDTH:=1}"
# Fixtures of this scenario are recorded by that user too.
FIXTURE_USER=lab

guest_setup() {
	grep -q '^root:' /etc/passwd 2>/dev/null || echo 'root:x:0:0:root:/root:/bin/sh' >>/etc/passwd
	echo 'lab:x:1000:1000:lab:/tmp:/bin/sh' >>/etc/passwd
	echo 'lab:x:1000:' >>/etc/group
	echo 1 >/proc/sys/kernel/dmesg_restrict
	# The initramfs is unpacked from a private (0700) build directory: let others read and run it,
	# as on an installed system.
	find / -xdev \( -type d -o -type f \) -exec chmod a+rX {} +
	# The payload writes its output as that user.
	chmod 1777 /out
}

guest_verify() {
	lab_port_is rxe0 1 4 && [ -e /dev/infiniband/uverbs0 ] &&
		[ "$(su -s /bin/sh lab -c 'id -u')" = 1000 ] &&
		! su -s /bin/sh lab -c 'head -c1 /dev/kmsg' >/dev/null 2>&1
}
