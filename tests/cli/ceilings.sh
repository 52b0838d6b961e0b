#!/usr/bin/env bash
# A ceiling is the best the machine has been measured to do: a probe cache holding a low figure
# is raised by a run's re-check and the efficiencies judged against the raised one; an op that
# still runs faster than its ceiling is flagged CEIL!, kept out of the aggregates, and raises
# the cache for the next run.
source "$(dirname "$0")/lib.sh"
"$ATTAIN" probe > /dev/null 2>&1  # the shared cache exists
# A copy of the cache to forge (other tests read the shared one).
mkdir -p "$TMP/cache/attain"
cp "$XDG_CACHE_HOME/attain/probe.json" "$TMP/cache/attain/probe.json"
export XDG_CACHE_HOME="$TMP/cache"
forge() {  # forge FIELD VALUE: set one figure of this machine's entry
  python3 - "$TMP/cache/attain/probe.json" "$1" "$2" <<'PY'
import json, sys
p, field, v = sys.argv[1], sys.argv[2], float(sys.argv[3])
v = int(v) if v.is_integer() and v >= 1 else v  # integer fields (cold_bytes) stay integers
d = json.load(open(p))
for e in d["entries"].values():
    e[field] = v
    e.get("raised", {}).pop(field, None)
json.dump(d, open(p, "w"))
PY
}
# cached FIELD: this process's entry (the key ends with its CPU count; mpirun's ranks, bound to
# one core, make entries of their own).
cached() {
  python3 - "$TMP/cache/attain/probe.json" "$1" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
print(next(e for k, e in d["entries"].items() if k.endswith(f"| {len(os.sched_getaffinity(0))} cpus"))[sys.argv[2]])
PY
}
OP=gemm:m=1,n=1024,k=4096,dtype=fp32  # memory-bound: judged by the read bandwidth

# 1. A low cached read figure (a busy minute's probe), a run that re-checks: the check raises
#    the cache, and the op is judged against the raised figure.
forge read_gbps_1t 0.5
"$ATTAIN" bench --op "$OP" --backend attain --threads 1 --max-seconds 0.02 --recheck \
  --out "$TMP/r.json" > "$TMP/r.out" 2>&1 || fail "bench: $(cat "$TMP/r.out")"
python3 - "$TMP/r.json" "$(cached read_gbps_1t)" <<'PY'
import json, sys
d, now = json.load(open(sys.argv[1])), float(sys.argv[2])
assert now > 0.5, f"the re-check raised the cached figure ({now})"
checked = max(c["read_gbps"] for c in d["machine"]["checks"])
assert d["machine"]["ceilings_used"]["bandwidth_gbps"] >= checked, d["machine"]["ceilings_used"]
assert "the best known at the end of the run" in d["machine"]["ceilings_used"]["source"]
r = d["results"][0]
assert r["efficiency"] < 1.5 and r["attainable_tflops"] > 0, r
PY
grep -q "read_gbps_1t" <("$ATTAIN" probe) || fail "probe lists the raised figure"
"$ATTAIN" probe | grep -q "best seen  read_gbps_1t" || fail "probe says the figure was raised"

# 2. A low figure and no re-check: the op runs faster than its ceiling; it is a ceiling error
#    (CEIL! in the table, ceiling_error in the file, out of the aggregates), and the cache rises
#    (the op's 16 MiB above what the forged probe found to read at memory speed).
forge read_gbps_1t 0.5
forge cold_bytes 8388608
"$ATTAIN" bench --op "$OP" --backend attain --threads 1 --max-seconds 0.02 --no-recheck \
  --out "$TMP/f.json" > "$TMP/f.out" 2> "$TMP/f.err" || fail "bench: $(cat "$TMP/f.err")"
grep -q "CEIL!" "$TMP/f.out" || fail "table lacks CEIL!: $(cat "$TMP/f.out")"
grep -q "faster than the ceilings allow" "$TMP/f.err" || fail "no warning: $(cat "$TMP/f.err")"
grep -q "probe cache now holds read_gbps_1t" "$TMP/f.err" || fail "cache not raised: $(cat "$TMP/f.err")"
python3 - "$TMP/f.json" "$(cached read_gbps_1t)" <<'PY'
import json, sys
d, now = json.load(open(sys.argv[1])), float(sys.argv[2])
r = d["results"][0]
assert r["ceiling_error"] is True and r["efficiency"] > 1, r
assert abs(now - r["gbps"]) < 1e-6 * now, (now, r["gbps"])
PY
# The next run is judged against the raised figure.
"$ATTAIN" bench --op "$OP" --backend attain --threads 1 --max-seconds 0.02 --no-recheck --json \
  > "$TMP/f2.json" 2>/dev/null
python3 - "$TMP/f.json" "$TMP/f2.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["results"][0] for p in sys.argv[1:3])
assert b["attainable_tflops"] > 1.5 * a["attainable_tflops"], (a, b)
PY
# The report keeps a ceiling error out of its aggregates and names it.
"$ATTAIN" report "$TMP/f.json" -o "$TMP/f.html" > /dev/null
grep -q "above the ceiling" "$TMP/f.html" || fail "report does not flag the ceiling error: $(grep -o "headline.\{0,300\}" "$TMP/f.html")"
# 3. A hot run (operands in cache) beats the memory ceiling by design: it raises no ceiling.
forge read_gbps_1t 0.5
"$ATTAIN" bench --op "$OP" --backend attain --threads 1 --max-seconds 0.02 --no-recheck --hot \
  > "$TMP/h.out" 2>&1 || fail "hot bench: $(cat "$TMP/h.out")"
[ "$(cached read_gbps_1t)" = "0.5" ] || fail "a hot run raised the cache to $(cached read_gbps_1t)"
# 4. An op smaller than what reads at memory speed may be served partly from cache: still a
#    ceiling error, but it raises no read figure.
forge read_gbps_1t 0.5
forge cold_bytes 1073741824
"$ATTAIN" bench --op "$OP" --backend attain --threads 1 --max-seconds 0.02 --no-recheck \
  > "$TMP/s.out" 2> "$TMP/s.err" || fail "bench: $(cat "$TMP/s.err")"
grep -q "CEIL!" "$TMP/s.out" || fail "table lacks CEIL!: $(cat "$TMP/s.out")"
[ "$(cached read_gbps_1t)" = "0.5" ] || fail "a cache-sized op raised the cache to $(cached read_gbps_1t)"
echo "ceilings: ok"
