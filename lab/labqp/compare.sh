#!/usr/bin/env bash
# compare.sh [N]: in one lab run (QEMU guest, Debian 12 kernel 6.1, rxe0), hold N QPs (default
# 20000) with labqp and time `rdmadiag check --only qp,cq` against `rdma res show qp -j` on the
# same kernel, interleaved, 7 runs each; print the ratios (median wall time, peak RSS).
# Uses the lab's payload hook only (lab/vm.sh -f ... -- PAYLOAD); it edits nothing under lab/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
n=${1:-20000}
out=${OUT:-/tmp/lab-qp-compare}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
CGO_ENABLED=0 go build -o "$bin/labqp" ./lab/labqp
CGO_ENABLED=0 go build -o "$bin/rdmadiag" ./cmd/rdmadiag
LAB_QUIET=1 LAB_MEM=${LAB_MEM:-3072} LAB_TIMEOUT=${LAB_TIMEOUT:-900} \
	lab/vm.sh -s healthy -o "$out" -f "$bin/labqp" -f "$bin/rdmadiag" -f lab/labqp/guest.sh -- guest.sh big "$n" >&2
python3 - "$out/out/compare.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
b, m = d["baseline"], d["measured"]
print(f'{b["command"]}: median {b["median_wall_ms"]:.0f} ms, peak RSS {b["max_rss_kib"]} KiB')
print(f'{m["command"]}: median {m["median_wall_ms"]:.0f} ms, peak RSS {m["max_rss_kib"]} KiB')
print(f'ratio rdmadiag/iproute2: wall {d["wall_ratio"]:.2f}, peak RSS {d["maxrss_ratio"]:.2f}')
PY
