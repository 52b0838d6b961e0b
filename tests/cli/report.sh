#!/usr/bin/env bash
# attain report / import / project: well-formed self-contained HTML with one roofline point per
# ok op, a headless-Chromium render that is not blank, import errors with line numbers,
# projection arithmetic checked by hand.
source "$(dirname "$0")/lib.sh"

# A measured file (OpenBLAS only: fast; fp32 ops ok, the others recorded unsupported).
"$ATTAIN" bench --suite quick --sample 8 --backend openblas --max-seconds 0.01 --threads 1 \
  --out "$TMP/a.json" >/dev/null

# A device database of one test chip (known numbers, independent of data/devices); the
# models stay those of the repository.
mkdir -p "$TMP/data/devices"
ln -s "$ROOT/data/models" "$TMP/data/models"
cat > "$TMP/data/devices/testchip.json" <<'JSON'
{"id": "testchip", "name": "Test Chip", "vendor": "test", "kind": "npu",
 "peak_tflops": {"fp32": 100, "bf16": 1000, "fp8": 2000}, "mem_bandwidth_gbps": 4000, "mem_capacity_gb": 96,
 "interconnect": {"name": "test link", "gbps": 400},
 "sources": {"peak_tflops.fp32": "test", "peak_tflops.bf16": "test", "peak_tflops.fp8": "test", "mem_bandwidth_gbps": "test",
             "mem_capacity_gb": "test", "interconnect": "test"}}
JSON
export ATTAIN_DATA_DIR="$TMP/data"
DEV=testchip
"$ATTAIN" devices --json > "$TMP/devices.json"

# ---- project -------------------------------------------------------------------------
"$ATTAIN" project --device "$DEV" --efficiency 0.5 --suite quick -o "$TMP/p.json" > "$TMP/p.txt"
grep -q "^PROJECTION on $DEV" "$TMP/p.txt" || fail "project text lacks the PROJECTION header"
python3 - "$TMP/p.json" "$TMP/devices.json" "$DEV" "$TMP/p.txt" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); devs = json.load(open(sys.argv[2])); dev = sys.argv[3]
d = next(x for x in devs if x["id"] == dev)
assert p["machine"]["device"] == dev
res = p["results"]
assert res and all(r["projected"] is True and r["backend"] == "projected:" + dev for r in res)
ok = [r for r in res if r["status"] == "ok"]
assert ok, "no op projected"
# By hand, one op: attainable = min(peak(dtype), flops/bytes x bandwidth); time = flops / (attainable x 0.5).
r = next(r for r in ok if r["op"]["dtype"] == "bf16")
att = min(d["peak_tflops"]["bf16"], r["flops"] / r["bytes"] * d["mem_bandwidth_gbps"] / 1e3)
assert abs(r["attainable_tflops"] / att - 1) < 1e-9, (r["attainable_tflops"], att)
assert abs(r["median_s"] / (r["flops"] / (att * 1e12 * 0.5)) - 1) < 1e-9
assert abs(r["efficiency"] - 0.5) < 1e-12
# Every figure line of the text says "projected".
rows = [l for l in open(sys.argv[4]) if l.startswith(("gemm", "batched", "grouped", "mla"))]
figs = [l for l in rows if "unsupported" not in l]
assert len(figs) == len(ok), (len(figs), len(ok))
assert all(l.count("projected") >= 3 for l in figs), figs[:2]
PY
# One op by hand, with the test chip's numbers: 2*4096^3 FLOPs, compute-bound at 1000 TFLOP/s,
# x 0.5 -> 274.877906944 us; m=1 is memory-bound: 33,570,816 bytes / (4000 GB/s x 0.5).
"$ATTAIN" project --device "$DEV" --efficiency 0.5 --op gemm:m=4096,n=4096,k=4096,dtype=bf16 --json > "$TMP/one.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; assert abs(r['median_s']/274.877906944e-6-1)<1e-9, r" "$TMP/one.json"
"$ATTAIN" project --device "$DEV" --efficiency 0.5 --op gemm:m=1,n=4096,k=4096,dtype=bf16 --json > "$TMP/one.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; assert abs(r['median_s']/(33570816/2e12)-1)<1e-9, r" "$TMP/one.json"
"$ATTAIN" project --device "$DEV" --like "$TMP/a.json" --suite quick -o "$TMP/like.json" > "$TMP/like.txt"
grep -q "geomean efficiencies of" "$TMP/like.txt" || fail "project --like does not say where efficiencies come from"
expect_error 2 "must be in (0, 1]" -- "$ATTAIN" project --device "$DEV" --efficiency 1.5 --suite quick
expect_error 2 "holds projections" -- "$ATTAIN" project --device "$DEV" --like "$TMP/p.json" --suite quick
expect_error 2 "nope-chip" -- "$ATTAIN" project --device nope-chip --suite quick

