#!/usr/bin/env bash
# attain moe without mpirun (1 rank): JSON fields and verification, bad input -> exit 2.
source "$(dirname "$0")/lib.sh"
ARGS=(moe --tokens 16 --hidden 256 --experts 4 --topk 2 --inter 16 --reps 2 --align 8 --backend reference)
for mode in normal low-latency; do
  "$ATTAIN" "${ARGS[@]}" --mode $mode --dtype fp8 --json --out "$TMP/m.json" > "$TMP/stdout.json" \
    || fail "moe $mode exited $?"
  [ "$(json_get "$TMP/m.json" 'd["verified"]')" = "True" ] || fail "$mode not verified"
  [ "$(json_get "$TMP/m.json" 'd["ranks"]')" = "1" ] || fail "$mode: ranks"
  python3 - "$TMP/stdout.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for op in ("dispatch", "combine"):
    for k in ("gbps", "latency_us", "bandwidth_fraction"):
        assert k in d[op], (op, k)
    assert d[op]["latency_us"] > 0
assert "hidden_fraction" in d["overlap"] and "gemm_slowdown" in d["contention"]
assert d["dtype"] == "fp8"
PY
done
"$ATTAIN" "${ARGS[@]}" --no-overlap --no-contention | grep -q "^verified   yes" || fail "text output"
"$ATTAIN" moe --help | grep -q -- "--mode" || fail "help"
expect_error 2 "top-k 6" -- "$ATTAIN" moe --experts 4 --topk 6
expect_error 2 "known: normal, low-latency" -- "$ATTAIN" moe --mode fast
expect_error 2 "known: bf16, fp8" -- "$ATTAIN" moe --dtype fp4
expect_error 2 "no routed experts" -- "$ATTAIN" moe --model llama-3.1-8b
expect_error 2 "n_group 3" -- "$ATTAIN" moe --experts 8 --n-group 3
expect_error 2 "timeout" -- "$ATTAIN" moe --timeout 0
echo "moe CLI: ok"
