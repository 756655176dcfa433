#!/usr/bin/env bash
# vm.sh: boot one QEMU guest running Debian 12's stock kernel with a real RDMA stack (Soft-RoCE rxe0
# on a virtio NIC behind a PCIe root port), put it into one scenario, run one payload, and bring back
# what the payload wrote to /out.
#
#   lab/vm.sh [-s SCENARIO] [-o OUTDIR] [-f FILE]... [--] [PAYLOAD ...]
#
#   -s SCENARIO  name of lab/scenarios/SCENARIO.sh, or a path to a scenario file (default: healthy)
#   -o OUTDIR    host directory for the results (default: lab/out/SCENARIO); emptied first
#   -f FILE      copy FILE into the guest's /usr/bin (with the shared libraries it needs); repeatable
#   PAYLOAD      shell command run by /bin/sh -c in the guest as root (default: true), in /out
#
# Guest layout: eth0 (virtio-net, 10.0.2.15/24, PCI 0000:01:00.0) behind the PCIe root port
# 0000:00:02.0 (QEMU id rp1, the name AER injection uses); rxe0 on eth0 unless NO_RXE/NO_MODULES.
#
# Results in OUTDIR:
#   console.log         the guest console (kernel messages, harness markers, payload output)
#   out/                everything the guest left under /out, notably
#     payload.stdout, payload.stderr, payload.rc   the payload's output and exit status
#     lab/kmsg.txt     raw /dev/kmsg records (with their dictionary lines) at the end of the run
#     lab/scenario     the scenario name; lab/steps.log: what the harness did, in order
#   status              one word: ok, setup-failed, verify-failed, no-result, timeout
#   qemu.log            QEMU's own stderr
#
# Exit status: 0 when the scenario was set up and verified, the payload ran (whatever its own exit
# status) and /out came back intact; 3 when the lab cannot start on this machine (missing packages,
# no apt, no QEMU); 4 when the guest failed (setup, verification, timeout, corrupt transfer);
# 2 on a usage error.
#
# Environment (optional; it overrides the scenario's defaults):
#   NO_MODULES=1  load no RDMA module;  NO_RXE=1  load the modules but register no rxe device
#   RP_SPEED      link speed the PCIe root port advertises: 2_5, 5, 8, 16, 32, 64
#   RP_WIDTH      link width the PCIe root port advertises: 1, 2, 4, 8, 12, 16, 32
#   LAB_SETUP     extra shell run in the guest after the scenario's own setup, before verification
#   LAB_CACHE     where guest packages and the base initramfs are kept (default: lab/cache)
#   LAB_TIMEOUT   hard limit on the whole VM in seconds (default 300)
#   LAB_MEM       guest memory in MiB (default 1024)
#   LAB_SMP       guest CPUs (default 2)
#   LAB_QUIET=1   do not copy the console to stdout while the guest runs
#   LAB_KERNEL_PKG  Debian kernel package to boot (default: what linux-image-amd64 depends on)
#
# Scenario files (lab/scenarios/*.sh) are sourced by bash on the host and by busybox sh in the guest,
# so they must be POSIX sh. See lab/scenarios/README.md for what they may define.
set -euo pipefail
trap 'echo "vm.sh: line $LINENO failed: $BASH_COMMAND" >&2' ERR

LAB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "vm.sh: $*" >&2; exit 2; }
unavailable() { echo "vm.sh: lab unavailable: $*" >&2; exit 3; }

scenario=healthy outdir= files=()
while getopts ':s:o:f:h' opt; do
  case $opt in
    s) scenario=$OPTARG ;;
    o) outdir=$OPTARG ;;
    f) files+=("$OPTARG") ;;
    h) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option -$OPTARG (try -h)" ;;
  esac
done
shift $((OPTIND - 1))
payload=${*:-true}

