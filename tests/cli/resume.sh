#!/usr/bin/env bash
# attain bench --out is written op by op: a run killed mid-way and resumed gives the file an
# uninterrupted run gives; damaged files, other settings and a second writer are refused.
source "$(dirname "$0")/lib.sh"
RUN=(bench --suite quick --sample 6 --backend reference,attain --max-seconds 0.01 --threads 1 --no-recheck)
"$ATTAIN" "${RUN[@]}" --out "$TMP/whole.json" > /dev/null 2>&1

# Killed (SIGKILL) once the file holds at least one op, then resumed with the same command.
"$ATTAIN" "${RUN[@]}" --out "$TMP/cut.json" > /dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  if [ -f "$TMP/cut.json" ] && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['results'] else 1)" "$TMP/cut.json" 2>/dev/null; then break; fi
  sleep 0.05
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
python3 - "$TMP/cut.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))  # whole JSON, never half a file
assert d["results"], "the file holds the ops finished before the kill"
if d.get("complete", True) is False:
    assert d["progress"]["ops_total"] == 6 and d["progress"]["ops_done"] < 6, d["progress"]
PY
"$ATTAIN" "${RUN[@]}" --out "$TMP/cut.json" --resume > "$TMP/resumed.out" 2>&1 || fail "resume: $(cat "$TMP/resumed.out")"
python3 - "$TMP/whole.json" "$TMP/cut.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert "complete" not in b and "progress" not in b, "a finished file is complete"
key = lambda d: [(r["op"]["spec"], r["backend"], r["status"]) for r in d["results"]]
assert key(a) == key(b), (key(a), key(b))
for x, y in zip(a["results"], b["results"]):
    if x["status"] == "ok":
        assert y["verified"] and 0.1 < y["median_s"] / x["median_s"] < 10, (x, y)
PY
[ -e "$TMP/cut.json.lock" ] && fail "the lock file is removed when the run ends"

# A finished file resumed runs nothing more and stays complete.
"$ATTAIN" "${RUN[@]}" --out "$TMP/cut.json" --resume > /dev/null 2>&1
json_get "$TMP/cut.json" 'len(d["results"])' | grep -q '^12$' || fail "complete file resumed"

# Other settings, another op list, a damaged file: refused, the file left as it was.
cp "$TMP/cut.json" "$TMP/before.json"
expect_error 2 "other settings: max_seconds" -- "$ATTAIN" bench --suite quick --sample 6 \
  --backend reference,attain --max-seconds 0.02 --threads 1 --no-recheck --out "$TMP/cut.json" --resume
expect_error 2 "which this command does not run" -- "$ATTAIN" bench --suite quick --sample 3 \
  --backend reference,attain --max-seconds 0.01 --threads 1 --no-recheck --out "$TMP/cut.json" --resume
cmp -s "$TMP/cut.json" "$TMP/before.json" || fail "a refused resume changed the file"
head -c 200 "$TMP/cut.json" > "$TMP/torn.json"
expect_error 2 "cannot resume.*not valid JSON" -- "$ATTAIN" "${RUN[@]}" --out "$TMP/torn.json" --resume
expect_error 2 "needs --out" -- "$ATTAIN" bench --shape 8x8x8 --resume
expect_error 2 "one round" -- "$ATTAIN" bench --shape 8x8x8 --resume --out "$TMP/x.json" --rounds 2

# A second process on a file being written is refused while the first holds it.
"$ATTAIN" "${RUN[@]}" --out "$TMP/busy.json" > /dev/null 2>&1 &
pid=$!
for _ in $(seq 1 200); do [ -e "$TMP/busy.json.lock" ] && break; sleep 0.05; done
expect_error 2 "being written by another attain process" -- "$ATTAIN" "${RUN[@]}" --out "$TMP/busy.json" --resume
wait "$pid"

# --deadline: the run stops between ops, exit status 3, the file incomplete and resumable.
rc=0
"$ATTAIN" "${RUN[@]}" --out "$TMP/dl.json" --deadline 0.001s > /dev/null 2> "$TMP/dl.err" || rc=$?
[ "$rc" -eq 3 ] || fail "--deadline exit status $rc (wanted 3)"
grep -q "stopped at the deadline" "$TMP/dl.err" || fail "deadline message: $(cat "$TMP/dl.err")"
"$ATTAIN" "${RUN[@]}" --out "$TMP/dl.json" --resume > /dev/null 2>&1 || fail "resume after the deadline"
json_get "$TMP/dl.json" 'len(d["results"])' | grep -q '^12$' || fail "deadline run resumed"
expect_error 2 "positive duration" -- "$ATTAIN" bench --shape 8x8x8 --deadline soon

# Ctrl-C (SIGINT) stops between ops: exit 130, the file incomplete.
"$ATTAIN" "${RUN[@]}" --out "$TMP/int.json" > /dev/null 2> "$TMP/int.err" &
pid=$!
for _ in $(seq 1 600); do
  if [ -f "$TMP/int.json" ]; then break; fi
  sleep 0.05
done
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
if [ "$rc" -ne 0 ]; then  # (0: the run had finished before the signal came)
  [ "$rc" -eq 130 ] || fail "SIGINT exit status $rc"
  grep -q "interrupted after" "$TMP/int.err" || fail "SIGINT message: $(cat "$TMP/int.err")"
  grep -q "stopping after the op in flight" "$TMP/int.err" || fail "SIGINT notice: $(cat "$TMP/int.err")"
  json_get "$TMP/int.json" 'd["complete"]' | grep -q '^False$' || fail "interrupted file complete"
fi
echo "resume: ok"
