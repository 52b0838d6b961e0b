#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU (made for one H200 call of a few minutes):
#   configure + build (Release) -> test_cuda (every CUDA kernel against the fp64 reference)
#   -> compute-sanitizer memcheck/racecheck on a few cases (when installed) -> attain probe
#   (GPU ceilings) -> attain bench, attain-cuda next to cublaslt, on decode GEMMs, MoE masked
#   GEMMs and MLA decode -> optionally a sample of llm-1055 -> one table.
#
#   scripts/gpu-check.sh [OUT_DIR]        default OUT_DIR: results/gpu-<UTC date-time>
#   env: BUILD (build-gpu), JOBS (nproc), MAX_SECONDS (0.1 per op and backend),
#        SUITE_SAMPLE (0 = skip llm-1055; N = a stratified sample of N ops), SUITE_TIMEOUT (s)
#
# Every step prints its wall time. A failing check is reported and the timing steps still
# run; the exit status is non-zero when any step failed. Nothing here invents a number: every
# figure in the table is read from the JSON files the steps wrote into OUT_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-results/gpu-$(date -u +%Y%m%d-%H%M)}
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-$(nproc)}
MAX_SECONDS=${MAX_SECONDS:-0.1}
SUITE_SAMPLE=${SUITE_SAMPLE:-0}
SUITE_TIMEOUT=${SUITE_TIMEOUT:-150}
mkdir -p "$OUT"
LOG="$OUT/gpu-check.log"
: > "$LOG"
FAILED=()
T_ALL=$(date +%s)

# step NAME CMD...: runs CMD with its output teed to the log; records a failure, never exits.
step() {
  local name=$1
  shift
  local t0
  t0=$(date +%s.%N)
  echo "=== $name: $*" | tee -a "$LOG"
  local rc=0
  "$@" 2>&1 | tee -a "$LOG" || rc=${PIPESTATUS[0]}
  local dt
  dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  if [ "$rc" -ne 0 ]; then
    FAILED+=("$name (exit $rc)")
    echo "=== $name: FAILED (exit $rc) after ${dt}s" | tee -a "$LOG"
  else
    echo "=== $name: ok, ${dt}s" | tee -a "$LOG"
  fi
  return 0
}

if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
    --format=csv > "$OUT/nvidia-smi.csv" 2>&1 || true
  cat "$OUT/nvidia-smi.csv"
fi

step configure cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DATTAIN_BUILD_BENCH=OFF
step build cmake --build "$BUILD" -j "$JOBS" --target attain_cli test_cuda
ATTAIN="$BUILD/attain"
if [ ! -x "$ATTAIN" ] || [ ! -x "$BUILD/tests/test_cuda" ]; then
  echo "build failed; nothing to run" | tee -a "$LOG"
  exit 1
fi

step test_cuda "$BUILD/tests/test_cuda" --gtest_output="json:$OUT/test_cuda.json"

if command -v compute-sanitizer > /dev/null; then
  SMALL='*CudaOps.*gemm_m_1_n_37*:*CudaOps.*grouped_gemm_groups_4_m_5*:*CudaOps.*mla_decode_b_2_s_100*:*CudaOps.*mla_decode_b_1_s_4096*:CudaMla.*'
  step memcheck timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$BUILD/tests/test_cuda" --gtest_filter="$SMALL"
  step racecheck timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$BUILD/tests/test_cuda" --gtest_filter="$SMALL"
else
  echo "compute-sanitizer not found: memcheck/racecheck skipped" | tee -a "$LOG"
fi

step probe "$ATTAIN" probe --refresh --out "$OUT/probe.json"

# No usable device: the timing steps cannot run; say why and stop after the table.
if "$ATTAIN" bench --list | grep -q '^attain-cuda.*not available'; then
  "$ATTAIN" bench --list | grep '^attain-cuda' | tee -a "$LOG"
  FAILED+=("no usable CUDA device: bench steps skipped")
  SKIP_BENCH=1
else
  SKIP_BENCH=0
fi

# DeepSeek-V3 decode GEMMs: DeepGEMM's (n, k) pairs and the router, m = 1..128, bf16 and fp8.
GEMM_OPS=()
for mk in "2112 7168" "24576 1536" "32768 512" "7168 16384" "4096 7168" "7168 2048" "256 7168"; do
  set -- $mk
  for m in 1 8 64 128; do
    for dt in bf16 fp8; do GEMM_OPS+=(--op "gemm:m=$m,n=$1,k=$2,dtype=$dt"); done
  done
done
MOE_OPS=(
  --op "grouped_gemm:groups=32,m=8,n=4096,k=7168,dtype=bf16,layout=masked"
  --op "grouped_gemm:groups=32,m=8,n=4096,k=7168,dtype=fp8,layout=masked"
  --op "grouped_gemm:groups=256,m=32,n=4096,k=7168,dtype=fp8,layout=masked"
  --op "grouped_gemm:groups=256,m=32,n=7168,k=2048,dtype=fp8,layout=masked"
)
MLA_OPS=(
  --op "mla_decode:b=64,s=2048,h=128,dtype=bf16"
  --op "mla_decode:b=64,s=4096,h=128,dtype=bf16"
  --op "mla_decode:b=128,s=4096,h=128,dtype=bf16"
  --op "mla_decode:b=64,s=8192,h=128,dtype=bf16"
  --op "mla_decode:b=64,s=4096,h=128,dtype=fp8"
  --op "mla_decode:b=1,s=8192,h=128,dtype=bf16"
)
BENCH=(--backend attain-cuda,cublaslt --max-seconds "$MAX_SECONDS" --no-progress)
if [ "$SKIP_BENCH" -eq 0 ]; then
step bench-gemm "$ATTAIN" bench "${GEMM_OPS[@]}" "${BENCH[@]}" --out "$OUT/bench-gemm.json"
step bench-moe "$ATTAIN" bench "${MOE_OPS[@]}" "${BENCH[@]}" --out "$OUT/bench-moe.json"
step bench-mla "$ATTAIN" bench "${MLA_OPS[@]}" "${BENCH[@]}" --out "$OUT/bench-mla.json"
if [ "$SUITE_SAMPLE" -gt 0 ]; then
  step bench-llm-1055 timeout "$SUITE_TIMEOUT" "$ATTAIN" bench --suite llm-1055 \
    --sample "$SUITE_SAMPLE" "${BENCH[@]}" --out "$OUT/bench-llm-1055.json"
