#!/usr/bin/env bash
# attain cluster, end to end: $1 = the attain binary, $2 = the repository root.
set -euo pipefail
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Until the device database holds h100-sxm, run against a copy of data/ with a stand-in entry
# (the datasheet numbers the unit tests use).
if [ ! -f "$root/data/devices/h100-sxm.json" ]; then
  mkdir -p "$tmp/data/devices"
  for d in "$root"/data/*; do [ "$(basename "$d")" = devices ] || ln -s "$d" "$tmp/data/"; done
  [ -d "$root/data/devices" ] && for f in "$root"/data/devices/*.json; do [ -e "$f" ] && ln -s "$f" "$tmp/data/devices/"; done
  cat > "$tmp/data/devices/h100-sxm.json" <<'EOF'
{"id": "h100-sxm", "name": "H100 SXM5 80GB (test stand-in)", "vendor": "NVIDIA", "kind": "gpu",
 "peak_tflops": {"bf16": 989, "fp8": 1979}, "mem_bandwidth_gbps": 3350, "mem_capacity_gb": 80,
 "interconnect": {"name": "NVLink 4", "gbps": 450},
 "sources": {"peak_tflops.bf16": "NVIDIA H100 datasheet (dense)", "peak_tflops.fp8": "NVIDIA H100 datasheet (dense)",
             "mem_bandwidth_gbps": "NVIDIA H100 datasheet", "mem_capacity_gb": "NVIDIA H100 datasheet",
             "interconnect": "NVIDIA H100 datasheet: 900 GB/s bidirectional"}}
EOF
  export ATTAIN_DATA_DIR="$tmp/data"
fi

# The default scenario is Llama 3 405B pre-training (16,384 H100s, 54 days, table llama3).
"$bin" cluster --runs 8 --seed 3 --json --out "$tmp/llama3.json" > "$tmp/stdout.json"
cmp -s "$tmp/llama3.json" "$tmp/stdout.json" || fail "--out and stdout differ"
python3 - "$tmp/llama3.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "attain.cluster/1", j["schema"]
i = j["interruptions"]
assert abs(i["unexpected"] - 419) <= 0.1 * 419, i["unexpected"]
assert abs(i["planned"] - 47) <= 0.25 * 47, i["planned"]
assert set(i["by_cause"]) >= {"Faulty GPU", "GPU HBM3 Memory", "Software Bug", "Network Switch/Cable"}
assert abs(sum(i["by_cause"].values()) - i["unexpected"]) < 1e-6
assert 0.9 < j["ettr"] < 1, j["ettr"]
assert 0 < j["goodput"] <= j["mfu"] < 1, (j["goodput"], j["mfu"])
assert j["optimal_checkpoint_interval_min"] > 0
lo, hi = j["stats"]["ettr"]["ci95"]
assert lo <= j["ettr"] <= hi
assert j["published"]["unexpected"] == 419 and j["published"]["planned"] == 47
assert len(j["timeline"]) > 300 and all(a["t_h"] <= b["t_h"] for a, b in zip(j["timeline"], j["timeline"][1:]))
assert j["step"]["tp"] == 8 and j["step"]["pp"] == 16 and j["step"]["dp"] == 128
EOF

# Text output names the published record and the by-cause table.
"$bin" cluster --runs 2 > "$tmp/text.txt"
grep -q "published 148" "$tmp/text.txt" || fail "text output lacks the published counts"
grep -q "^ETTR" "$tmp/text.txt" || fail "text output lacks ETTR"

# A token budget gives the wall time to train it; a fixed interval is used as given.
"$bin" cluster --model llama-3.1-8b --chips 1024 --tokens 1e11 --failures meta-rsc1 --checkpoint sync \
  --checkpoint-interval 30 --runs 4 --json --no-timeline > "$tmp/budget.json"
python3 - "$tmp/budget.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["wall_days_to_budget"] > 0, j["wall_days_to_budget"]
assert abs(j["checkpoint"]["interval_min"] - 30) < 1e-9
assert "timeline" not in j
assert abs(j["tokens"] - 1e11) / 1e11 < 0.01, j["tokens"]
EOF

# Same seed, same answer; a different seed, a different run.
a=$("$bin" cluster --runs 3 --seed 5 --json --no-timeline --threads 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["ettr"])')
b=$("$bin" cluster --runs 3 --seed 5 --json --no-timeline | python3 -c 'import json,sys; print(json.load(sys.stdin)["ettr"])')
[ "$a" = "$b" ] || fail "seeded runs differ: $a vs $b"

# Sweep: goodput falls with scale; spares and Daly's interval buy some of it back.
"$bin" cluster --sweep 1000,10000,100000 --days 20 --runs 3 --json > "$tmp/sweep.json"
python3 - "$tmp/sweep.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "attain.cluster-sweep/1"
p = j["points"]
assert [x["chips"] for x in p] == [1000, 10000, 100000], [x["chips"] for x in p]
assert [x["step"]["chips_used"] for x in p] == [896, 9984, 99968], [x["step"] for x in p]
g = [x["variants"]["daly_spares"]["goodput"] for x in p]
assert g[0] > g[1] > g[2], g
for x in p:
    v = x["variants"]
    assert v["daly_spares"]["ettr"] >= v["daly"]["ettr"] - 0.01
assert p[2]["variants"]["daly_spares"]["ettr"] > p[2]["variants"]["fixed"]["ettr"] + 0.2
EOF

# The efficiency can come from measured results (attain bench --out): their geometric mean.
cat > "$tmp/results.json" <<'EOF'
{"attain_version": "0.1.0", "command": "attain bench (test fixture)", "config": {"backends": ["reference"], "bytes_model": "inputs read once + outputs written once, stored dtypes", "flops_model": "2*M*N*K per GEMM (grouped: summed; mla: QK^T + PV)", "hot": false, "max_seconds": 0.02, "schedule": "default", "seed": 42, "stages": 2, "timing": "median of repeats after warm-up; cold cache by input rotation or LLC flush"}, "created": "2026-11-30T08:31:20Z", "machine": {"ceilings_used": {"bandwidth_gbps": 8.787455933283866, "peak_tflops": 0.06285792856810145, "source": "probe (2 threads, fp32 avx512f FMA, streaming read)"}, "cores": 2, "cpu_model": "AMD EPYC", "device": "host", "libraries": {"reference": "attain reference (fp64 loops)"}, "probe": {"copy_gbps_1t": 9.68959091684018, "copy_gbps_all": 8.91057167650801, "cores": 2, "cpu_model": "AMD EPYC", "fma_gflops_1t": 62.07315661115924, "fma_gflops_all": 62.85792856810144, "isa": {"amx": false, "avx2": true, "avx512_bf16": true, "avx512bw": true, "avx512f": true, "f16c": true, "fma": true}, "l1d_bytes": 49152, "l2_bytes": 1048576, "l3_bytes": 532676608, "measured_at": "2026-11-30T08:08:44Z", "read_gbps_1t": 8.294448064760948, "read_gbps_all": 8.787455933283866}, "threads": 2}, "results": [{"attainable_tflops": 0.06285792856810145, "backend": "attain", "bytes": 196608.0, "efficiency": 0.5, "error": 2.5205421672636766e-08, "flops": 4194304.0, "gbps": 0.021203331785747216, "iqr_s": 0.008094654, "median_s": 0.009272505, "min_s": 0.00116697, "op": {"context": 0, "count": 1, "dtype": "fp32", "kind": "gemm", "layer": "", "model": "", "phase": "", "spec": "gemm:m=128,n=128,k=128,dtype=fp32", "tokens": 0}, "reps": 5, "status": "ok", "tflops": 0.0004523377447626073, "verified": true}, {"attainable_tflops": 0.06285792856810145, "backend": "attain", "bytes": 196608.0, "efficiency": 0.72, "error": 2.5205421672636766e-08, "flops": 4194304.0, "gbps": 0.021203331785747216, "iqr_s": 0.008094654, "median_s": 0.009272505, "min_s": 0.00116697, "op": {"context": 0, "count": 1, "dtype": "fp32", "kind": "gemm", "layer": "", "model": "", "phase": "", "spec": "gemm:m=128,n=128,k=128,dtype=fp32", "tokens": 0}, "reps": 5, "status": "ok", "tflops": 0.0004523377447626073, "verified": true}, {"attainable_tflops": 0.06285792856810145, "backend": "attain", "bytes": 196608.0, "efficiency": 0.99, "error": 2.5205421672636766e-08, "flops": 4194304.0, "gbps": 0.021203331785747216, "iqr_s": 0.008094654, "median_s": 0.009272505, "min_s": 0.00116697, "op": {"context": 0, "count": 1, "dtype": "fp32", "kind": "gemm", "layer": "", "model": "", "phase": "", "spec": "gemm:m=128,n=128,k=128,dtype=fp32", "tokens": 0}, "reps": 5, "status": "ok", "tflops": 0.0004523377447626073, "verified": false}], "schema": "attain.results/1"}
EOF
"$bin" cluster --runs 2 --efficiency-from "$tmp/results.json" --json --no-timeline > "$tmp/eff.json"
python3 - "$tmp/eff.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
assert abs(j["inputs"]["efficiency"] - 0.6) < 1e-9 and j["inputs"]["efficiency_ops"] == 2, j["inputs"]
EOF

# Without --efficiency the chip's device file sets it where a training run sizes it (H100), and
# the default 0.7 holds elsewhere; the text says which.
"$bin" cluster --runs 1 --days 1 > "$tmp/h100.txt"
grep -q "efficiency 0.57, h100-sxm in training, from its device file" "$tmp/h100.txt" ||
  fail "H100 efficiency source: $(grep MFU "$tmp/h100.txt")"
"$bin" cluster --runs 1 --days 1 --device b200 > "$tmp/b200.txt"
grep -q "efficiency 0.7, default: no training run sizes b200" "$tmp/b200.txt" ||
  fail "default efficiency source: $(grep MFU "$tmp/b200.txt")"
"$bin" cluster --runs 1 --days 1 --efficiency 0.5 > "$tmp/given.txt"
grep -q "efficiency 0.5, given" "$tmp/given.txt" || fail "given efficiency: $(grep MFU "$tmp/given.txt")"
# Pods with an oversubscribed tier between them slow the DP reduction, and the file says so.
"$bin" cluster --runs 1 --days 1 --json --no-timeline > "$tmp/flat.json"
"$bin" cluster --runs 1 --days 1 --pod-chips 3072 --oversubscription 7 --json --no-timeline > "$tmp/pods.json"
python3 - "$tmp/flat.json" "$tmp/pods.json" <<'EOF'
import json, sys
flat, pods = (json.load(open(f)) for f in sys.argv[1:3])
assert pods["inputs"]["pod_chips"] == 3072 and pods["inputs"]["oversubscription"] == 7, pods["inputs"]
assert pods["step"]["dp_comm_s"] > flat["step"]["dp_comm_s"], (pods["step"], flat["step"])
EOF

# Bad input: exit 2 with a clear message.
expect_input_error() {
  local msg=$1; shift
  set +e
  "$bin" cluster "$@" > /dev/null 2> "$tmp/err"
  local rc=$?
  set -e
  [ $rc -eq 2 ] || fail "cluster $* exited $rc, expected 2"
  grep -q "$msg" "$tmp/err" || fail "cluster $*: message lacks '$msg': $(cat "$tmp/err")"
}
expect_input_error "unknown failure table" --failures nosuch
expect_input_error "fewer than one TP 8 x PP 16 group (128 chips)" --chips 100 --pp 16
expect_input_error "checkpoint" --checkpoint sometimes
expect_input_error "checkpoint-interval" --checkpoint-interval soon
expect_input_error "unknown model" --model nosuch
expect_input_error "runs" --runs 0
expect_input_error "efficiency 0 must be positive" --efficiency 0
expect_input_error "oversubscription must be 1 (none) or more" --oversubscription 0.5
expect_input_error "chips per pod must be 0" --pod-chips -1
expect_input_error "efficiency must be in (0, 1]" --efficiency 1.5
expect_input_error "no verified, measured result" --efficiency-from "$tmp/results.json" --efficiency-backend blis
# The published counts are one run's: they fall inside the spread of single simulated runs.
"$bin" cluster --runs 16 > "$tmp/llama3.txt"
grep -q "one run: unexpected .* (95% of single runs); the published 419 is inside and 47 inside" "$tmp/llama3.txt" ||
  fail "published counts against single runs: $(grep -A1 '^interruptions' "$tmp/llama3.txt")"

# Any chip count: the largest DP that fits trains, the rest is said; the batch stays as given.
"$bin" cluster --chips 100000 --days 60 --runs 16 --json --out "$tmp/100k.json" > /dev/null
"$bin" cluster --chips 100000 --days 60 --runs 2 > "$tmp/100k.txt"
grep -q "^chips       99968 of 100000 train; 32 in no whole group: 4 node(s) of them join the hot spares, 0 chip(s) idle" "$tmp/100k.txt" ||
  fail "100,000 chips: leftover not said: $(cat "$tmp/100k.txt")"
grep -q "^batch       2048 sequences as given, over DP 781" "$tmp/100k.txt" || fail "100,000 chips: batch not said"
python3 - "$tmp/100k.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
st, inp = d["step"], d["inputs"]
assert st["global_batch"] == 2048 and st["chips_used"] == 99968 and st["chips_left"] == 32, st
assert inp["chips"] == 100000 and inp["spare_nodes"] >= 4, inp
PY
"$bin" cluster --chips 100000 --runs 1 --days 1 --scale-batch --json |
  python3 -c "import json,sys; s=json.load(sys.stdin)['step']; assert s['global_batch'] == 2343, s"

# A chip whose bf16 peak is not published: refused with the reason, run with a labelled assumption.
expect_input_error "has no bf16 peak: not published" --device ascend-950pr
expect_input_error "an assumption only fills a gap" --assume-peak bf16=500
"$bin" cluster --device ascend-950pr --assume-peak bf16=fp8/2 --runs 1 --days 1 > "$tmp/assumed.txt"
grep -q "^peak        500 TFLOP/s bf16: ASSUMED (--assume-peak bf16=fp8/2)" "$tmp/assumed.txt" ||
  fail "cluster does not label the assumed peak: $(head -3 "$tmp/assumed.txt")"
# Per-op efficiencies from results measured on a chip (here imported): each op of the step takes
# the efficiency of the nearest measured op of its kind, and the text lists them.
printf 'm,n,k,dtype,tflops\n8192,2304,16384,bf16,700\n8192,13312,16384,bf16,760\n' > "$tmp/gemms.csv"
"$bin" import "$tmp/gemms.csv" --device h100-sxm --backend cublas -o "$tmp/imported.json" > /dev/null
"$bin" cluster --runs 1 --days 1 --efficiency-from "$tmp/imported.json" --json --no-timeline > "$tmp/perop.json"
"$bin" cluster --runs 1 --days 1 --efficiency-from "$tmp/imported.json" > "$tmp/perop.txt"
python3 - "$tmp/perop.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))["step"]
ops = {o["op"]: o for o in st["ops"]}
qkv = ops["gemm:m=8192,n=2304,k=16384,dtype=bf16"]
assert abs(qkv["efficiency"] - 700 / 989.4) < 1e-3 and qkv["distance"] == 0, qkv
assert st["ops_measured"] == 5, st["ops_measured"]  # the GEMMs; attention has no batched GEMM measured
attn = [o for o in st["ops"] if o["op"].startswith("batched_gemm")]
assert attn and all(o["measured"] is None for o in attn), attn
assert abs(sum(o["fwd_s"] for o in st["ops"]) - st["fwd_s"]) < 1e-9 * st["fwd_s"]
PY
grep -q "per op (5 of 7 from the nearest measured op" "$tmp/perop.txt" || fail "per-op lines: $(cat "$tmp/perop.txt")"

# Context parallelism: Llama 3's long-context layout (Table 4: TP 8, CP 16, PP 16, DP 8).
"$bin" cluster --runs 1 --days 1 --cp 16 --seq 131072 --batch 128 --json --no-timeline |
  python3 -c "import json,sys; s=json.load(sys.stdin)['step']; assert (s['cp'], s['dp'], s['micro_batches']) == (16, 8, 16) and s['cp_comm_s'] > 0, s"
"$bin" cluster --runs 1 --days 1 --cp 16 --seq 131072 --batch 128 | grep -q "^step        TP 8 x CP 16 x PP 16" ||
  fail "CP not in the step line"
expect_input_error "cp 0 must be 1 or more" --cp 0

# Planning to a target: the fewest hot spares that reach it, for one job and across scales.
"$bin" cluster --runs 4 --target-ettr 0.92 --json --no-timeline > "$tmp/target.json"
python3 - "$tmp/target.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["target"]
assert t["metric"] == "ETTR" and t["reached"] and t["ettr"]["mean"] >= 0.92 and t["spare_nodes"] >= 0, t
PY
"$bin" cluster --runs 4 --target-ettr 0.92 | grep -q "^target      ETTR 92.0%: [0-9]* hot-spare node" ||
  fail "target line missing"
"$bin" cluster --sweep 1000,20000 --runs 2 --target-goodput 0.4 > "$tmp/tsweep.txt"
grep -q "spares for goodput 40.0%" "$tmp/tsweep.txt" || fail "sweep target column: $(cat "$tmp/tsweep.txt")"
# At Llama 3's scale the restarts alone keep ETTR under 95%: said, with the best spares give.
"$bin" cluster --runs 4 --target-ettr 0.95 | grep -q "^target      ETTR 95.0% is out of reach by hot spares" ||
  fail "an unreachable target not said"
expect_input_error "not a fraction" --target-ettr 1.5
expect_input_error "not both" --target-ettr 0.9 --target-goodput 0.5
echo "cluster CLI: ok"
