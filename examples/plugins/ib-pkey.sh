#!/bin/sh
# rdmadiag: layer=port description="every InfiniBand port holds the site's P_Keys, membership included" fault=port-link
#
# An rdmadiag site plugin (docs/plugins.md): every InfiniBand port's P_Key table must hold each
# of the site's P_Keys, with the membership the site asks for.
#
# The site's keys: $RDMADIAG_PKEYS ("0xffff,0x8001", commas or spaces), else one per line in
# ${RDMADIAG_PKEYS_CONF:-/etc/rdmadiag/pkeys.conf} ('#' starts a comment). A key is 4 hex digits,
# 0x optional. Bit 15 is the membership: set, a full member (may talk to every member of the
# partition); clear, a limited member (may talk to full members only) (IBTA Volume 1, 10.9.1
# Partition Key). 0x0000 and 0x8000 are the invalid key, refused here.
#
# The table: the kernel creates one file ports/<N>/pkeys/<index> per entry of the device's
# table (setup_port, drivers/infiniband/core/sysfs.c) and prints each as "0x%04x" (show_port_pkey,
# same file); an entry whose base (bits 0-14) is 0 is empty.
#
# It reads the host under $RDMADIAG_ROOT (/ live, the unpacked tree of a snapshot) and prints
# one finding per InfiniBand port. POSIX sh, no tool beyond sed and tr.

set -u
root=${RDMADIAG_ROOT:-/}
conf=${RDMADIAG_PKEYS_CONF:-/etc/rdmadiag/pkeys.conf}

if [ -n "${RDMADIAG_PKEYS:-}" ]; then
	want=$(printf '%s\n' "$RDMADIAG_PKEYS" | tr ', ' '\n\n')
	from="RDMADIAG_PKEYS"
elif [ -r "$conf" ]; then
	want=$(sed -e 's/#.*//' "$conf")
	from=$conf
else
	want=""
	from=""
fi

# json STRING: STRING as a JSON string's contents (backslash and quote escaped).
json() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'; }

keys=""
for k in $want; do
	case $k in 0x* | 0X*) k=${k#0?} ;; esac
	case $k in
	[0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F]) ;;
	*)
		echo "ib-pkey: $from: \"$k\" is not a P_Key (want 4 hex digits, 0x optional)" >&2
		exit 2
		;;
	esac
	v=$((0x$k))
	if [ $((v & 0x7fff)) -eq 0 ]; then
		echo "ib-pkey: $from: $(printf '0x%04x' "$v") is the invalid P_Key" >&2
		exit 2
	fi
	keys="$keys $v"
done

cat >/dev/null # the facts on stdin are not needed: the port's own files say its link layer

first=1
emit() {
	if [ $first -eq 1 ]; then first=0; else printf ',\n'; fi
	printf '%s' "$1"
}

printf '{"schema": 1, "findings": [\n'
if [ -z "$keys" ]; then
	emit '{"severity": "skipped", "summary": "no site P_Keys configured: set RDMADIAG_PKEYS or write /etc/rdmadiag/pkeys.conf", "remediation": "list the partitions this host must be in, one P_Key a line, in /etc/rdmadiag/pkeys.conf"}'
fi
for port in "$root"/sys/class/infiniband/*/ports/*; do
	[ -n "$keys" ] || break
	[ -d "$port" ] || continue
	read -r ll <"$port/link_layer" 2>/dev/null || ll=""
	[ "$ll" = "InfiniBand" ] || continue
	n=${port##*/}
	dev=${port%/ports/*}
	dev=${dev##*/}
	name="$dev/$n"
	have=""
	for f in "$port"/pkeys/*; do
		[ -f "$f" ] || continue
		read -r v <"$f" || continue
		case $v in 0x[0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F]) ;; *) continue ;; esac
		v=$((v))
		[ $((v & 0x7fff)) -ne 0 ] && have="$have $v"
	done
	sev=ok
	missing=""
	other=""
	for k in $keys; do
		found=""
		for h in $have; do
			if [ "$h" -eq "$k" ]; then found=exact; break; fi
			if [ $((h & 0x7fff)) -eq $((k & 0x7fff)) ]; then found=$h; fi
		done
		case $found in
		exact) ;;
		"") missing="$missing $(printf '0x%04x' "$k")" ;;
		*) other="$other $(printf '0x%04x (holds 0x%04x)' "$k" "$found")" ;;
		esac
	done
	held=""
	for h in $have; do held="$held $(printf '0x%04x' "$h")"; done
	held=${held# }
	wanted=""
	for k in $keys; do wanted="$wanted $(printf '0x%04x' "$k")"; done
	wanted=${wanted# }
	if [ -n "$missing$other" ]; then
		sev=critical
		summary="$name: not in the site's partition"
		[ -n "$missing" ] && summary="$summary: lacks${missing}"
		[ -n "$other" ] && summary="$summary; other membership:${other}"
		action=fix-configuration
		fix="add the port GUID to the partition in the subnet manager's partition configuration (opensm: partitions.conf), with the membership the site asks"
	else
		summary="$name holds the site's P_Keys $wanted"
		fix=""
		action=""
	fi
	emit "$(printf '{"subject": {"kind": "port", "name": "%s", "device": "%s"}, "severity": "%s", "summary": "%s", "evidence": [{"name": "P_Keys", "observed": "%s", "expected": "%s", "source": "%s"}], "remediation": "%s", "action": "%s"}' \
		"$(json "$name")" "$(json "$dev")" "$sev" "$(json "$summary")" "$(json "$held")" "$(json "$wanted")" \
		"$(json "/sys/class/infiniband/$dev/ports/$n/pkeys")" "$(json "$fix")" "$action")"
done
printf '\n]}\n'