fi
fi

# The table: every figure read from the JSON files above. Efficiency against two rooflines:
# the probe's measured ceilings (copy bandwidth, cuBLASLt bf16/fp8 peak) and the datasheet.
table() {
  python3 - "$OUT" data/devices/h200.json <<'PY'
import glob, json, math, os, sys
out, sheet = sys.argv[1], json.load(open(sys.argv[2]))
probe = {}
if os.path.exists(f"{out}/probe.json"):
    probe = json.load(open(f"{out}/probe.json")).get("gpu", {})

def roof(r, peaks, bw):
    dt = r["op"]["dtype"]
    peaks = {k: v for k, v in peaks.items() if isinstance(v, (int, float))}  # not "not supported"
    peak = peaks.get(dt) or peaks.get("bf16")
    if not peak or not bw or not r.get("bytes"):
        return None
    return min(peak, r["flops"] / r["bytes"] * bw / 1e3)  # TFLOP/s

meas_peaks = {"bf16": probe.get("bf16_tflops"), "fp16": probe.get("bf16_tflops"),
              "fp8": probe.get("fp8_tflops")}
meas_bw = probe.get("copy_gbps")
sheet_peaks, sheet_bw = sheet["peak_tflops"], sheet["mem_bandwidth_gbps"]
rows, by_op = [], {}
for f in sorted(glob.glob(f"{out}/bench-*.json")):
    for r in json.load(open(f)).get("results", []):
        by_op.setdefault(r["op"]["spec"], {})[r["backend"]] = r
        rows.append(r)
print(f"GPU: {probe.get('device', '?')}")
print(f"measured ceilings: copy {meas_bw} GB/s, bf16 {meas_peaks['bf16']} TFLOP/s, "
      f"fp8 {meas_peaks['fp8']} TFLOP/s; datasheet ({sheet['id']}): {sheet_bw} GB/s, "
      f"bf16 {sheet_peaks['bf16']}, fp8 {sheet_peaks['fp8']} TFLOP/s")
hdr = f"{'op':<58} {'backend':<11} {'status':<11} {'us':>9} {'TFLOP/s':>8} {'GB/s':>8} {'eff(meas)':>9} {'eff(sheet)':>10}"
print(hdr)
print("-" * len(hdr))
effs = {}
for r in rows:
    b = r["backend"]
    if r["status"] != "ok":
        print(f"{r['op']['spec']:<58} {b:<11} {r['status']:<11} {r.get('reason', '')[:70]}")
        continue
    t = r["median_s"]
    tf, gb = r["flops"] / t / 1e12, r["bytes"] / t / 1e9
    em, es = roof(r, meas_peaks, meas_bw), roof(r, sheet_peaks, sheet_bw)
    em = tf / em if em else float("nan")
    es = tf / es if es else float("nan")
    effs.setdefault(b, []).append((r, em, es))
    print(f"{r['op']['spec']:<58} {b:<11} {'ok':<11} {t * 1e6:9.1f} {tf:8.1f} {gb:8.0f} {em:9.3g} {es:10.3g}")

def geo(v):
    v = [x for x in v if x > 0 and math.isfinite(x)]
    return (math.exp(sum(map(math.log, v)) / len(v)), len(v)) if v else (float("nan"), 0)

print()
for b, v in effs.items():
    gm, n = geo([e for _, e, _ in v])
    gs, _ = geo([e for _, _, e in v])
    dec = [e for r, e, _ in v if r["op"]["kind"] == "gemm" and r["op"]["spec"].startswith("gemm:m=")
           and int(r["op"]["spec"].split("m=")[1].split(",")[0]) <= 128]
    gd, nd = geo(dec)
    print(f"{b:<11} geomean efficiency {gm:.3g} (measured ceilings), {gs:.3g} (datasheet) over {n} ops; "
          f"decode GEMMs (m <= 128) {gd:.3g} over {nd}")
ratios = [v["cublaslt"]["median_s"] / v["attain-cuda"]["median_s"] for v in by_op.values()
          if v.get("cublaslt", {}).get("status") == "ok" and v.get("attain-cuda", {}).get("status") == "ok"]
g, n = geo(ratios)
print(f"attain-cuda vs cublaslt speed ratio (time_cublaslt / time_attain_cuda, > 1: attain-cuda faster): "
      f"geomean {g:.3f} over {n} ops")
bad = [r for r in rows if r["status"] in ("wrong", "error")]
for r in bad:
    print(f"{r['status'].upper()} {r['op']['spec']} on {r['backend']}: {r.get('reason', '')}")
PY
}
step table table
echo "total $(( $(date +%s) - T_ALL ))s; results in $OUT" | tee -a "$LOG"
if [ ${#FAILED[@]} -gt 0 ]; then
  printf 'FAILED: %s\n' "${FAILED[@]}" | tee -a "$LOG"
  exit 1
fi
