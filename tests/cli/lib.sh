# Shared by the CLI tests: $1 = attain binary, $2 = repo root.
set -euo pipefail
ATTAIN=$1
ROOT=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# One probe cache for all CLI tests of this build (the probe measures once).
export XDG_CACHE_HOME=${XDG_CACHE_HOME_FOR_TESTS:-$(dirname "$ATTAIN")/.test-cache}
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_error CODE PATTERN -- command...: the command must exit with CODE and print PATTERN on stderr.
expect_error() {
  local code=$1 pattern=$2; shift 3
  local rc=0
  "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
  [ "$rc" -eq "$code" ] || fail "exit $rc (wanted $code): $* ; stderr: $(cat "$TMP/err")"
  grep -q -- "$pattern" "$TMP/err" || fail "stderr lacks '$pattern': $* ; stderr: $(cat "$TMP/err")"
}
json_get() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
