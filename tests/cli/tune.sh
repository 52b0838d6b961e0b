#!/usr/bin/env bash
# attain tune fills the cache (every trial kept) and explains a choice; attain bench runs
# attain:auto beside the default (tuning what the cache lacks) and one layer end to end.
source "$(dirname "$0")/lib.sh"
export ATTAIN_TUNE_CACHE="$TMP/cache/tuning.json"
"$ATTAIN" tune --help | grep -q -- "--explain" || fail "tune --help lacks --explain"
"$ATTAIN" bench --help | grep -q -- "--layer" || fail "bench --help lacks --layer"

OPS=(--op gemm:m=1,n=64,k=512,dtype=bf16 --op batched_gemm:batch=16,m=4,n=32,k=64,dtype=fp32
     --op mla_decode:b=1,s=64,h=16,dtype=bf16)
"$ATTAIN" tune "${OPS[@]}" --threads 2 --budget 0.3 --top 3 --no-progress > "$TMP/t1"
grep -q "2 tuned, 0 already cached, 1 skipped" "$TMP/t1" || fail "tune summary: $(cat "$TMP/t1")"
grep -q "warm-cache dispatch" "$TMP/t1" || fail "tune does not report the dispatch cost"
[ -s "$ATTAIN_TUNE_CACHE" ] || fail "no cache file at $ATTAIN_TUNE_CACHE"
python3 - "$ATTAIN_TUNE_CACHE" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "attain.tuning/1", d["schema"]
assert len(d["entries"]) == 2, len(d["entries"])
for e in d["entries"]:
    assert e["best"] and len(e["trials"]) >= 2, e
    assert e["trials"][0]["median_s"] > 0
PY
# A second run finds them cached; --json has the same ops.
"$ATTAIN" tune "${OPS[@]}" --threads 2 --json > "$TMP/t2.json"
[ "$(json_get "$TMP/t2.json" "[o['status'] for o in d['ops']]")" = "['cached', 'cached', 'skipped']" ] ||
  fail "second tune run did not use the cache"

"$ATTAIN" tune --explain gemm:m=2,n=40,k=300,dtype=fp16 --threads 2 --budget 0.3 --top 3 > "$TMP/e"
for w in heuristic default "because   path=decode: M 2 <= " "measured search" "<- chosen" "chosen "; do
  grep -q -- "$w" "$TMP/e" || fail "--explain lacks '$w'"
done

# A corrupt cache: a warning, never a crash, and the next tuning rewrites it.
echo '{"schema": "attain.tuning/1", "entries": [' > "$ATTAIN_TUNE_CACHE"
"$ATTAIN" tune --op gemm:m=1,n=64,k=512,dtype=bf16 --threads 2 --budget 0.2 --top 2 \
  --no-progress > "$TMP/t3" 2> "$TMP/t3.err"
grep -q "tuning cache" "$TMP/t3.err" || fail "no warning for a corrupt cache: $(cat "$TMP/t3.err")"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$ATTAIN_TUNE_CACHE" || fail "cache not rebuilt"

# attain:auto beside the default, verified; unknown variants are refused.
# (--no-tune: the batched op's entry went with the corrupt file; the nearest shape or the cost
# model decides, and the test stays fast.)
"$ATTAIN" bench "${OPS[@]}" --backend attain,attain:auto --threads 2 --max-seconds 0.01 \
  --no-progress --no-tune --json > "$TMP/b.json"
python3 - "$TMP/b.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rs = d["results"]
assert sorted({r["backend"] for r in rs}) == ["attain", "attain:auto"]
assert all(r["status"] == "ok" and r["verified"] for r in rs), rs
assert "attain:auto/attain" in d["summary"]["speed_ratio"] or "attain/attain:auto" in d["summary"]["speed_ratio"], d["summary"]["speed_ratio"].keys()
PY
expect_error 2 "attain variants" -- "$ATTAIN" bench --op gemm:m=1,n=8,k=8,dtype=fp32 --backend attain:fast
expect_error 2 "MODEL:PHASE:TOKENS" -- "$ATTAIN" bench --layer llama-3.1-8b:decode
expect_error 2 "takes no --suite" -- "$ATTAIN" bench --layer llama-3.1-8b:decode:1 --suite quick

# One layer end to end (a small model file), grouped vs op by op, both verified.
cat > "$TMP/tiny.json" <<'JSON'
{"model_type":"deepseek_v3","hidden_size":256,"intermediate_size":512,"moe_intermediate_size":64,
 "num_hidden_layers":2,"first_k_dense_replace":1,"vocab_size":1000,"num_attention_heads":8,
 "num_key_value_heads":8,"n_routed_experts":16,"num_experts_per_tok":4,"n_shared_experts":1,
 "n_group":4,"topk_group":2,"routed_scaling_factor":2.5,"scoring_func":"sigmoid","q_lora_rank":128,
 "kv_lora_rank":512,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128}
JSON
"$ATTAIN" bench --layer "$TMP/tiny.json:decode:4" --context 256 --backend attain,attain:auto \
  --threads 2 --max-seconds 0.02 --no-tune --out "$TMP/l.json" > "$TMP/l"
grep -q "stage 5  router" "$TMP/l" || fail "layer listing: $(cat "$TMP/l")"
python3 - "$TMP/l.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "attain.layer/1"
r = {x["backend"]: x for x in d["results"]}
assert r["attain"]["status"] == "ok" and r["attain:auto"]["status"] == "ok", r
assert r["attain"]["verified"] and r["attain:auto"]["verified"]
assert r["attain:auto"]["steps"] < r["attain"]["steps"], r
assert r["attain:auto"]["speedup_vs_attain"] > 0
# Ten ops: the ceilings are measured again before and after, and the floor recomputed from them.
assert [c["when"] for c in d["checks"]] == ["start", "end"], d["checks"]
assert d["checked_roofline_floor_s"] > 0 and r["attain"]["checked_roofline_fraction"] > 0
PY
grep -q "Roofline floor against the highest of these ceilings" "$TMP/l" || fail "layer checks: $(cat "$TMP/l")"
echo ok
