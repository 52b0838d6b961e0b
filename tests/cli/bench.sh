#!/usr/bin/env bash
# attain bench: one op, a shape, a small sample; results schema; errors.
source "$(dirname "$0")/lib.sh"
"$ATTAIN" bench --list | grep -q "^reference" || fail "bench --list"
"$ATTAIN" bench --op gemm:m=3,n=40,k=70,dtype=fp32 --backend reference,openblas --max-seconds 0.01 --out "$TMP/r.json" > "$TMP/table"
grep -q "gemm:m=3,n=40,k=70,dtype=fp32" "$TMP/table" || fail "table lacks the op"
grep -q "Speed ratio" "$TMP/table" || fail "table lacks the speed ratio"
grep -q "while the ops ran" "$TMP/table" && fail "a run of one op checks the ceilings only with --recheck"
"$ATTAIN" bench --op gemm:m=3,n=40,k=70,dtype=fp32 --backend reference --max-seconds 0.01 2>&1 >/dev/null \
  | grep -q "fewer than 8 ops do not measure the ceilings again" || fail "a short run says it skips the re-check"
# --recheck: the ceilings measured before the first op and after the last, in the table and the file.
"$ATTAIN" bench --op gemm:m=3,n=40,k=70,dtype=fp32 --backend reference --max-seconds 0.01 --threads 1 \
  --recheck --out "$TMP/rc.json" > "$TMP/rc.table" 2>/dev/null
grep -q "the best known at the end of the run" "$TMP/rc.table" || fail "--recheck table"
python3 - "$TMP/rc.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["machine"]["checks"]
assert [x["when"] for x in c] == ["start", "end"], c
for x in c:
    assert x["threads"] == 1 and x["fma_gflops"] > 0 and x["read_gbps"] > 0 and x["at"], x
PY
expect_error 2 "contradict" -- "$ATTAIN" bench --shape 2x2x2 --recheck --no-recheck
python3 - "$TMP/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "attain.results/1"
m = d["machine"]
for k in ["cpu_model", "cores", "threads", "ceilings_used", "libraries"]:
    assert k in m, k
assert len(d["results"]) == 2
for r in d["results"]:
    for k in ["op", "backend", "median_s", "min_s", "iqr_s", "reps", "flops", "bytes", "tflops", "gbps",
              "attainable_tflops", "efficiency", "verified", "error"]:
        assert k in r, k
    assert r["status"] == "ok" and r["verified"], r
    assert r["op"]["spec"] == "gemm:m=3,n=40,k=70,dtype=fp32"
    assert 0 < r["efficiency"], r
PY
# Several specs after one --op (what a shell's brace expansion gives), and --op repeated.
"$ATTAIN" bench --op gemm:m=2,n=8,k=16,dtype={fp32,bf16} --op gemm:m=1,n=4,k=8,dtype=fp32 \
  --backend reference --max-seconds 0.01 --json > "$TMP/multi.json"
json_get "$TMP/multi.json" 'len(d["results"])' | grep -q '^3$' || fail "three ops from two --op"
# bf16 on OpenBLAS is recorded as unsupported with a reason, never converted.
"$ATTAIN" bench --shape 2x16x32 --dtype bf16 --backend openblas,reference --max-seconds 0.01 --json > "$TMP/u.json"
python3 - "$TMP/u.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ob = [r for r in d["results"] if r["backend"] == "openblas"][0]
assert ob["status"] == "unsupported" and ob["reason"], ob
ref = [r for r in d["results"] if r["backend"] == "reference"][0]
assert ref["status"] == "ok" and ref["verified"], ref
assert "summary" in d
PY
"$ATTAIN" bench --suite quick --sample 4 --backend openblas --max-seconds 0.01 --threads 1 --json > "$TMP/s.json"
json_get "$TMP/s.json" 'len(d["results"])' | grep -q '^4$' || fail "sample of 4"
expect_error 2 "unknown backend 'nope'" -- "$ATTAIN" bench --shape 2x2x2 --backend nope
expect_error 2 "must be positive" -- "$ATTAIN" bench --shape 0x2x2
expect_error 2 "must be positive" -- "$ATTAIN" bench --op gemm:m=-1,n=2,k=2,dtype=fp32
expect_error 2 "too large" -- "$ATTAIN" bench --op gemm:m=2000000000,n=2000000000,k=8,dtype=fp32
expect_error 2 "unknown dtype" -- "$ATTAIN" bench --shape 2x2x2 --dtype fp9
expect_error 2 "--stages" -- "$ATTAIN" bench --shape 2x2x2 --stages 0
# --rounds: the whole list run again, one result per op and backend, the rounds recorded.
"$ATTAIN" bench --op gemm:m=2,n=8,k=16,dtype={fp32,bf16} --backend reference,attain --rounds 3 \
  --max-seconds 0.01 --no-recheck --json > "$TMP/rounds.json"
python3 - "$TMP/rounds.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["config"]["rounds"] == 3, d["config"]
rs = d["results"]
assert [(r["op"]["spec"].split(",")[-1], r["backend"]) for r in rs] == [
    ("dtype=fp32", "reference"), ("dtype=fp32", "attain"),
    ("dtype=bf16", "reference"), ("dtype=bf16", "attain")], rs
for r in rs:
    assert r["status"] == "ok" and r["verified"] and r["median_s"] > 0, r
PY
expect_error 2 "--rounds 0 must be 1..100" -- "$ATTAIN" bench --shape 2x2x2 --rounds 0
# An op larger than memory is refused before anything is allocated: alone, as bad input (exit
# 2); in a run of several ops, as an unsupported row that says why.
expect_error 2 "GiB of memory" -- "$ATTAIN" bench --op gemm:m=1000000,n=1000000,k=64,dtype=fp32 --backend reference,openblas
"$ATTAIN" bench --op gemm:m=1000000,n=1000000,k=64,dtype=fp32 gemm:m=1,n=8,k=64,dtype=fp32 \
  --backend reference,openblas --max-seconds 0.01 --no-recheck --json > "$TMP/big.json" 2>/dev/null
python3 - "$TMP/big.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
big = [r for r in d["results"] if r["op"]["spec"].startswith("gemm:m=1000000")]
assert len(big) == 2 and all(r["status"] == "unsupported" for r in big), big
ob = [r for r in big if r["backend"] == "openblas"][0]
assert "memory" in ob["reason"], ob
PY
# The GEMM table row that ran is in the attain backend's version; ATTAIN_GEMM_TABLE forces one
# and an unknown name is an error naming the rows.
ATTAIN_GEMM_TABLE=generic "$ATTAIN" bench --op gemm:m=3,n=5,k=7,dtype=fp32 --backend attain \
  --no-recheck --json > "$TMP/row.json"
grep -q '"attain [^"]*, generic table)"' "$TMP/row.json" || fail "the version names no table row"
expect_error 1 "expected one of zen5, zen4, generic" -- env ATTAIN_GEMM_TABLE=zen9 "$ATTAIN" \
  bench --op gemm:m=3,n=5,k=7,dtype=fp32 --backend attain --no-recheck
echo "bench CLI: ok"
