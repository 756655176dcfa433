#!/usr/bin/env bash
# make captures: every fixtures/captures/<name>/ (text a public report quotes from a real
# machine) becomes fixtures/sysfs/real-<name>/: lab/fromcapture lays the text out as a root tree,
# `rdmadiag record --root` records it as any tree would be, and lab/totxtar stores the recording
# as text. The README says where the capture comes from and lists every value filled in.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${RDMADIAG:-bin/rdmadiag}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for d in fixtures/captures/*/; do names+=("$(basename "$d")"); done
fi
go build -o "$work/fromcapture" ./lab/fromcapture
for n in "${names[@]}"; do
  cap=fixtures/captures/$n
  out=fixtures/sysfs/real-$n
  echo ">> $cap -> $out"
  mkdir -p "$out"
  filled=$("$work/fromcapture" -o "$work/$n" "$cap")
  {
    cat "$cap/capture.md"
    echo
    echo "Made with \`make captures\` (lab/captures.sh): lab/fromcapture laid the capture's text out as a"
    echo "root tree ($(cd "$cap" && ls | grep -v '^capture.md$' | paste -sd' ' -)), which \`rdmadiag record --root\` recorded."
    echo "Filled in, because the capture does not hold it:"
    echo "$filled"
  } > "$out/README.md"
  rc=0
  "$bin" record --root "$work/$n" --description "real capture $n (fixtures/captures/$n)" -o "$work/$n.tar.gz" >/dev/null || rc=$?
  if [ "$rc" -ne 0 ]; then echo "record exited $rc" >&2; exit 1; fi
  go run ./lab/totxtar -head "Built from a public capture of a real machine (fixtures/captures/$n), recorded from the tree made of it." \
    -readme "$out/README.md" -o "$out/snapshot.txtar" "$work/$n.tar.gz"
done
