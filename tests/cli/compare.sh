#!/usr/bin/env bash
# attain compare: two files, one file with two backends, errors.
source "$(dirname "$0")/lib.sh"
"$ATTAIN" bench --op gemm:m=2,n=64,k=96,dtype=fp32 --op gemm:m=33,n=17,k=40,dtype=fp32 --op batched_gemm:batch=3,m=4,n=8,k=16,dtype=fp32 --backend openblas,reference --max-seconds 0.01 --threads 1 --out "$TMP/a.json" >/dev/null
"$ATTAIN" compare "$TMP/a.json" --backend-a openblas --backend-b reference > "$TMP/c.txt"
grep -q "of B's speed" "$TMP/c.txt" || fail "compare output"
"$ATTAIN" compare "$TMP/a.json" "$TMP/a.json" --backend-a openblas --backend-b reference --json > "$TMP/c.json"
python3 - "$TMP/c.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ops"] >= 1
assert d["speed_a_over_b"]["geomean"] > 0
assert d["wins_a"] + d["wins_b"] <= d["ops"]
# By dtype and kind, every matched op counted once per grouping; nothing unmatched here.
assert sum(v["ops"] for g, v in d["by"].items() if g.startswith("kind=")) == d["ops"], d["by"]
assert d["by"]["dtype=fp32"]["ops"] == d["ops"] and d["only_a"] == [] and d["only_b"] == []
PY
# An op only one side ran is listed, not silently dropped.
"$ATTAIN" bench --op gemm:m=2,n=64,k=96,dtype=fp32 --op gemm:m=5,n=8,k=8,dtype=fp32 \
  --backend reference --max-seconds 0.01 --threads 1 --out "$TMP/b.json" > /dev/null
"$ATTAIN" compare "$TMP/a.json" "$TMP/b.json" --backend-a openblas > "$TMP/u.txt"
grep -q "ran only in A" "$TMP/u.txt" && grep -q "ran only in B" "$TMP/u.txt" \
  && grep -q "gemm:m=5,n=8,k=8,dtype=fp32" "$TMP/u.txt" || fail "unmatched ops: $(cat "$TMP/u.txt")"
echo '{"schema": "attain.results/9", "results": []}' > "$TMP/v9.json"
expect_error 2 "not supported" -- "$ATTAIN" compare "$TMP/v9.json" "$TMP/a.json"
head -c 100 "$TMP/a.json" > "$TMP/trunc.json"
expect_error 2 "not valid JSON" -- "$ATTAIN" compare "$TMP/trunc.json" "$TMP/a.json"
expect_error 2 "has no results of backend" -- "$ATTAIN" compare "$TMP/a.json" --backend-a nope
expect_error 2 "cannot read" -- "$ATTAIN" compare "$TMP/none.json" "$TMP/a.json"
echo "compare CLI: ok"
