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
    for dt in ["fp32", "bf16", "fp16", "fp8", "fp4"]:  # a number or a stated gap, never blank
        v = x["peak_tflops"][dt]
        assert isinstance(v, (int, float)) or v in ("not published", "not supported"), (x["id"], dt, v)
pr = next(x for x in d if x["id"] == "ascend-950pr")
assert pr["peak_tflops"]["bf16"] == "not published", pr["peak_tflops"]
PY
"$ATTAIN" devices | grep -E "^ascend-950pr .* n/p .* 1000 " > /dev/null || fail "devices table lacks n/p for the 950PR: $("$ATTAIN" devices)"
"$ATTAIN" probe --json > "$TMP/p.json"
python3 - "$TMP/p.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["fma_gflops_1t"] > 0 and p["read_gbps_all"] > 0 and p["copy_gbps_1t"] > 0, p
assert "avx2" in p["isa"]
PY
"$ATTAIN" probe | grep -q "fp32 FMA" || fail "probe text"
echo "devices/probe CLI: ok"
