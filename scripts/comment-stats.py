#!/usr/bin/env python3
"""Count full-line comment lines in src/ and include/ and how many quote measurements.

A full-line comment line is a line whose first non-blank characters are // or that
lies inside a /* */ block. A line "quotes a measurement" when it holds a speed-up
(1.23x), a percentage, a throughput (GB/s, GFLOP/s, TFLOP/s), a time (ms, us, ns),
"measured N" or "was N", a run's protocol ("min of 3", "in one process", "scratch
program"), a date (2026-11-..), or an ordinal sitting or session.
"measured" alone is the project's own vocabulary (measured ceilings, measured results)
and does not count; nor do shapes such as "4 x 4" or "6x16", or "a % b".

Consecutive full-line comment lines form a block. The report gives both the lines
that quote a measurement and all lines of blocks that contain one (issue 46 counts
the latter).

Usage: scripts/comment-stats.py [--verbose] [--root DIR]
"""
import argparse
import os
import re
import sys

EXTS = (".cpp", ".hpp", ".cu", ".cuh", ".h")
DIRS = ("src", "include")

_NUM = r"(?<![\w.])\d+(?:\.\d+)?"
_ORDINAL = (r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|"
            r"twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|"
            r"nineteenth|twentieth|twenty-\w+|thirtieth|thirty-\w+|fortieth|forty-\w+|"
            r"\d+(?:st|nd|rd|th))")
MEASUREMENT = re.compile(
    "|".join([
        _NUM + r"[x×](?![\w])",                         # speed-up: 1.23x, 2x (not 4 x 4)
        _NUM + r"%",                                    # percentage (not "a % b")
        _NUM + r"\s*(?:[GTM]B/s|[GTM]i?B/s|[GT]FLOP/?s|[GT]FLOPS)",  # throughput
        _NUM + r"\s*(?:ms|us|µs|ns)\b",                 # time
        r"\bmeasured\b[:,]?\s+(?:at\s+|in\s+|to\s+|as\s+)?~?\d",     # "measured 1.2x", "measured: 9 us"
        r"\bwas\s+~?" + _NUM.replace(r"(?<![\w.])", ""),  # "was 1.4"
        r"\b20\d\d-\d\d(?:-\d\d)?\b",                   # date
        r"\b(?:scratch program|in one process|rounds in both orders|(?:min|best) of \d+)\b",
        _ORDINAL + r"\s+(?:sitting|session)\b",
        r"\bsitting\b",
    ]),
    re.IGNORECASE,
)


def comment_lines(text):
    """Yield (line_number, comment_text, block_id) for each full-line comment line."""
    in_block = False
    block = 0
    prev_was_comment = False
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        is_comment = False
        if in_block:
            is_comment = True
            if "*/" in s:
                in_block = False
        elif s.startswith("//"):
            is_comment = True
        elif s.startswith("/*"):
            is_comment = True
            if "*/" not in s[2:]:
                in_block = True
        if is_comment:
            if not prev_was_comment:
                block += 1
            yield n, s, block
        prev_was_comment = is_comment


def scan(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    lines = list(comment_lines(text))
    quoting = {n for n, s, _ in lines if MEASUREMENT.search(s)}
    blocks_with = {b for n, s, b in lines if n in quoting}
    in_blocks = sum(1 for _, _, b in lines if b in blocks_with)
    return len(lines), len(quoting), in_blocks, [(n, s) for n, s, _ in lines if n in quoting]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verbose", "-v", action="store_true", help="per-file counts")
    ap.add_argument("--lines", action="store_true", help="print each quoting line")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    args = ap.parse_args()

    rows = []
    for d in DIRS:
        for dirpath, _, files in os.walk(os.path.join(args.root, d)):
            for name in sorted(files):
                if name.endswith(EXTS):
                    path = os.path.join(dirpath, name)
                    total, quoting, in_blocks, hits = scan(path)
                    rows.append((os.path.relpath(path, args.root), total, quoting, in_blocks, hits))

    total = sum(r[1] for r in rows)
    quoting = sum(r[2] for r in rows)
    in_blocks = sum(r[3] for r in rows)
    pct = lambda a: 100.0 * a / total if total else 0.0
    if args.verbose or args.lines:
        print(f"{'file':60} {'comment':>8} {'quoting':>8} {'in-block':>8}")
        for path, t, q, b, hits in sorted(rows, key=lambda r: (-r[3], r[0])):
            if t:
                print(f"{path:60} {t:8d} {q:8d} {b:8d}")
            if args.lines:
                for n, s in hits:
                    print(f"    {n}: {s}")
        print()
    print(f"full-line comment lines:                 {total}")
    print(f"lines quoting a measurement:             {quoting} ({pct(quoting):.1f}%)")
    print(f"lines in blocks quoting a measurement:   {in_blocks} ({pct(in_blocks):.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
