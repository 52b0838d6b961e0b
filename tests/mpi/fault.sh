#!/usr/bin/env bash
# A rank that hangs (SIGSTOP) or dies (SIGKILL) mid-run: the others fail within the timeout with
# an error naming it, never a hang. $1 = attain binary, $2 = mpirun.
set -euo pipefail
ATTAIN=$1
MPIRUN=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export XDG_CACHE_HOME=${XDG_CACHE_HOME_FOR_TESTS:-$(dirname "$ATTAIN")/.test-cache}
fail() { echo "FAIL: $*" >&2; exit 1; }
ARGS=(moe --tokens 16 --hidden 256 --experts 4 --topk 2 --reps 2 --align 8 --no-overlap --no-contention --timeout 2)

for mode in normal low-latency; do
  # Hangs: rank 0 times out naming rank 1 and exits 3; mpirun then takes the job down.
  start=$SECONDS
  rc=0
  timeout 150 "$MPIRUN" -n 2 --oversubscribe "$ATTAIN" "${ARGS[@]}" --mode $mode --inject-fault stop:1 \
    >"$TMP/out" 2>"$TMP/err" || rc=$?
  [ $rc -ne 124 ] || fail "$mode: a hung rank hung the job"
  [ $rc -eq 3 ] || fail "$mode: a hung rank: exit $rc (wanted 3, a run that could not finish)"
  grep -q "rank 1 did not answer within 2 s" "$TMP/err" || fail "$mode stop: stderr lacks the timeout: $(cat "$TMP/err")"
  [ $((SECONDS - start)) -lt 120 ] || fail "$mode stop: took $((SECONDS - start)) s"

  # Dies: with --enable-recovery mpirun lets the survivors run on, and they time out by themselves
  # (mpirun then exits 0 whatever the ranks' status: the message is what is checked).
  rc=0
  timeout 150 "$MPIRUN" -n 2 --oversubscribe --enable-recovery "$ATTAIN" "${ARGS[@]}" --mode $mode \
    --inject-fault kill:1 >"$TMP/out" 2>"$TMP/err" || rc=$?
  [ $rc -ne 124 ] || fail "$mode: a killed rank hung the job"
  grep -q "rank 1 did not answer within 2 s" "$TMP/err" || fail "$mode kill: stderr lacks the timeout: $(cat "$TMP/err")"
done

# 4 ranks, rank 2 hangs: someone names rank 2.
rc=0
timeout 150 "$MPIRUN" -n 4 --oversubscribe "$ATTAIN" "${ARGS[@]}" --inject-fault stop:2 >"$TMP/out" 2>"$TMP/err" || rc=$?
[ $rc -eq 3 ] || fail "4 ranks: exit $rc (wanted 3)"
grep -q "rank 2 did not answer" "$TMP/err" || fail "4 ranks: stderr lacks rank 2: $(cat "$TMP/err")"
echo "fault handling: ok"
