#!/usr/bin/env bash
# The program as a whole: help, version, unknown subcommands.
source "$(dirname "$0")/lib.sh"
"$ATTAIN" --help | grep -q "catalog" || fail "help lists no subcommands"
"$ATTAIN" --version | grep -q "^attain " || fail "version"
for sub in $("$ATTAIN" --help | awk 'tolower($0) ~ /^subcommands:/{f=1;next} f && NF {print $1}'); do
  "$ATTAIN" "$sub" --help >/dev/null || fail "$sub --help"
done
rc=0; "$ATTAIN" nope >/dev/null 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "an unknown subcommand must fail"
echo "errors CLI: ok"
