#!/usr/bin/env python3
"""Auto vs default schedule in one `attain bench` results file, split by what auto ran.

Usage: scripts/auto-vs-default.py RESULTS.json TUNING_CACHE.json

RESULTS.json holds the backends `attain` (default schedule) and `attain:auto`; the tuning cache
is the one the auto runs used (ATTAIN_TUNE_CACHE). Where the measured search found nothing
faster than the default, the cache's best schedule is the all-automatic one, and auto then runs
the default's own code: its ratio to the default is the run's noise. The ops where auto chose
another schedule are the ones the scheduler decides. Prints both groups' geomean time ratios
(auto / default) and their worst op.
"""
import json
import math
import sys


def key_of(spec):
    kind, rest = spec.split(":", 1)
    f = dict(p.split("=") for p in rest.split(","))
    items = int(f.get("batch", f.get("groups", 1)))
    m = int(f["m"])
    op = {"gemm": "gemm", "batched_gemm": "batched"}.get(kind)
    if op is None:
        op = "grouped_" + f.get("layout", "contiguous")
        if op == "grouped_contiguous":
            m *= items  # the cache keys contiguous groups by their total rows
    return (op, f["dtype"], m, int(f["n"]), int(f["k"]), items)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    results = json.load(open(sys.argv[1]))
    cache = json.load(open(sys.argv[2]))
    best = {}
    for e in cache["entries"]:
        k = e["key"]
        best[(k["op"], k["a"], k["m"], k["n"], k["k"], k["items"])] = e["best"]
    times = {}
    for r in results["results"]:
        if r.get("status") == "ok":
            times.setdefault(r["op"]["spec"], {})[r["backend"]] = r["median_s"]
    groups = {"auto ran the default schedule": [], "auto chose another schedule": [],
              "not in the cache": []}
    # The all-automatic schedule's fields ("fuse=auto" since the engine decides the items'
    # regions itself; caches from before wrote the then-default "fuse=0").
    default_fields = ("path=auto", "threads=0", "grid=0x0", "swap=0")
    default_fuse = ("fuse=auto", "fuse=0")
    for spec, t in times.items():
        if "attain" not in t or "attain:auto" not in t:
            continue
        b = best.get(key_of(spec))
        g = ("not in the cache" if b is None else "auto ran the default schedule"
             if all(x in b for x in default_fields) and any(x in b.split() for x in default_fuse)
             else "auto chose another schedule")
        groups[g].append((t["attain:auto"] / t["attain"], spec))
    for name, rows in groups.items():
        if not rows:
            continue
        gm = math.exp(sum(math.log(r) for r, _ in rows) / len(rows))
        worst = max(rows)
        print(f"{name}: {len(rows)} ops, time auto / default geomean {gm:.3f} "
              f"(cut {100 * (1 - gm):.1f}%), worst {worst[0]:.2f}x ({worst[1]})")


if __name__ == "__main__":
    main()
