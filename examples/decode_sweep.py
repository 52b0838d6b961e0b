"""How a model's decode GEMMs use this CPU as the batch grows: each projection of one decoder
layer benchmarked at batch 1 to 128 on attain (and oneDNN where it is built in), its efficiency
(the fraction of the roofline it reaches) plotted against the batch.

    PYTHONPATH=build/python python3 examples/decode_sweep.py [MODEL] [--dtype bf16] [--out F.png]

Without matplotlib the table is printed and no figure is drawn.
"""
import argparse

import attain

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("model", nargs="?", default="llama-3.1-8b", help="a bundled model or a config.json")
p.add_argument("--dtype", default="bf16")
p.add_argument("--batches", default="1,2,4,8,16,32,64,128")
p.add_argument("--backends", default="attain,onednn")
p.add_argument("--max-seconds", type=float, default=0.5, help="timing budget per op and backend")
p.add_argument("--out", default="decode_sweep.png")
args = p.parse_args()

batches = [int(b) for b in args.batches.split(",")]
ops = [o for o in attain.catalog(args.model, phase="decode", tokens=batches, dtype=args.dtype)
       if o.kind == "gemm"]
print(f"{len(ops)} decode GEMMs of {args.model} ({args.dtype}), batches {batches}")
results = attain.bench(ops, backends=args.backends.split(","), max_seconds=args.max_seconds)

rows = [r for r in results.to_dicts() if r["status"] == "ok"]
series = {}
for r in rows:
    series.setdefault((r["backend"], r["layer"]), []).append((r["tokens"], r["efficiency"]))
print(f"\n{'backend':<10} {'layer':<12} " + " ".join(f"{b:>6}" for b in batches))
for (backend, layer), pts in sorted(series.items()):
    eff = dict(pts)
    print(f"{backend:<10} {layer:<12} " +
          " ".join(f"{eff[b]:6.2f}" if b in eff else "     -" for b in batches))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("\n(matplotlib is not installed: no figure)")
else:
    fig, ax = plt.subplots(figsize=(7, 4))
    for (backend, layer), pts in sorted(series.items()):
        pts.sort()
        ax.plot([b for b, _ in pts], [e for _, e in pts], marker="o",
                linestyle="-" if backend == "attain" else "--", label=f"{backend} {layer}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("decode batch (tokens)")
    ax.set_ylabel("fraction of attainable")
    ax.set_ylim(0, 1)
    ax.set_title(f"{args.model} decode GEMMs, {args.dtype}, {results.machine['cpu_model']}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"\nfigure written to {args.out}")
