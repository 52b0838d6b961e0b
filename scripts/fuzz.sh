#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang under ASan+UBSan and runs each for a
# bounded time from its committed seeds (tests/fuzz/corpus/NAME). Inputs found on the way go to
# BUILD/corpus/NAME, a crashing input to BUILD/crashes/ (and the run fails).
#   scripts/fuzz.sh [SECONDS_EACH [TARGET...]]      default: 40 s each, every target
# FUZZ_BUILD (default build-fuzz), FUZZ_JOBS (default nproc: targets run side by side).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-40}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(op_spec model_config results import_csv device tune_cache)
build=${FUZZ_BUILD:-build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc)}
cxx=$(command -v clang++-14 || command -v clang++ || true)
[ -n "$cxx" ] || { echo "fuzz: no clang++ (Debian: clang-14 libclang-rt-14-dev)" >&2; exit 1; }
cc=${cxx/clang++/clang}

mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_C_COMPILER="$cc" -DATTAIN_FUZZ=ON -DATTAIN_SANITIZE=ON -DATTAIN_BUILD_TESTS=OFF \
  -DATTAIN_BUILD_BENCH=OFF -DATTAIN_CUDA=OFF -DATTAIN_PCH=OFF > "$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

mkdir -p "$build/crashes"
run_one() {
  local t=$1 work="$build/corpus/$1"
  mkdir -p "$work"
  # -rss_limit_mb / -malloc_limit_mb: an input that makes a reader allocate without bound is a
  # finding, like a crash; -timeout: so is one that takes 10 s.
  if "$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$build/crashes/$t-" \
      "$work" "tests/fuzz/corpus/$t" > "$build/fuzz-$t.log" 2>&1; then
    echo "fuzz $t: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz-$t.log" |
      grep -o '[0-9]*$') runs in ${secs} s, no crash"
  else
    echo "fuzz $t: FAILED (log: $build/fuzz-$t.log)" >&2
    grep -E "ERROR|SUMMARY|Test unit written" "$build/fuzz-$t.log" | head -5 >&2
    return 1
  fi
}
export -f run_one
export build secs
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}'