# ---- import --------------------------------------------------------------------------
cat > "$TMP/t.csv" <<'CSV'
model,layer,dtype,m,n,k,time_us
dsv3,attn.q_a,bf16,8,2112,7168,12.5
dsv3,attn.q_b,bf16,eight,24576,1536,20
dsv3,mlp.up,bf16,4096,4096,4096
dsv3,mlp.down,fp8,4096,7168,2048,150
CSV
"$ATTAIN" import "$TMP/t.csv" --device "$DEV" -o "$TMP/imp.json" --backend other-chip > "$TMP/imp.txt" 2> "$TMP/imp.err"
grep -q "line 3:.*m 'eight'" "$TMP/imp.err" || fail "malformed row not reported with its line: $(cat "$TMP/imp.err")"
grep -q "line 4:.*fields" "$TMP/imp.err" || fail "short row not reported with its line: $(cat "$TMP/imp.err")"
grep -q "imported 2 row" "$TMP/imp.txt" || fail "import summary: $(cat "$TMP/imp.txt")"
[ "$(json_get "$TMP/imp.json" 'len(d["results"])')" = 2 ] || fail "import row count"
[ "$(json_get "$TMP/imp.json" 'd["machine"]["device"]')" = "$DEV" ] || fail "import device"
expect_error 2 "did not parse (--strict)" -- "$ATTAIN" import "$TMP/t.csv" --device "$DEV" -o "$TMP/x.json" --strict
printf 'm,n,dtype,time_us\n1,2,bf16,3\n' > "$TMP/nocol.csv"
expect_error 2 "missing required column" -- "$ATTAIN" import "$TMP/nocol.csv" --device "$DEV" -o "$TMP/x.json"
: > "$TMP/empty.csv"
expect_error 2 "empty file" -- "$ATTAIN" import "$TMP/empty.csv" --device "$DEV" -o "$TMP/x.json"
printf 'm,n,k,dtype,time_us\nx,1,1,bf16,1\n' > "$TMP/none.csv"
expect_error 2 "line 2" -- "$ATTAIN" import "$TMP/none.csv" --device "$DEV" -o "$TMP/x.json"
expect_error 2 "nope-chip" -- "$ATTAIN" import "$TMP/t.csv" --device nope-chip -o "$TMP/x.json"
expect_error 2 "cannot read CSV" -- "$ATTAIN" import "$TMP/missing.csv" --device "$DEV" -o "$TMP/x.json"
# A device file of one's own, by path: used as a listed one is; a bad one names its field.
python3 - "$ROOT/data/devices/mi300x.json" "$TMP/mychip.json" "$TMP/badchip.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["id"], d["name"] = "mychip", "My Chip"
json.dump(d, open(sys.argv[2], "w"))
del d["sources"]["peak_tflops.bf16"]
json.dump(d, open(sys.argv[3], "w"))
PY
"$ATTAIN" import "$TMP/t.csv" --device "$TMP/mychip.json" -o "$TMP/mine.json" > /dev/null 2>&1
[ "$(json_get "$TMP/mine.json" 'd["machine"]["device"]')" = mychip ] || fail "device file by path"
expect_error 2 "peak_tflops.bf16' has no entry in 'sources'" -- "$ATTAIN" import "$TMP/t.csv" --device "$TMP/badchip.json" -o "$TMP/x.json"
expect_error 2 "cannot read device file" -- "$ATTAIN" import "$TMP/t.csv" --device "$TMP/nochip.json" -o "$TMP/x.json"
# A peak the vendor does not publish (the 950PR's bf16): rows skipped saying so; an explicit
# --assume-peak fills it, labelled in the output and in the results file.
PR="$ROOT/data/devices/ascend-950pr.json"
"$ATTAIN" import "$TMP/t.csv" --device "$PR" -o "$TMP/pr.json" > /dev/null 2> "$TMP/pr.err" || true
grep -q "not published" "$TMP/pr.err" || fail "a bf16 row on the 950PR does not say 'not published': $(cat "$TMP/pr.err")"
"$ATTAIN" import "$TMP/t.csv" --device "$PR" --assume-peak bf16=fp8/2 -o "$TMP/pr.json" > "$TMP/pr.txt" 2>/dev/null
grep -q "^ASSUMED (--assume-peak bf16=fp8/2): 500 TFLOP/s" "$TMP/pr.txt" || fail "the assumption is not printed: $(cat "$TMP/pr.txt")"
python3 - "$TMP/pr.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
assert f["config"]["assumed_peaks"][0].startswith("ASSUMED (--assume-peak bf16=fp8/2)"), f["config"]
assert "ASSUMED" in f["machine"]["ceilings_used"]["source"], f["machine"]["ceilings_used"]
PY
"$ATTAIN" project --device "$PR" --suite quick --assume-peak bf16=fp8/2 > "$TMP/prp.txt"
grep -q "^ASSUMED" "$TMP/prp.txt" || fail "project does not print the assumption"
expect_error 2 "lists a bf16 peak of 1000 TFLOP/s; an assumption only fills a gap" -- "$ATTAIN" project --device "$DEV" --suite quick --assume-peak bf16=500
expect_error 2 "does not support fp4" -- "$ATTAIN" project --device "$ROOT/data/devices/h100-sxm.json" --suite quick --assume-peak fp4=fp8*2

