#!/usr/bin/env python3
"""Regenerates the README's headline table from a results file of record.

The block between the markers `<!-- headline: begin -->` and `<!-- headline: end -->` in the
README is replaced by `attain report FILE --headline` (the one formatter of the table), with the
file's name, its report and the command that made it. Usage:

    scripts/readme-headline.py docs/results/llm-1055-intel-xeon-2vcpu.json
        [--attain build/attain] [--readme README.md] [--report docs/results/X.html]
"""
import argparse
import json
import os
import subprocess
import sys

BEGIN, END = "<!-- headline: begin -->", "<!-- headline: end -->"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="the results file of record (attain.results/1)")
    ap.add_argument("--attain", default="build/attain", help="the attain program")
    ap.add_argument("--readme", default="README.md", help="the README to update")
    ap.add_argument("--report", help="its HTML report, linked under the table")
    a = ap.parse_args()
    try:
        with open(a.results) as f:
            command = json.load(f).get("command", "")
        table = subprocess.run([a.attain, "report", a.results, "--headline"], check=True,
                               capture_output=True, text=True).stdout
        with open(a.readme) as f:
            readme = f.read()
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", "") or ""
        print(f"readme-headline: {e} {detail}".strip(), file=sys.stderr)
        return 1
    if readme.count(BEGIN) != 1 or readme.count(END) != 1 or readme.index(BEGIN) > readme.index(END):
        print(f"readme-headline: {a.readme} needs one '{BEGIN}' ... '{END}' block",
              file=sys.stderr)
        return 1
    source = f"From `{a.results}`"
    if a.report:
        source += f" (report: `{a.report}`)"
    source += f", made by `{command}`." if command else "."
    block = f"{BEGIN}\n{table.rstrip()}\n\n{source}\n{END}"
    head, rest = readme.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    with open(a.readme + ".tmp", "w") as f:
        f.write(head + block + tail)
    os.replace(a.readme + ".tmp", a.readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
