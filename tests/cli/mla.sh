#!/usr/bin/env bash
# attain mla: the kernel and both baselines verified and timed; JSON fields; bad input.
source "$(dirname "$0")/lib.sh"
"$ATTAIN" mla --help | grep -q -- "--varlen" || fail "mla --help lacks --varlen"
"$ATTAIN" mla --batch 3 --seqlen 130 --heads 4 --s-q 2 --varlen --dtype fp8 --threads 2 \
  --max-seconds 0.01 --min-reps 2 --json --out "$TMP/m.json" > "$TMP/stdout.json"
cmp -s "$TMP/m.json" "$TMP/stdout.json" || fail "--out and --json differ"
python3 - "$TMP/m.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["op"] == "mla_decode:b=3,s=130,h=4,dtype=fp8,s_q=2", d["op"]
assert d["varlen"] is True and d["threads"] == 2
vs = {r["variant"]: r for r in d["results"]}
assert set(vs) == {"attain", "separate_kv", "naive"}, vs.keys()
for r in vs.values():
    for k in ["variant", "gbps", "tflops", "efficiency", "median_s", "verified"]:
        assert k in r, (k, r)
    assert r["verified"] is True, r
    assert r["median_s"] > 0 and r["gbps"] > 0 and r["tflops"] > 0, r
    assert r["efficiency"] is None or r["efficiency"] > 0, r
for k in ["speedup_vs_separate_kv", "speedup_vs_naive"]:
    assert d[k] > 0, k
assert abs(d["speedup_vs_naive"] - vs["naive"]["median_s"] / vs["attain"]["median_s"]) < 1e-9
PY
# The table: every variant, the speedups, what was counted.
"$ATTAIN" mla --batch 2 --seqlen 64 --heads 3 --dtype fp32 --threads 1 --max-seconds 0.01 --min-reps 2 --hot > "$TMP/t"
for w in attain separate_kv naive "attain vs separate_kv" "attain vs naive" "bytes:"; do
  grep -q "$w" "$TMP/t" || fail "table lacks '$w'"
done
grep -q "hot cache" "$TMP/t" || fail "table does not say the cache was hot"
# One variant only: no speedups.
"$ATTAIN" mla --batch 1 --seqlen 10 --heads 2 --variants attain --max-seconds 0.01 --min-reps 2 --hot --json > "$TMP/a.json"
json_get "$TMP/a.json" 'd["speedup_vs_naive"] is None and len(d["results"]) == 1' | grep -q True || fail "attain-only run"
expect_error 2 "not supported" -- "$ATTAIN" mla --batch 1 --seqlen 64 --heads 1 --dtype fp16
expect_error 2 "must be positive" -- "$ATTAIN" mla --batch 0 --seqlen 64 --heads 1
expect_error 2 "unknown variant 'fast'" -- "$ATTAIN" mla --batch 1 --seqlen 64 --heads 1 --variants attain,fast
expect_error 2 "must not exceed" -- "$ATTAIN" mla --batch 1 --seqlen 4 --heads 1 --s-q 5
echo "mla CLI: ok"