# ---- report --------------------------------------------------------------------------
"$ATTAIN" report "$TMP/a.json" "$TMP/imp.json" "$TMP/p.json" -o "$TMP/r.html" > "$TMP/r.txt"
grep -q "report written to" "$TMP/r.txt" || fail "report summary"
grep -q "a:openblas runs at a projected .* of p:projected:testchip's speed" "$TMP/r.txt" || fail "no relative speed line: $(cat "$TMP/r.txt")"
python3 - "$TMP/r.html" "$TMP/a.json" "$TMP/imp.json" "$TMP/p.json" <<'PY'
import json, re, sys
from html.parser import HTMLParser
html = open(sys.argv[1], encoding="utf-8").read()
assert "http://" not in html and "https://" not in html, "the page references the network"
assert "<script" not in html
VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "area", "base", "source", "track", "embed", "param"}
class Check(HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []; self.errors = []; self.svgs = []; self.cur = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "roofline" in (a.get("class") or ""):
            self.cur = 0
        if self.cur is not None and (a.get("class") or "").split()[:1] == ["pt"]:
            self.cur += 1
        if tag not in VOID: self.stack.append(tag)
    def handle_startendtag(self, tag, attrs):
        pass
    def handle_endtag(self, tag):
        if tag in VOID: return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> at {self.getpos()} closes {self.stack[-1:] }"); return
        self.stack.pop()
        if tag == "svg" and self.cur is not None:
            self.svgs.append(self.cur); self.cur = None
c = Check(); c.feed(html); c.close()
assert not c.errors, c.errors[:5]
assert not c.stack, f"unclosed: {c.stack}"
want = [sum(r["status"] == "ok" for r in json.load(open(f))["results"]) for f in sys.argv[2:]]
assert c.svgs == want, f"points per roofline {c.svgs}, ok ops per file {want}"
assert "PROJECTED" in html and "This report contains PROJECTIONS" in html
assert "attain bench --op " in html
PY
"$ATTAIN" report "$TMP/a.json" "$TMP/p.json" --json > "$TMP/r.json"
[ "$(json_get "$TMP/r.json" 'len(d["pairs"])')" = 1 ] || fail "report --json pairs"
[ "$(json_get "$TMP/r.json" 'd["pairs"][0]["speed_a_over_b"]["count"] > 0 and d["pairs"][0]["projected"]')" = True ] \
  || fail "report --json: the measured/projected pair"
expect_error 2 "needs -o" -- "$ATTAIN" report "$TMP/a.json"
expect_error 2 "cannot read" -- "$ATTAIN" report "$TMP/none.json" -o "$TMP/x.html"

# ---- render in headless Chromium: the PNG must not be blank ---------------------------
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
  echo "SKIP render check: chromium is not installed (scripts/install-deps.sh installs it)"
else
  timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --disable-dev-shm-usage \
    --user-data-dir="$TMP/chrome" --screenshot="$TMP/shot.png" --window-size=1200,2000 \
    "file://$TMP/r.html" >"$TMP/chrome.log" 2>&1 || fail "chromium failed: $(tail -5 "$TMP/chrome.log")"
  [ -s "$TMP/shot.png" ] || fail "no screenshot written: $(tail -5 "$TMP/chrome.log")"
  python3 - "$TMP/shot.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8]); body = data[pos + 8:pos + 8 + n]; pos += 12 + n
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT": idat += body
raw = zlib.decompress(idat); stride = w * bpp
prev = bytearray(stride); colors = set(); nonwhite = 0
for y in range(h):  # undo the PNG filters row by row
    f = raw[y * (stride + 1)]; line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0; b = prev[i]; c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    if y % 4 == 0:
        for x in range(0, w, 4):
            px = bytes(line[x * bpp:x * bpp + 3]); colors.add(px); nonwhite += px != b"\xff\xff\xff"
    prev = line
samples = ((h + 3) // 4) * ((w + 3) // 4)
print(f"screenshot {w}x{h}: {len(colors)} distinct colors, {100 * nonwhite / samples:.1f}% non-white samples")
assert len(colors) > 20 and nonwhite > 0.01 * samples, "the rendered page looks blank"
PY
fi
echo "report/import/project CLI: ok"
# --headline: the README's Markdown table, and the script that puts it into a README.
"$ATTAIN" bench --op gemm:m=4,n=64,k=64,dtype=fp32 gemm:m=4,n=64,k=64,dtype=bf16 \
  --backend attain,openblas --max-seconds 0.01 --threads 1 --out "$TMP/h.json" > "$TMP/h.out" 2>&1
grep -q "^| attain | 2 of 2 |" "$TMP/h.out" || fail "bench prints the headline: $(cat "$TMP/h.out")"
"$ATTAIN" report "$TMP/h.json" --headline > "$TMP/h.md"
grep -q "^| backend | ops run | efficiency | near each op | fp32 | bf16 |" "$TMP/h.md" || fail "headline header: $(cat "$TMP/h.md")"
grep -q "^| openblas | 1 of 2 |.*x (1 ops) |$" "$TMP/h.md" || fail "headline openblas row: $(cat "$TMP/h.md")"
printf 'intro\n<!-- headline: begin -->\nold\n<!-- headline: end -->\nrest\n' > "$TMP/README.md"
python3 "$ROOT/scripts/readme-headline.py" "$TMP/h.json" --attain "$ATTAIN" --readme "$TMP/README.md"
grep -q "^| attain | 2 of 2 |" "$TMP/README.md" || fail "readme-headline did not write the table"
grep -q "^old$" "$TMP/README.md" && fail "readme-headline kept the old block"
head -1 "$TMP/README.md" | grep -q "^intro$" || fail "readme-headline lost the text before"
tail -1 "$TMP/README.md" | grep -q "^rest$" || fail "readme-headline lost the text after"
printf 'no markers\n' > "$TMP/bad.md"
python3 "$ROOT/scripts/readme-headline.py" "$TMP/h.json" --attain "$ATTAIN" --readme "$TMP/bad.md" 2>/dev/null \
  && fail "readme-headline accepted a README without markers"
echo "report --headline: ok"
