#!/usr/bin/env bash
# netdevsim-ko.sh: build netdevsim.ko for the lab's guest kernel into lab/cache/netdevsim/.
# Debian 12's linux-image-6.1.0-*-amd64 ships without it (# CONFIG_NETDEVSIM is not set), so the
# devlink-netdevsim scenario builds it out of tree from Debian's own linux-source-6.1 against
# linux-headers-<guest kernel> (same ABI, so modversions match; the guest loads it unsigned, which
# only taints). Needs apt (root) once; the module is cached afterwards.
set -euo pipefail
LAB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KV=$(ls "$LAB/cache/root/lib/modules" | head -1)
[ -n "$KV" ] || { echo "netdevsim-ko.sh: no guest kernel in $LAB/cache/root; run a lab scenario first" >&2; exit 2; }
out=$LAB/cache/netdevsim
[ -s "$out/netdevsim.ko" ] && exit 0
[ -d "/usr/src/linux-headers-$KV" ] && [ -e /usr/src/linux-source-6.1.tar.xz ] ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "linux-headers-$KV" linux-source-6.1
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
tar xJf /usr/src/linux-source-6.1.tar.xz -C "$src" --wildcards 'linux-source-6.1/drivers/net/netdevsim/*'
d=$src/linux-source-6.1/drivers/net/netdevsim
make -s -C "/usr/src/linux-headers-$KV" M="$d" CONFIG_NETDEVSIM=m modules
mkdir -p "$out"
cp "$d/netdevsim.ko" "$out/"
echo "netdevsim-ko.sh: $out/netdevsim.ko ($(modinfo -F vermagic "$out/netdevsim.ko"))"
