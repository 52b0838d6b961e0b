#!/usr/bin/env bash
# attain report on attain cluster files: a run's timeline chart with one marker per
# interruption, a sweep's goodput-vs-scale chart with one marker per point and variant, pages
# from cluster files only and mixed with a results file, and a clear error for other JSON.
source "$(dirname "$0")/lib.sh"

"$ATTAIN" cluster --days 3 --chips 2048 --runs 2 --json --out "$TMP/run.json" >/dev/null
"$ATTAIN" cluster --sweep 1000,10000 --days 3 --runs 2 --json --out "$TMP/sweep.json" >/dev/null
"$ATTAIN" cluster --days 3 --chips 2048 --runs 2 --no-timeline --json --out "$TMP/bare.json" >/dev/null
"$ATTAIN" project --device h100-sxm --efficiency 0.5 --op gemm:m=4096,n=4096,k=4096,dtype=bf16 \
  --op gemm:m=8,n=4096,k=4096,dtype=bf16 -o "$TMP/p.json" >/dev/null
[ "$(json_get "$TMP/run.json" 'd["command"].startswith("attain cluster --days 3")')" = True ] \
  || fail "the cluster JSON does not record its command"
[ "$(json_get "$TMP/run.json" 'd["timeline_run"]["run"]')" = 0 ] || fail "no timeline_run"

# check_page HTML RUN.json|- SWEEP.json|- RESULTS.json|-: every chart and marker count.
check_page() {
  python3 - "$@" <<'PY'
import json, sys
from html.parser import HTMLParser
html_path, run, sweep, res = sys.argv[1:5]
html = open(html_path, encoding="utf-8").read()
assert "://" not in html and "<script" not in html
VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr"}
class Page(HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []; self.charts = []; self.cur = None
    def handle_starttag(self, tag, attrs):
        cls = (dict(attrs).get("class") or "").split()
        if tag == "svg" and cls[:1] == ["chart"]:
            self.cur = {"kind": cls[1], "classes": []}
        elif self.cur is not None:
            self.cur["classes"].append(" ".join(cls))
        if tag not in VOID: self.stack.append(tag)
    def handle_endtag(self, tag):
        if tag in VOID: return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> at {self.getpos()} closes {self.stack[-1:]}"
        self.stack.pop()
        if tag == "svg" and self.cur is not None:
            self.charts.append(self.cur); self.cur = None
p = Page(); p.feed(html); p.close()
assert not p.stack, p.stack
kinds = [c["kind"] for c in p.charts]
def count(c, cls): return sum(1 for x in c["classes"] if x == cls)
if run != "-":
    j = json.load(open(run))
    tl = [c for c in p.charts if c["kind"] == "timeline"]
    assert len(tl) == 1, kinds
    ev = j["timeline"]
    assert count(tl[0], "ev unexpected") == sum(e["kind"] == "unexpected" for e in ev), (count(tl[0], "ev unexpected"), ev)
    assert count(tl[0], "ev planned") == sum(e["kind"] == "planned" for e in ev)
    assert count(tl[0], "progress") == 1 and count(tl[0], "ideal") == 1
    assert "Interruptions of run 0 of 2" in html and "wall clock (days since the start)" in html
    assert j["command"].replace("/", "&#47;") in html or j["command"] in html, "caption lacks the command"
else:
    assert "timeline" not in kinds
if sweep != "-":
    j = json.load(open(sweep))
    sw = [c for c in p.charts if c["kind"] == "sweep"]
    assert len(sw) == 1, kinds
    n = len(j["points"]) * len(j["variants"])
    assert count(sw[0], "gp") == n and count(sw[0], "et") == n, (count(sw[0], "gp"), n)
    assert count(sw[0], "gline") == len(j["variants"]) and count(sw[0], "band") == len(j["variants"])
    assert "chips (log scale)" in html and ">100,000</text>" in html
if res != "-":
    ok = sum(r["status"] == "ok" for r in json.load(open(res))["results"])
    roof = [c for c in p.charts if c["kind"] == "roofline"]
    assert len(roof) == 1 and sum(1 for x in roof[0]["classes"] if x.split()[:1] == ["pt"]) == ok
else:
    assert "roofline" not in kinds and "<h2>Headline" not in html
print(f"{html_path}: charts {kinds}")
PY
}

"$ATTAIN" report "$TMP/run.json" "$TMP/sweep.json" -o "$TMP/cluster.html" > "$TMP/r.txt"
grep -q "1 cluster run(s) with a timeline, 1 goodput-vs-scale sweep(s)" "$TMP/r.txt" \
  || fail "report summary: $(cat "$TMP/r.txt")"
check_page "$TMP/cluster.html" "$TMP/run.json" "$TMP/sweep.json" - || fail "cluster-only page"

"$ATTAIN" report "$TMP/p.json" "$TMP/run.json" "$TMP/sweep.json" -o "$TMP/mixed.html" >/dev/null
check_page "$TMP/mixed.html" "$TMP/run.json" "$TMP/sweep.json" "$TMP/p.json" || fail "mixed page"

"$ATTAIN" report "$TMP/bare.json" -o "$TMP/bare.html" >/dev/null
check_page "$TMP/bare.html" - - - || fail "page of a run without a timeline"
grep -q "no timeline" "$TMP/bare.html" || fail "a run without a timeline is not said so"

"$ATTAIN" report "$TMP/run.json" "$TMP/sweep.json" --json > "$TMP/summary.json"
[ "$(json_get "$TMP/summary.json" 'len(d["cluster_runs"]), len(d["cluster_sweeps"])')" = "(1, 1)" ] \
  || fail "report --json lacks the cluster files"

echo '{"name": "not a report input"}' > "$TMP/other.json"
expect_error 2 "neither a results file" -- "$ATTAIN" report "$TMP/other.json" -o "$TMP/x.html"
echo '{"schema": "something/9"}' > "$TMP/other.json"
expect_error 2 "schema 'something/9' is not one attain report reads" -- \
  "$ATTAIN" report "$TMP/run.json" "$TMP/other.json" -o "$TMP/x.html"
echo "report of cluster files: ok"
