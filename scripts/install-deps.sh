#!/usr/bin/env bash
# Installs the Debian packages attain builds against; skips what is present.
set -euo pipefail
pkgs=(cmake ninja-build g++ make pkg-config
      libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
      libopenblas-dev libblis-dev libdnnl-dev ocl-icd-opencl-dev libopenmpi-dev openmpi-bin chromium
      clang-14 libclang-rt-14-dev python3-jsonschema
      python3-dev python3-pybind11 libdlpack-dev python3-numpy python3-pytest python3-torch python3-pandas)
# python3-jsonschema: the JSON Schema check of every file kind attain writes (tests/cli/schemas.sh).
# python3-dev + python3-pybind11 + libdlpack-dev: the Python module (python/; DLPack is how torch
# tensors cross); numpy, pytest, torch and pandas: its tests (torch's bf16 and matmul as
# references, Results.to_pandas).
# clang-14 + libclang-rt-14-dev: libFuzzer, for the fuzz targets (make test-fuzz).
# ocl-icd-opencl-dev: Debian's oneDNN CMake config requires OpenCL (only a Recommends of
# libdnnl-dev, which --no-install-recommends skips; without it CMake stops at find_package(dnnl)).
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
  echo "install-deps: missing ${missing[*]} and no apt-get here; install them by hand" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
