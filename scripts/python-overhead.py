#!/usr/bin/env python3
"""The cost of calling attain.gemm from Python instead of from C++ (docs/python.md, "Overhead").

Two measurements, each alternated in blocks (C++ loop, Python loop, reversed every round) so
that a machine's drift falls on both sides alike:
  1. the issue's shape, a 1 x 4096 x 4096 fp32 decode with `out` given: each call's seconds
     from Python (time.perf_counter around attain.gemm) against the same checked call in a C++
     loop (attain._core._gemm_seconds); overhead = the difference of the medians;
  2. M = 0 (the engine returns at once): what the binding itself costs per call, which the
     first figure's noise (a call of about a millisecond) can hide.
Both for numpy arrays and, where torch is installed, torch tensors (DLPack on every call).

  PYTHONPATH=build/python python3 scripts/python-overhead.py [--threads 2] [--rounds 5]
"""
import argparse
import statistics
import time

import numpy as np

import attain
from attain import _core

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--threads", type=int, default=2)
p.add_argument("--rounds", type=int, default=5)
p.add_argument("--calls", type=int, default=200, help="calls per block")
args = p.parse_args()


def python_seconds(a, w, out, n):
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        attain.gemm(a, w, out=out, threads=args.threads)
        t.append(time.perf_counter() - t0)
    return t


def measure(a, w, out, calls):
    cpp, py, blocks = [], [], []
    attain.gemm(a, w, out=out, threads=args.threads)  # warm: pool, scratch
    for r in range(args.rounds):
        order = (0, 1) if r % 2 == 0 else (1, 0)
        for side in order:
            if side == 0:
                t = _core._gemm_seconds(a, w, out, args.threads, calls)
                cpp += t
                blocks.append(statistics.median(t))
            else:
                py += python_seconds(a, w, out, calls)
    return statistics.median(cpp), statistics.median(py), max(blocks) - min(blocks)


def report(name, a, w, calls):
    shape = (a.shape[0], w.shape[0])
    out = (np.empty(shape, np.float32) if isinstance(a, np.ndarray)
           else torch.empty(shape, dtype=torch.float32))
    cpp, py, spread = measure(a, w, out, calls)
    print(f"{name:<42} C++ {cpp * 1e6:9.2f} us  Python {py * 1e6:9.2f} us  "
          f"overhead {(py - cpp) * 1e6:6.2f} us  (C++ blocks' medians spread {spread * 1e6:.2f} us)")


rng = np.random.default_rng(0)
w = rng.standard_normal((4096, 4096)).astype(np.float32)
a1 = rng.standard_normal((1, 4096)).astype(np.float32)
a0 = np.empty((0, 4096), np.float32)
print(f"attain.gemm from Python against the same call from C++, {args.threads} threads, "
      f"medians of {args.rounds} x {args.calls} calls a side")
report("numpy, 1 x 4096 x 4096 fp32, out given", a1, w, args.calls)
report("numpy, M = 0 (the binding alone)", a0, w, 20 * args.calls)
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    report("torch, 1 x 4096 x 4096 fp32, out given", torch.from_numpy(a1), torch.from_numpy(w),
           args.calls)
    report("torch, M = 0 (the binding alone)", torch.from_numpy(a0), torch.from_numpy(w),
           20 * args.calls)
