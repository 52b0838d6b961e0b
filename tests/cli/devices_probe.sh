#!/usr/bin/env bash
# attain devices and attain probe.
source "$(dirname "$0")/lib.sh"
"$ATTAIN" devices | grep -q "^h200" || fail "devices lacks h200"
"$ATTAIN" devices --json > "$TMP/d.json"
python3 - "$TMP/d.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ids = {x["id"] for x in d}
for want in ["h100-sxm", "h200", "b200", "b300", "ascend-910b", "ascend-910c", "ascend-950pr", "ascend-950dt", "mi300x"]:
    assert want in ids, want
for x in d:
    assert x["sources"], x["id"]
PY
"$ATTAIN" probe --json > "$TMP/p.json"
python3 - "$TMP/p.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["fma_gflops_1t"] > 0 and p["read_gbps_all"] > 0 and p["copy_gbps_1t"] > 0, p
assert "avx2" in p["isa"]
PY
"$ATTAIN" probe | grep -q "fp32 FMA" || fail "probe text"
echo "devices/probe CLI: ok"
