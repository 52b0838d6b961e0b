#!/usr/bin/env bash
# The tree on aarch64: cross-compiles the library and the unit tests that need no x86 kernels
# with Debian's g++-aarch64-linux-gnu, then runs them under qemu-user. There the CPU reports no
# vector ISA (core/arch/portable) and every kernel family is the portable one.
#   scripts/cross-aarch64.sh [BUILD_DIR]     (default build-aarch64)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-aarch64}
tests=(test_gemm test_gemm_frame test_op)
# Under emulation the portable kernels run some 50x slower: the GEMM tests that sweep large
# shapes are left to the native runs, the checks, dispatch, edge shapes and heuristic run here.
declare -A filter=(
  [test_gemm]="GemmDispatch.*:Gemm.EdgeShapes:Gemm.EmptyAndKZero:Gemm.BadArgumentsAreRefused:Gemm.ScheduleFieldsOutsideTheirRangesAreRefused"
  [test_gemm_frame]="GemmHeuristic.*:GemmPaths.*"
)

need=(g++-aarch64-linux-gnu qemu-user libfmt-dev:arm64 libgtest-dev:arm64)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "cross-aarch64: missing ${missing[*]}; run as root (dpkg --add-architecture arm64)" >&2
    exit 1
  fi
  echo "cross-aarch64: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  dpkg --add-architecture arm64
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The optional libraries are x86 packages here: left out, as on any machine without them.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DATTAIN_CUDA=OFF -DATTAIN_BUILD_BENCH=OFF \
  -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON -DCMAKE_DISABLE_FIND_PACKAGE_OpenCL=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_dnnl=ON ${CMAKE_FLAGS:-} >/dev/null
cmake --build "$build" --target attain_cli "${tests[@]}"
for t in "${tests[@]}"; do
  echo "cross-aarch64: $t under qemu-aarch64"
  qemu-aarch64 -L /usr/aarch64-linux-gnu "$build/tests/$t" --gtest_brief=1 \
    --gtest_filter="${filter[$t]:-*}"
done
echo "cross-aarch64: $(file -b "$build/attain" | cut -d, -f1-2)"