case $scenario in
  */*) sfile=$scenario; scenario=$(basename "$scenario" .sh) ;;
  *) sfile=$LAB/scenarios/$scenario.sh ;;
esac
[ -f "$sfile" ] || die "no scenario file $sfile (known: $(cd "$LAB/scenarios" && ls ./*.sh | sed 's,^\./,,; s,\.sh$,,' | tr '\n' ' '))"
for f in ${files[@]+"${files[@]}"}; do [ -f "$f" ] || die "no such file: $f"; done
outdir=${outdir:-$LAB/out/$scenario}
CACHE=${LAB_CACHE:-$LAB/cache}

# The scenario's defaults; the environment wins because scenario files only use ${VAR:=default}.
# shellcheck source=/dev/null
. "$sfile"
# A variant scenario names the scenario it varies (LAB_INCLUDE=NAME): its settings come first,
# then that scenario's file, in the guest too.
if [ -n "${LAB_INCLUDE:-}" ]; then
  [ -f "$LAB/scenarios/$LAB_INCLUDE.sh" ] || die "scenario $scenario includes $LAB_INCLUDE, which does not exist"
  # shellcheck source=/dev/null
  . "$LAB/scenarios/$LAB_INCLUDE.sh"
fi
: "${NO_MODULES:=0}" "${NO_RXE:=0}" "${RP_SPEED:=2_5}" "${RP_WIDTH:=1}" "${LAB_FILES:=}"
case $RP_SPEED in 2_5|5|8|16|32|64) ;; *) die "RP_SPEED=$RP_SPEED: want 2_5, 5, 8, 16, 32 or 64" ;; esac
case $RP_WIDTH in 1|2|4|8|12|16|32) ;; *) die "RP_WIDTH=$RP_WIDTH: want 1, 2, 4, 8, 12, 16 or 32" ;; esac
# Files a scenario needs (e.g. a verbs helper program) are named by the scenario itself.
for f in $LAB_FILES; do [ -f "$f" ] || die "scenario $scenario needs $f, which does not exist (build it first)"; files+=("$f"); done

# ---- host tools ---------------------------------------------------------------------------------
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
# The initramfs needs a static busybox (the "busybox" package's is dynamic).
dpkg-query -W -f '${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || need+=(busybox-static)
command -v cpio >/dev/null || need+=(cpio)
command -v depmod >/dev/null || need+=(kmod)
command -v socat >/dev/null || need+=(socat)
command -v apt-get >/dev/null || unavailable "no apt-get: this lab needs a Debian 12 host"
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || unavailable "missing host packages ${need[*]} and not root to install them"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; } >&2 ||
    unavailable "could not install ${need[*]}"
fi

# ---- guest packages (downloaded and unpacked, never installed on the host) ----------------------
KPKG=${LAB_KERNEL_PKG:-}
if [ -z "$KPKG" ]; then
  KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}') || true
  if [ -z "$KPKG" ]; then
    apt-get update -qq >&2 || unavailable "apt-get update failed"
    KPKG=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  fi
fi
[ -n "$KPKG" ] || unavailable "cannot tell which kernel package linux-image-amd64 depends on"
# Everything the guest runs comes from these packages, including the C library, so the guest does
# not depend on what happens to be installed on the host.
GUEST_PKGS="$KPKG libc6 libibverbs1 ibverbs-providers ibverbs-utils perftest librdmacm1 libnl-3-200
  libnl-route-3-200 iproute2 libbpf1 libelf1 libmnl0 libcap2 libtirpc3 libgssapi-krb5-2 libkrb5-3
  libk5crypto3 libkrb5support0 libkeyutils1 libcom-err2 zlib1g libselinux1 libpcre2-8-0 pciutils libpci3
  libkmod2 libudev1 libzstd1 liblzma5 libssl3"
ROOT=$CACHE/root
root_key=$(echo "$GUEST_PKGS" | tr -s ' \n' ' ' | sha256sum | cut -c1-16)
if [ ! -f "$ROOT/.lab-root-$root_key" ]; then
  echo "vm.sh: fetching guest packages into $CACHE/debs" >&2
  rm -rf "$CACHE/debs" "$ROOT"; mkdir -p "$CACHE/debs" "$ROOT"
  # shellcheck disable=SC2086 # GUEST_PKGS is a word list
  if ! (cd "$CACHE/debs" && apt-get -q -o APT::Sandbox::User=root download $GUEST_PKGS >/dev/null); then
    apt-get update -qq >&2 || unavailable "apt-get update failed"
    # shellcheck disable=SC2086
    (cd "$CACHE/debs" && apt-get -q -o APT::Sandbox::User=root download $GUEST_PKGS >/dev/null) ||
      unavailable "apt-get download of the guest packages failed"
  fi
  for d in "$CACHE"/debs/*.deb; do dpkg -x "$d" "$ROOT"; done
  touch "$ROOT/.lab-root-$root_key"
fi
# Exact package versions: fixtures' READMEs cite them.
if [ ! -s "$ROOT/.lab-pkg-versions" ]; then
  for d in "$CACHE"/debs/*.deb; do dpkg-deb -f "$d" Package Version | awk '{print $2}' | paste -sd' '; done | sort >"$ROOT/.lab-pkg-versions"
fi
KV=$(basename "$(ls -d "$ROOT"/lib/modules/*/ | head -1)")
[ -f "$ROOT/lib/modules/$KV/modules.dep" ] || depmod -b "$ROOT" "$KV"
KVER=$(awk -v p="$KPKG" '$1==p{print $2}' "$ROOT/.lab-pkg-versions")

