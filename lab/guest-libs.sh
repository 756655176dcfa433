#!/usr/bin/env bash
# guest-libs.sh ROOT DEST FILE...: copy into DEST the shared libraries that FILEs need, taken from the
# unpacked guest packages in ROOT when they are there (so the guest runs Debian's libraries, not the
# host's) and from the host otherwise (a helper program linked against a library the lab does not
# ship). Statically linked FILEs need nothing.
set -euo pipefail
root=$1 dest=$2; shift 2
libpath=$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu
mkdir -p "$dest/lib64"
[ -e "$dest/lib64/ld-linux-x86-64.so.2" ] || cp "$root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$dest/lib64/" # $root/lib64's is an absolute link
for f in "$@"; do
  [ -n "$f" ] || continue
  # ldd exits 1 on a static binary; that is not an error here.
  LD_LIBRARY_PATH=$libpath ldd "$f" 2>/dev/null | awk '/=> \//{print $3}' || true
done | sort -u | while read -r lib; do
  rel=${lib#"$root"}
  case $rel in /usr/lib/* | /lib/*) ;; *) rel=/usr/lib/x86_64-linux-gnu/$(basename "$lib") ;; esac
  [ -e "$dest$rel" ] && continue
  mkdir -p "$dest$(dirname "$rel")"
  cp -L "$lib" "$dest$rel"
done
