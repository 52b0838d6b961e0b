#!/usr/bin/env python3
"""Side-by-side timings on a noisy machine: `attain bench` runs alternated op by op.

A shared machine's memory and compute phases move an unchanged kernel 0.6-1.5x between runs
minutes apart, so two figures taken in separate runs say little. This script interleaves the
runs instead, reversing their order every round, and keeps each side's fastest time and best
median (attain bench's median over its repetitions).

Usage:
  scripts/alternate.py builds [options] BIN_A BIN_B -- OP [OP ...]
      each OP measured by two attain binaries (or wrapper scripts that set an environment switch
      and exec one) in turn; prints B's speed over A per op and their geomean.
  scripts/alternate.py ratio [options] BIN -- OP_1 OP_2 [OP_3 OP_4 ...]
      pairs of ops on one binary (e.g. an fp32 and a bf16 decode of one shape): per round
      time(OP_1) / time(OP_2), their median and the ratio of the fastest times.
  scripts/alternate.py busy [options] [--backends attain,onednn] BIN -- OP [OP ...]
      each OP on each backend quiet and with one CPU taken by a busy loop (a process spinning,
      pinned to the last CPU), in turn; per op and backend the slowdown busy / quiet of the best
      medians, then per backend their geomean and the worst op: how a library shares a machine
      with other work.

Copy both binaries afresh, one right after the other, before a run: byte-identical copies made
at different times can time 8-14% apart (docs/gemm.md, "Code placement").

Options: --rounds N (default 3), --threads T (2), --seconds S (attain bench --max-seconds,
0.4), --hot (W in cache: attain bench --hot), --extra "ARGS" (more attain bench arguments).
OpenBLAS's OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are removed from the environment, as the
documented commands do.
"""
import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys


def bench(binary, op, args, backend="attain"):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    cmd = [binary, "bench", "--no-progress", "--backend", backend, "--threads",
           str(args.threads), "--no-recheck", "--json", "--max-seconds", str(args.seconds),
           "--op", op]
    if args.hot:
        cmd.append("--hot")
    cmd += shlex.split(args.extra)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr.strip()}")
    r = json.loads(out.stdout)["results"][0]
    if r.get("status") == "unsupported" and backend != "attain":
        return None  # busy: a library without the op is left out of its geomean
    if r.get("status") != "ok":
        sys.exit(f"{binary} {op}: {r.get('status')} {r.get('error', '')}")
    return r["min_s"], r["median_s"]


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


def builds(args):
    fast, med = [], []
    for op in args.ops:
        t = ([], [])  # by position: the same binary twice is an A/A check of the noise
        for r in range(args.rounds):
            for side in ((0, 1) if r % 2 == 0 else (1, 0)):
                t[side].append(bench(args.bins[side], op, args))
        amin, bmin = min(x[0] for x in t[0]), min(x[0] for x in t[1])
        amed, bmed = min(x[1] for x in t[0]), min(x[1] for x in t[1])
        fast.append(amin / bmin)
        med.append(amed / bmed)
        print(f"{op:58s} A {amin * 1e6:10.1f} / {amed * 1e6:10.1f} us  B {bmin * 1e6:10.1f} / "
              f"{bmed * 1e6:10.1f} us  B/A speed {amin / bmin:.3f} / {amed / bmed:.3f}",
              flush=True)
    print(f"geomean B/A speed: fastest {geomean(fast):.3f}, best median {geomean(med):.3f}")


def ratio(args):
    (binary,) = args.bins
    if len(args.ops) % 2 != 0:
        sys.exit("ratio: give the ops in pairs")
    for i in range(0, len(args.ops), 2):
        x, y = args.ops[i], args.ops[i + 1]
        per, tx, ty = [], [], []
        for r in range(args.rounds):
            order = (x, y) if r % 2 == 0 else (y, x)
            got = {op: bench(binary, op, args)[1] for op in order}
            tx.append(got[x])
            ty.append(got[y])
            per.append(got[x] / got[y])
        print(f"{x} / {y}: per round {' '.join(f'{v:.2f}' for v in per)}; median "
              f"{statistics.median(per):.2f}, fastest {min(tx) / min(ty):.2f}", flush=True)


def spin_on_last_cpu():
    """A child process that keeps the last CPU of this process's set busy until killed."""
    cpu = max(os.sched_getaffinity(0))
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {cpu})
        while True:
            pass
    return pid


def busy(args):
    (binary,) = args.bins
    backends = [b for b in args.backends.split(",") if b]
    slow = {b: {} for b in backends}
    for op in args.ops:
        for b in backends:
            t = ([], [])  # quiet, busy
            for r in range(args.rounds):
                for side in ((0, 1) if r % 2 == 0 else (1, 0)):
                    spinner = spin_on_last_cpu() if side == 1 else None
                    try:
                        res = bench(binary, op, args, b)
                        if res is None:
                            break
                        t[side].append(res[1])
                    finally:
                        if spinner is not None:
                            os.kill(spinner, 9)
                            os.waitpid(spinner, 0)
                else:
                    continue
                break
            if not t[0] or not t[1]:
                print(f"{op:58s} {b:10s} unsupported", flush=True)
                continue
            q, k = min(t[0]), min(t[1])
            slow[b][op] = k / q
            print(f"{op:58s} {b:10s} quiet {q * 1e3:9.3f} ms  busy {k * 1e3:9.3f} ms  "
                  f"slowdown {k / q:.2f}x", flush=True)
    for b in backends:
        xs = list(slow[b].values())
        print(f"{b}: geomean slowdown {geomean(xs):.2f}x, worst {max(xs):.2f}x ({len(xs)} ops)")
    for b in backends[1:]:  # the first backend against each other on the ops both ran
        common = [op for op in slow[b] if op in slow[backends[0]]]
        if common:
            print(f"on the {len(common)} ops both ran: {backends[0]} "
                  f"{geomean([slow[backends[0]][op] for op in common]):.2f}x, {b} "
                  f"{geomean([slow[b][op] for op in common]):.2f}x")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["builds", "ratio", "busy"])
    p.add_argument("--backends", default="attain", help="busy: the backends to measure")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seconds", type=float, default=0.4)
    p.add_argument("--hot", action="store_true")
    p.add_argument("--extra", default="")
    p.add_argument("bins", nargs="+", metavar="BIN")
    argv = sys.argv[1:]
    if "--" not in argv:
        p.error("give the binaries, then --, then the ops")
    cut = argv.index("--")
    args = p.parse_args(argv[:cut])
    args.ops = argv[cut + 1:]
    want = 2 if args.mode == "builds" else 1
    if len(args.bins) != want or not args.ops or args.rounds < 1:
        sys.exit(f"{args.mode}: {want} binar{'ies' if want == 2 else 'y'}, -- and at least one op")
    {"builds": builds, "ratio": ratio, "busy": busy}[args.mode](args)


if __name__ == "__main__":
    main()