# ---- base initramfs: packages only, cached; the per-run part is a second cpio appended to it -------
# Keyed by the packages and by this recipe, so an edit here cannot boot a stale initramfs.
base_key=$(cat "${BASH_SOURCE[0]}" "$LAB/guest-libs.sh" | sha256sum | cut -c1-16)
BASE=$CACHE/base-$root_key-$base_key.cpio.gz
if [ ! -f "$BASE" ]; then
  echo "vm.sh: building the base initramfs" >&2
  I=$(mktemp -d); trap 'rm -rf "$I"' EXIT
  mkdir -p "$I"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,out,lab,boot,lib64,etc/libibverbs.d}
  mkdir -p "$I"/usr/lib/x86_64-linux-gnu/libibverbs "$I/lib/modules/$KV"
  cp /bin/busybox "$I/bin/"
  rm -f "$CACHE"/base-*.cpio.gz
  # crc32_generic: rdma_rxe needs the "crc32" transform or "rdma link add" fails with ENOENT.
  # aer_inject: the kernel's own AER injector, for correctable errors (QEMU cannot deliver those).
  # psample: what netdevsim.ko needs (Debian ships no netdevsim; lab/netdevsim-ko.sh builds it).
  # veth, sch_netem: two hosts on one (bad) wire (pair-probe).
  # bridge, sch_prio, cls_u32, act_gact: a switch with one bad path between two hosts (pair-fleet).
  for m in crc32_generic virtio_pci virtio_net rdma_rxe ib_uverbs rdma_ucm ib_umad aer_inject psample veth sch_netem \
    bridge sch_prio cls_u32 act_gact; do
    modprobe -d "$ROOT" -S "$KV" --show-depends "$m" | awk '$1=="insmod"{print $2}'
  done | sort -u | while read -r f; do g=${f#"$ROOT"/}; mkdir -p "$I/$(dirname "$g")"; cp "$f" "$I/$g"; done
  cp "$ROOT/lib/modules/$KV"/modules.* "$I/lib/modules/$KV/"
  # A real Debian host has its kernel config here (CONFIG_IKCONFIG is off, so no /proc/config.gz).
  cp "$ROOT/boot/config-$KV" "$I/boot/"
  for b in ibv_devinfo ibv_devices ibv_rc_pingpong ib_write_bw ib_send_bw; do cp "$ROOT/usr/bin/$b" "$I/usr/bin/"; done
  # iproute2's ip and tc (network namespaces, netem), beside busybox's ip applet.
  for b in rdma lspci ip tc; do
    p=$(ls "$ROOT"/{usr/bin,usr/sbin,bin,sbin}/$b 2>/dev/null | head -1) || true
    [ -n "$p" ] || unavailable "no $b in the guest packages"
    cp "$p" "$I/usr/bin/"
  done
  cp "$ROOT"/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so "$I/usr/lib/x86_64-linux-gnu/libibverbs/"
  cp "$ROOT/etc/libibverbs.d/rxe.driver" "$I/etc/libibverbs.d/"
  # Libraries: what ldd lists, plus those opened with dlopen (a purego program opens libibverbs).
  "$LAB/guest-libs.sh" "$ROOT" "$I" "$I"/usr/bin/* "$I"/usr/lib/x86_64-linux-gnu/libibverbs/*.so
  for l in libibverbs.so.1 librdmacm.so.1 libnl-3.so.200 libnl-route-3.so.200; do
    "$LAB/guest-libs.sh" "$ROOT" "$I" "$(ls "$ROOT"/usr/lib/x86_64-linux-gnu/$l "$ROOT"/lib/x86_64-linux-gnu/$l 2>/dev/null | head -1)"
  done
  (cd "$ROOT/usr/lib/x86_64-linux-gnu" && for l in libibverbs.so.1 librdmacm.so.1; do
    cp -L "$l" "$I/usr/lib/x86_64-linux-gnu/"; ln -sf "$l" "$I/usr/lib/x86_64-linux-gnu/${l%.1}"; done)
  # An ld.so cache as on a real host: programs (and dlopen) find libraries without LD_LIBRARY_PATH.
  printf '/usr/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n' >"$I/etc/ld.so.conf"
  ldconfig -r "$I"
  (cd "$I" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) >"$BASE.tmp"
  mv "$BASE.tmp" "$BASE"
  rm -rf "$I"; trap - EXIT
fi

# ---- per-run part: harness, scenario, payload, extra files ---------------------------------------
rm -rf "$outdir"; mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
RUN=$(mktemp -d); trap 'rm -rf "$RUN"' EXIT
T=$RUN/tree # what this run adds to the guest's root
mkdir -p "$T/lab" "$T/usr/bin"
cp "$LAB/guest/init" "$T/init"; chmod 755 "$T/init"
cp "$LAB/guest/lib.sh" "$T/lab/lib.sh"
{ cat "$sfile"; if [ -n "${LAB_INCLUDE:-}" ]; then cat "$LAB/scenarios/$LAB_INCLUDE.sh"; fi; } >"$T/lab/scenario.sh"
printf '%s\n' "$payload" >"$T/lab/payload"
if [ -n "${LAB_SETUP:-}" ]; then printf '%s\n' "$LAB_SETUP" >"$T/lab/extra-setup"; fi
{
  printf 'LAB_SCENARIO=%s\nNO_MODULES=%s\nNO_RXE=%s\nRP_SPEED=%s\nRP_WIDTH=%s\n' \
    "$scenario" "$NO_MODULES" "$NO_RXE" "$RP_SPEED" "$RP_WIDTH"
  printf 'LAB_KERNEL_PKG=%s\nLAB_KERNEL_VERSION=%s\n' "$KPKG" "$KVER"
} >"$T/lab/env"
for f in ${files[@]+"${files[@]}"}; do
  cp "$f" "$T/usr/bin/"; chmod 755 "$T/usr/bin/$(basename "$f")"
  "$LAB/guest-libs.sh" "$ROOT" "$T" "$f"
done
(cd "$T" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) >"$RUN/run.cpio.gz"
cat "$BASE" "$RUN/run.cpio.gz" >"$RUN/initrd.gz"

# ---- boot ----------------------------------------------------------------------------------------
mon=$RUN/monitor.sock
: >"$outdir/console.log"; : >"$outdir/channel.txt"
# ttyS0 is the console; ttyS1 carries only the /out archive, so kernel messages cannot corrupt it.
timeout -k 10 "${LAB_TIMEOUT:-300}" qemu-system-x86_64 -machine q35 -accel tcg -cpu max -m "${LAB_MEM:-1024}" -smp "${LAB_SMP:-2}" \
  -nodefaults -display none -no-reboot \
  -kernel "$ROOT/boot/vmlinuz-$KV" -initrd "$RUN/initrd.gz" -append "console=ttyS0 quiet panic=-1" \
  -serial "file:$outdir/console.log" -serial "file:$outdir/channel.txt" -monitor "unix:$mon,server,nowait" \
  -netdev user,id=n0,restrict=on,ipv6=off \
  -device "pcie-root-port,id=rp1,bus=pcie.0,addr=0x2,chassis=1,slot=1,x-speed=$RP_SPEED,x-width=$RP_WIDTH" \
  -device virtio-net-pci,netdev=n0,bus=rp1,disable-legacy=on,romfile= \
  </dev/null >"$outdir/qemu.log" 2>&1 &
qpid=$!
[ "${LAB_QUIET:-0}" = 1 ] || tail -n +1 -F --pid=$qpid "$outdir/console.log" 2>/dev/null &

# Host steps: the guest prints "@@LAB-HOST-STEP name@@" and waits (bounded) for the effect; the host
# runs the scenario's host_step_<name> function once. Each step gets the monitor socket in $1.
done_steps=" "
while kill -0 $qpid 2>/dev/null; do
  for step in $(tr -d '\r' <"$outdir/console.log" | grep -o '@@LAB-HOST-STEP [A-Za-z0-9_]*@@' | sed 's/^@@LAB-HOST-STEP //; s/@@$//'); do
    case $done_steps in *" $step "*) continue ;; esac
    done_steps="$done_steps$step "
    if declare -F "host_step_$step" >/dev/null; then
      echo "vm.sh: host step $step" >&2
      "host_step_$step" "$mon" >>"$outdir/host-steps.log" 2>&1 || echo "vm.sh: host step $step failed (see host-steps.log)" >&2
    else
      echo "vm.sh: guest asked for host step $step, which scenario $scenario does not define" >&2
    fi
  done
  sleep 0.3
done
qrc=0; wait $qpid || qrc=$?
sleep 0.2 # let tail print the last lines

# ---- results -------------------------------------------------------------------------------------
tr -d '\r' <"$outdir/console.log" >"$outdir/console.tmp" && mv "$outdir/console.tmp" "$outdir/console.log"
status=no-result
if [ $qrc = 124 ] || [ $qrc = 137 ]; then status=timeout
elif grep -q '@@LAB-STATUS setup-failed@@' "$outdir/console.log"; then status=setup-failed
elif grep -q '@@LAB-STATUS verify-failed@@' "$outdir/console.log"; then status=verify-failed
fi
hdr=$(tr -d '\r' <"$outdir/channel.txt" | sed -n 's/^@@LAB-OUT-BEGIN \([0-9]*\) \([0-9a-f]*\)@@$/\1 \2/p' | tail -1)
if [ -n "$hdr" ] && tr -d '\r' <"$outdir/channel.txt" | grep -q '^@@LAB-OUT-END@@$'; then
  tr -d '\r' <"$outdir/channel.txt" | sed -n '/^@@LAB-OUT-BEGIN /,/^@@LAB-OUT-END@@$/{/^@@/d;p}' | base64 -d >"$RUN/out.tar.gz" || true
  size=$(stat -c %s "$RUN/out.tar.gz"); sum=$(sha256sum "$RUN/out.tar.gz" | cut -d' ' -f1)
  if [ "$size $sum" = "$hdr" ]; then
    mkdir -p "$outdir/out" && tar -xzf "$RUN/out.tar.gz" -C "$outdir/out"
    [ $status != no-result ] || ! grep -q '@@LAB-STATUS ok@@' "$outdir/console.log" || status=ok
  else
    echo "vm.sh: /out archive corrupt: got $size $sum, guest sent $hdr" >&2
    status=no-result
  fi
fi
rm -f "$outdir/channel.txt"
echo "$status" >"$outdir/status"
if [ $status = ok ]; then
  echo "vm.sh: scenario $scenario ok; payload exit $(cat "$outdir/out/payload.rc" 2>/dev/null || echo '?'); results in $outdir" >&2
  exit 0
fi
echo "vm.sh: scenario $scenario: $status (qemu exit $qrc); console: $outdir/console.log" >&2
tail -n 30 "$outdir/console.log" | sed 's/^/  console| /' >&2
exit 4
