#!/usr/bin/env bash
# netdevsim-ko.sh: build netdevsim.ko for the lab's guest kernel, and fetch ethtool for the guest,
# into lab/cache/netdevsim/ ($LAB_CACHE/netdevsim).
# Debian 12's linux-image-6.1.0-*-amd64 ships without it (# CONFIG_NETDEVSIM is not set), so the
# devlink-netdevsim and ethtool-netdevsim scenarios build it out of tree from Debian's own
# linux-source-6.1 against linux-headers-<guest kernel> (same ABI, so modversions match; the guest
# loads it unsigned, which only taints). Needs apt (root) once; the module is cached afterwards in
# $LAB_CACHE/netdevsim (default lab/cache), next to the guest packages vm.sh keeps there.
set -euo pipefail
LAB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${LAB_CACHE:-$LAB/cache}
KV=$(ls "$CACHE/root/lib/modules" 2>/dev/null | head -1) || true
[ -n "$KV" ] || { echo "netdevsim-ko.sh: no guest kernel in $CACHE/root; run a lab scenario first" >&2; exit 2; }
out=$CACHE/netdevsim
[ -s "$out/netdevsim.ko" ] && [ -x "$out/ethtool" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
if [ ! -s "$out/netdevsim.ko" ]; then
  [ -d "/usr/src/linux-headers-$KV" ] && [ -e /usr/src/linux-source-6.1.tar.xz ] ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "linux-headers-$KV" linux-source-6.1
  tar xJf /usr/src/linux-source-6.1.tar.xz -C "$tmp" --wildcards 'linux-source-6.1/drivers/net/netdevsim/*'
  d=$tmp/linux-source-6.1/drivers/net/netdevsim
  make -s -C "/usr/src/linux-headers-$KV" M="$d" CONFIG_NETDEVSIM=m modules
  cp "$d/netdevsim.ko" "$out/"
fi
echo "netdevsim-ko.sh: $out/netdevsim.ko ($(modinfo -F vermagic "$out/netdevsim.ko"))"
# The ethtool-netdevsim scenario sets and shows the netdev's FEC with Debian 12's own ethtool
# (netlink FEC_SET/FEC_GET). It is fetched here rather than added to vm.sh's guest packages, which
# would rebuild every scenario's cached base initramfs for one optional scenario; vm.sh copies its
# shared library (libmnl0) from the guest packages.
if [ ! -x "$out/ethtool" ]; then
  (cd "$tmp" && apt-get -q -o APT::Sandbox::User=root download ethtool >/dev/null)
  dpkg -x "$tmp"/ethtool_*.deb "$tmp/ethtool"
  cp "$tmp/ethtool/sbin/ethtool" "$out/ethtool"
fi
echo "netdevsim-ko.sh: $out/ethtool ($("$out/ethtool" --version))"
