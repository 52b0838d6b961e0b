#!/usr/bin/env bash
# attain moe under mpirun with 2 ranks: JSON fields, verification, both modes and dtypes.
# $1 = attain binary, $2 = mpirun.
set -euo pipefail
ATTAIN=$1
MPIRUN=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export XDG_CACHE_HOME=${XDG_CACHE_HOME_FOR_TESTS:-$(dirname "$ATTAIN")/.test-cache}
fail() { echo "FAIL: $*" >&2; exit 1; }
for mode in normal low-latency; do
  for dt in bf16 fp8; do
    timeout 120 "$MPIRUN" -n 2 --oversubscribe "$ATTAIN" moe --tokens 32 --hidden 256 --experts 8 --topk 4 \
      --inter 32 --reps 2 --align 8 --mode $mode --dtype $dt --backend reference --json >"$TMP/m.json" \
      || fail "$mode $dt: exit $?"
    python3 - "$TMP/m.json" "$mode" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ranks"] == 2 and d["mode"] == sys.argv[2], d
assert d["verified"] is True, d["verification"]
for op in ("dispatch", "combine"):
    o = d[op]
    assert o["gbps"] > 0 and o["latency_us"] > 0 and o["bandwidth_fraction"] > 0 and o["bytes"] > 0, o
# A figure, in its range, or the reason it is not one (on so small a run, noise often wins).
hf, gs = d["overlap"]["hidden_fraction"], d["contention"]["gemm_slowdown"]
assert (hf is not None and 0 <= hf <= 1) or "overlap not measurable here" in d["skipped"], d
assert (gs is not None and gs >= 1) or "contention not measurable here" in d["skipped"], d
PY
  done
done
# The shm transport is refused across nodes only; rma works everywhere (here too).
timeout 120 "$MPIRUN" -n 2 --oversubscribe "$ATTAIN" moe --tokens 16 --hidden 128 --experts 4 --topk 2 --reps 1 \
  --transport rma --no-overlap --no-contention | grep -q "verified   yes" || fail "rma transport"
echo "moe CLI under mpirun: ok"
