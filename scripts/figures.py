#!/usr/bin/env python3
"""Regenerates the README's table of current figures from the results of record.

The block between the markers `<!-- figures: begin -->` and `<!-- figures: end -->` in the
README is replaced by one row per file in RECORD: what it measures, the figure (from
`attain report FILE --json`, the one aggregator of efficiencies and speed ratios), the machine,
the date of the run, the file, and the command that made it (the file's "command" field).
`--check` writes nothing: it compares the README's block with what the files give, prints the
difference and exits 1 where they differ. Usage:

    scripts/figures.py [--check] [--attain build/attain] [--readme README.md]
"""
import argparse
import difflib
import json
import os
import re
import subprocess
import sys

BEGIN, END = "<!-- figures: begin -->", "<!-- figures: end -->"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The results of record behind the table: (what was measured, the machine family, the file).
# The headline run (docs/results/llm-1055-*.json) has its own block (scripts/readme-headline.py).
RECORD = [
    ("quick suite (60 ops)", "Intel Xeon guest", "docs/results/quick-intel-xeon-2026-12-05.json"),
    ("quick suite (60 ops)", "Zen 4 EPYC guest",
     "docs/results/quick-zen4-avx512-2026-12-04.json"),
    ("quick suite (60 ops), AVX2 kernels", "Zen 4 EPYC guest",
     "docs/results/quick-zen4-avx2-2026-12-04.json"),
    ("quick suite (60 ops)", "Zen 5 EPYC guest", "docs/results/quick-zen5-2026-12-08.json"),
    ("large fp32 GEMMs (2048^3 and 3 prefill shapes)", "Zen 4 EPYC guest",
     "docs/results/large-zen4-avx512-2026-12-03.json"),
    ("large fp32 GEMMs, AVX2 kernels", "Zen 4 EPYC guest",
     "docs/results/large-zen4-avx2-2026-12-04.json"),
]

HEADER = ("| what | figure | machine | date | results file | command |\n"
          "| --- | --- | --- | --- | --- | --- |")


def figure(report: dict) -> str:
    """The first backend's efficiency (geomean) and its speed against each other backend's."""
    first = report["series"][0]
    eff = first["efficiency"]
    text = f"{first['backend']} **{100 * eff['geomean']:.1f}%** of attainable ({eff['count']} ops"
    if first.get("ceiling_errors"):
        text += f"; {first['ceiling_errors']} above the ceiling left out"
    text += ")"
    speeds = [f"vs {p['b']} {p['speed_a_over_b']['geomean']:.2f}x ({p['speed_a_over_b']['count']} ops)"
              for p in report["pairs"] if p["a"] == first["backend"] and not p["projected"]]
    if speeds:
        text += "; speed " + ", ".join(speeds)
    return text


def machine(results: dict, family: str) -> str:
    m = results["machine"]
    kernels = re.search(r"\((.*)\)", m.get("libraries", {}).get("attain", ""))
    text = f"{family} ({m['cpu_model']}), {m['threads']} threads"
    return text + (f", {kernels.group(1)}" if kernels else "")


def command(results: dict) -> str:
    """The file's command; a kernel family other than the probe's was forced by ATTAIN_ISA."""
    m = results["machine"]
    ran = re.search(r"\((avx2|avx512|scalar) kernels", m.get("libraries", {}).get("attain", ""))
    isa = m.get("probe", {}).get("fma_isa", "")
    prefix = ""
    if ran and not isa.startswith(ran.group(1)):
        prefix = f"ATTAIN_ISA={ran.group(1)} "
    return prefix + results.get("command", "")


def table(attain: str) -> str:
    rows = [HEADER]
    for what, family, path in RECORD:
        with open(os.path.join(ROOT, path)) as f:
            results = json.load(f)
        report = json.loads(subprocess.run([attain, "report", os.path.join(ROOT, path), "--json"],
                                           check=True, capture_output=True, text=True).stdout)
        rows.append(f"| {what} | {figure(report)} | {machine(results, family)} | "
                    f"{results.get('created', '')[:10]} | `{path}` | `{command(results)}` |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attain", default=os.path.join(ROOT, "build", "attain"),
                    help="the attain program (default: build/attain)")
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"), help="the README")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 with a diff where the README's table differs")
    a = ap.parse_args()
    try:
        block = f"{BEGIN}\n{table(a.attain)}\n{END}"
        with open(a.readme) as f:
            readme = f.read()
    except (OSError, ValueError, KeyError, IndexError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", "") or ""
        print(f"figures: {e} {detail}".strip(), file=sys.stderr)
        return 1
    if readme.count(BEGIN) != 1 or readme.count(END) != 1 or readme.index(BEGIN) > readme.index(END):
        print(f"figures: {a.readme} needs one '{BEGIN}' ... '{END}' block", file=sys.stderr)
        return 1
    head, rest = readme.split(BEGIN, 1)
    old, tail = rest.split(END, 1)
    old = BEGIN + old + END
    if a.check:
        if old == block:
            return 0
        sys.stdout.writelines(difflib.unified_diff(
            (old + "\n").splitlines(keepends=True), (block + "\n").splitlines(keepends=True),
            f"{a.readme} (now)", "from the results of record (scripts/figures.py)"))
        print(f"figures: {a.readme}'s table differs from the results of record: "
              f"run scripts/figures.py to regenerate it", file=sys.stderr)
        return 1
    with open(a.readme + ".tmp", "w") as f:
        f.write(head + block + tail)
    os.replace(a.readme + ".tmp", a.readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
