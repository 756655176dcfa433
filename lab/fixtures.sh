#!/usr/bin/env bash
# fixtures.sh [SCENARIO...]: record a redacted rdmadiag snapshot of the real guest kernel in each
# scenario (default: all of lab/scenarios) and store it, with a README saying how it was made, as
# FIXTURES/<scenario>/snapshot.txtar: the recorded tar.gz in text form (lab/totxtar, the same files
# byte for byte), so that a re-recording is reviewed as a diff.
#
# Environment: RDMADIAG (default bin/rdmadiag), FIXTURES (default fixtures/sysfs),
# FIXTURE_CMD (default "rdmadiag record --redact --description 'lab scenario S' -o
# /out/snapshot.tar.gz"; it must leave /out/snapshot.tar.gz in the guest), GO (default go), plus
# everything lab/vm.sh reads.
set -euo pipefail
LAB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$LAB")
rdmadiag=${RDMADIAG:-$REPO/bin/rdmadiag}
dest=${FIXTURES:-$REPO/fixtures/sysfs}
[ -x "$rdmadiag" ] || { echo "fixtures.sh: $rdmadiag missing; run make build" >&2; exit 2; }
mkdir -p "$dest" && dest=$(cd "$dest" && pwd) # lab/totxtar runs from $REPO
if [ $# -eq 0 ]; then
  set -- $(cd "$LAB/scenarios" && ls ./*.sh | sed 's,^\./,,; s,\.sh$,,')
fi
for s in "$@"; do
  out=$LAB/out/fixtures/$s
  cmd=${FIXTURE_CMD:-rdmadiag record --redact --description \'lab scenario $s\' -o /out/snapshot.tar.gz}
  # A scenario may ask to be recorded by an ordinary user (FIXTURE_USER), as a plugin would run.
  user=$(bash -c ". '$LAB/scenarios/$s.sh'; echo \"\${FIXTURE_USER:-}\"")
  if [ -n "$user" ] && [ -z "${FIXTURE_CMD:-}" ]; then
    cmd="su -s /bin/sh $user -c \"$cmd\""
  fi
  LAB_QUIET=1 "$LAB/vm.sh" -s "$s" -o "$out" -f "$rdmadiag" -- "$cmd"
  rc=$(cat "$out/out/payload.rc")
  if [ "$rc" != 0 ] || [ ! -s "$out/out/snapshot.tar.gz" ]; then
    echo "fixtures.sh: scenario $s: \"$cmd\" exited $rc or wrote no /out/snapshot.tar.gz; its stderr:" >&2
    sed 's/^/  | /' "$out/out/payload.stderr" >&2
    exit 1
  fi
  mkdir -p "$dest/$s"
  . "$out/out/lab/env"
  {
    echo "# Fixture: $s"
    echo
    echo "A redacted snapshot of a real Linux kernel RDMA stack (Soft-RoCE rxe0 on a virtio NIC behind"
    echo "a PCIe root port, under QEMU), recorded by \`make fixtures\` (lab/fixtures.sh). Do not edit"
    echo "it by hand: regenerate it."
    echo
    echo "- Command in the guest: \`$cmd\`"
    echo "- Guest kernel: Debian package $LAB_KERNEL_PKG $LAB_KERNEL_VERSION"
    echo "- Recorded: $(date -u +%Y-%m-%dT%H:%M:%SZ) by $("$rdmadiag" --version 2>/dev/null || echo '(version unknown)')"
    echo "- Lab settings: NO_MODULES=$NO_MODULES NO_RXE=$NO_RXE RP_SPEED=$RP_SPEED RP_WIDTH=$RP_WIDTH"
    echo "- Recorded archive sha256: $(sha256sum "$out/out/snapshot.tar.gz" | cut -d' ' -f1) (the snapshot.tar.gz \`record\` wrote, stored here as snapshot.txtar by lab/totxtar)"
    echo
    echo "## Scenario (lab/scenarios/$s.sh)"
    echo
    sed -n '/^#/{s/^# \{0,1\}//;p;b};q' "$LAB/scenarios/$s.sh"
    echo
    echo "## What the lab did, in order (guest /out/lab/steps.log)"
    echo
    echo '```'
    cat "$out/out/lab/steps.log"
    echo '```'
  } >"$dest/$s/README.md"
  # The text archive's comment carries the README just written.
  (cd "$REPO" && ${GO:-go} run ./lab/totxtar -scenario "$s" -readme "$dest/$s/README.md" \
    -o "$dest/$s/snapshot.txtar" "$out/out/snapshot.tar.gz")
  rm -f "$dest/$s/snapshot.tar.gz"
  echo "fixtures.sh: $dest/$s/snapshot.txtar"
done
