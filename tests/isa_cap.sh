#!/usr/bin/env bash
# Runs a test binary with ATTAIN_ISA capping every kernel family at LEVEL, where this CPU has
# that level (exit 77, skipped, where it does not).
#   tests/isa_cap.sh LEVEL BINARY [ARGS...]
set -euo pipefail
level=$1
shift
case $level in
  scalar) need=() ;;
  avx2) need=(avx2 fma f16c) ;;
  avx512) need=(avx2 fma f16c avx512f avx512bw avx512vl avx512dq) ;;
  *) echo "isa_cap.sh: unknown level $level" >&2; exit 2 ;;
esac
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
for f in "${need[@]}"; do
  if [[ $flags != *" $f "* ]]; then
    echo "isa_cap.sh: this CPU has no $f: skipped"
    exit 77
  fi
done
ATTAIN_ISA=$level exec "$@"
