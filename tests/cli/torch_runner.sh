#!/usr/bin/env bash
# scripts/torch_runner.py on the CPU device: a 7-op suite exported by attain catalog, every op
# verified or declined with its reason, FLOPs and bytes counted as attain counts them, the file
# valid against its schema, matched op for op by attain compare, resumed from a partial file.
# With PyTorch installed it runs the real one; without, tests/torch_shim (a pure-Python stand-in
# with no float8 type, so the fp8 op is declined).
source "$(dirname "$0")/lib.sh"
RUNNER=("$ROOT/scripts/torch_runner.py")
if ! python3 -c "import torch" 2> /dev/null; then
  export PYTHONPATH="$ROOT/tests/torch_shim${PYTHONPATH:+:$PYTHONPATH}"
  SHIM=1
fi
OPS=(--op gemm:m=3,n=17,k=33,dtype=fp32 --op gemm:m=2,n=24,k=16,dtype=bf16
     --op batched_gemm:batch=2,m=2,n=5,k=8,dtype=fp16
     --op grouped_gemm:groups=3,m=2,n=4,k=8,dtype=bf16,skew=1,layout=masked
     --op grouped_gemm:groups=2,m=2,n=4,k=9,dtype=fp32
     --op mla_decode:b=1,s=20,h=2,dtype=bf16,s_q=2
     --op gemm:m=2,n=8,k=128,dtype=fp8)
"$ATTAIN" catalog "${OPS[@]}" --json --out "$TMP/suite.json" > /dev/null
"$ATTAIN" catalog "${OPS[@]:0:4}" --json --out "$TMP/first.json" > /dev/null
ARGS=(--device cpu --max-seconds 0.01 --min-reps 2 --flush-bytes 4096 --device-id h100-sxm)
python3 "${RUNNER[@]}" --help | grep -q -- "--device-id" || fail "--help"

# Four ops first, then --resume with the whole suite finishes the same file.
python3 "${RUNNER[@]}" "$TMP/first.json" "${ARGS[@]}" --out "$TMP/t.json" 2> "$TMP/log1"
python3 "${RUNNER[@]}" "$TMP/suite.json" "${ARGS[@]}" --out "$TMP/t.json" --resume \
  2> "$TMP/log2" && rc=0 || rc=$?
[ "$rc" -eq 0 ] || fail "runner exited $rc: $(cat "$TMP/log2")"
python3 - "$TMP/t.json" "$TMP/suite.json" "${SHIM:-0}" <<'PY'
import json, sys
d, suite, shim = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3] == "1"
assert d["schema"] == "attain.results/1" and "complete" not in d, d.get("progress")
rs = d["results"]
assert [r["op"]["spec"] for r in rs] == [o["spec"] for o in suite], "the suite's order"
for r, o in zip(rs, suite):
    assert r["backend"] == "torch:cpu", r["backend"]
    # FLOPs and bytes as attain counts them (catalog --json carries attain's own figures).
    assert abs(r["flops"] - o["flops"]) <= 1e-9 * o["flops"], (r["op"]["spec"], r["flops"], o["flops"])
    assert abs(r["bytes"] - o["bytes"]) <= 1e-9 * o["bytes"], (r["op"]["spec"], r["bytes"], o["bytes"])
    if r["status"] != "ok":  # fp8 without float8; fp16 on a CPU torch without its matmul
        assert r["op"]["dtype"] in ("fp8", "fp16") and r["status"] == "unsupported" and r["reason"], r
        continue
    assert r["verified"] and r["median_s"] > 0 and r["reps"] >= 2, r
ok = [r for r in rs if r["status"] == "ok"]
assert {r["op"]["dtype"] for r in ok} >= {"fp32", "bf16"} and len(ok) >= 5, \
    [(r["op"]["spec"], r["status"], r.get("reason")) for r in rs]
if shim:
    assert rs[-1]["status"] == "unsupported" and "float8" in rs[-1]["reason"], rs[-1]
assert d["machine"]["device"] == "h100-sxm" and ok[0]["efficiency"] > 0, d["machine"]
assert ok[0]["efficiency"] == ok[0]["tflops"] / ok[0]["attainable_tflops"]
PY
grep -q "4/7 ops" "$TMP/log2" || fail "progress from the resumed point: $(cat "$TMP/log2")"
grep -q "7 of 7 ops" "$TMP/log2" || fail "summary line: $(cat "$TMP/log2")"
PY_=python3
python3 -c "import jsonschema" 2> /dev/null || PY_=/usr/bin/python3
"$PY_" "$ROOT/scripts/check-schemas.py" "$TMP/t.json" > /dev/null || fail "schema"

# attain reads it: every ok op matched against attain's own results of the same suite.
"$ATTAIN" bench "${OPS[@]}" --backend attain --threads 1 --max-seconds 0.01 --no-recheck \
  --out "$TMP/attain.json" > /dev/null
"$ATTAIN" compare "$TMP/attain.json" "$TMP/t.json" --json > "$TMP/c.json"
n_ok=$(json_get "$TMP/t.json" 'sum(r["status"] == "ok" for r in d["results"])')
n_att=$(json_get "$TMP/attain.json" 'sum(r["status"] == "ok" for r in d["results"])')
[ "$(json_get "$TMP/c.json" 'd["ops"]')" -eq "$(( n_ok < n_att ? n_ok : n_att ))" ] \
  || fail "compare matched $(json_get "$TMP/c.json" 'd["ops"]') ops of $n_ok"
"$ATTAIN" report "$TMP/t.json" -o "$TMP/t.html" > /dev/null || fail "report of the runner's file"

# Refusals: other settings on resume, a device this torch lacks, a suite without specs.
! python3 "${RUNNER[@]}" "$TMP/suite.json" "${ARGS[@]}" --seed 7 --out "$TMP/t.json" --resume \
  2> "$TMP/err" || fail "resume with another seed ran"
grep -q "seed" "$TMP/err" || fail "the refusal does not name the setting: $(cat "$TMP/err")"
if [ -n "${SHIM:-}" ]; then
  ! python3 "${RUNNER[@]}" "$TMP/suite.json" --device cuda --out "$TMP/g.json" 2> "$TMP/err" \
    || fail "a missing device ran"
  grep -q "^--device cuda" "$TMP/err" || fail "device error: $(cat "$TMP/err")"
fi
# A kernel the stack lacks (torch 1.13's CPU has no fp16 matmul) is unsupported, with its reason.
if [ -n "${SHIM:-}" ]; then
  ATTAIN_SHIM_NO_FP16=1 python3 "${RUNNER[@]}" "$TMP/suite.json" "${ARGS[@]}" --out "$TMP/h.json" 2> /dev/null ||
    fail "a missing fp16 kernel failed the run"
  python3 - "$TMP/h.json" <<'PY'
import json, sys
r = next(r for r in json.load(open(sys.argv[1]))["results"] if r["op"]["dtype"] == "fp16")
assert r["status"] == "unsupported" and "not implemented for 'Half'" in r["reason"], r
PY
fi
printf 'm,n,k\n1,2,3\n' > "$TMP/nospec.csv"
! python3 "${RUNNER[@]}" "$TMP/nospec.csv" --out "$TMP/n.json" 2> "$TMP/err" || fail "no spec ran"
grep -q "spec" "$TMP/err" || fail "no-spec error: $(cat "$TMP/err")"
echo "torch runner: ok"
