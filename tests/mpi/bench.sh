#!/usr/bin/env bash
# attain bench under mpirun with 2 ranks: the ops sharded, one results file on rank 0; each rank's
# shard written op by op, a run killed mid-way resumed to the file an uninterrupted run gives.
# $1 = attain binary, $2 = mpirun.
set -euo pipefail
ATTAIN=$1
MPIRUN=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export XDG_CACHE_HOME=${XDG_CACHE_HOME_FOR_TESTS:-$(dirname "$ATTAIN")/.test-cache}
fail() { echo "FAIL: $*" >&2; exit 1; }
RUN=(bench --suite quick --sample 6 --backend reference,attain --max-seconds 0.01 --threads 1)
timeout 300 "$MPIRUN" -n 2 --oversubscribe "$ATTAIN" "${RUN[@]}" --out "$TMP/whole.json" > /dev/null 2>&1 \
  || fail "sharded run"
ls "$TMP"/whole.json.rank* 2>/dev/null && fail "a complete run leaves no shard files"
# Killed once rank 1's shard file holds an op, then resumed with the same command.
timeout 300 "$MPIRUN" -n 2 --oversubscribe "$ATTAIN" "${RUN[@]}" --out "$TMP/cut.json" > /dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  if [ -f "$TMP/cut.json.rank1of2" ] && python3 -c "import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))['results'] else 1)" "$TMP/cut.json.rank1of2" 2>/dev/null; then break; fi
  sleep 0.05
done
pkill -9 -f -- "--out $TMP/cut.json" || true
wait "$pid" 2>/dev/null || true
timeout 300 "$MPIRUN" -n 2 --oversubscribe "$ATTAIN" "${RUN[@]}" --out "$TMP/cut.json" --resume \
  > "$TMP/resume.out" 2>&1 || fail "resume: $(cat "$TMP/resume.out")"
python3 - "$TMP/whole.json" "$TMP/cut.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda d: [(r["op"]["spec"], r["backend"], r["status"]) for r in d["results"]]
assert key(a) == key(b), (key(a), key(b))
assert len(a["results"]) == 12 and a["config"]["ranks"] == 2, a["config"]
assert b.get("complete", True) is True
PY
ls "$TMP"/cut.json.rank* 2>/dev/null && fail "the resumed run leaves no shard files"
# Resuming a complete file runs nothing.
timeout 300 "$MPIRUN" -n 2 --oversubscribe "$ATTAIN" "${RUN[@]}" --out "$TMP/cut.json" --resume 2>&1 \
  | grep -q "is complete: nothing left to run" || fail "a complete file resumed"
echo "bench under mpirun: ok"
