#!/usr/bin/env bash
# attain catalog: listing, JSON fields, summary, model configs, errors.
source "$(dirname "$0")/lib.sh"
"$ATTAIN" catalog --help | grep -q -- "--summary" || fail "help lacks --summary"
"$ATTAIN" catalog --json --out "$TMP/all.json" >/dev/null
[ "$(json_get "$TMP/all.json" 'len(d)')" = 1055 ] || fail "llm-1055 does not hold 1055 ops"
json_get "$TMP/all.json" '[k for k in ["spec","kind","m","n","k","dtype","flops","bytes","model","layer","phase","tokens","count"] if k not in d[0]]' | grep -q '^\[\]$' || fail "catalog JSON misses fields"
json_get "$TMP/all.json" 'len([o for o in d if o["kind"]=="grouped_gemm" and "groups" not in o])' | grep -q '^0$' || fail "grouped ops without groups"
"$ATTAIN" catalog --summary | grep -q "^1055 ops" || fail "summary count"
"$ATTAIN" catalog --suite quick | tail -1 | grep -Eq "^[0-9]+ ops" || fail "quick listing"
"$ATTAIN" catalog --model deepseek-v3 --phase decode --tokens 8 --context 4096 --dtype fp8 | grep -q "gemm:m=8,n=2112,k=7168,dtype=fp8" || fail "deepseek decode shape"
"$ATTAIN" catalog --model "$ROOT/data/models/mixtral-8x7b.json" --phase prefill --tokens 512 | grep -q "grouped_gemm:groups=8,m=128,n=28672,k=4096" || fail "mixtral experts"
"$ATTAIN" catalog --suite llm-1055 --sample 40 --json | python3 -c "import json,sys; d=json.load(sys.stdin); assert len(d)==40, len(d)"
printf '{"model_type": "llama", "hidden_size": 64}' > "$TMP/bad.json"
expect_error 2 "missing field 'num_hidden_layers'" -- "$ATTAIN" catalog --model "$TMP/bad.json"
printf '{"model_type": "llama", "hidden_size": 64' > "$TMP/trunc.json"
expect_error 2 "not valid JSON" -- "$ATTAIN" catalog --model "$TMP/trunc.json"
# A family attain has no rule for: exit 2 naming model_type and the supported ones; with
# --assume-llama a config with the Llama fields reads as Llama-like, and the output says so.
printf '{"model_type": "my_llama", "hidden_size": 1024, "num_hidden_layers": 4, "vocab_size": 1000, "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 2816}' > "$TMP/mine.json"
expect_error 2 "unknown model_type 'my_llama' (supported: llama, mistral" -- "$ATTAIN" catalog --model "$TMP/mine.json"
"$ATTAIN" catalog --model "$TMP/mine.json" --assume-llama --phase decode --tokens 1 > "$TMP/mine.txt" 2> "$TMP/mine.err"
grep -q "gemm:m=1,n=1536,k=1024,dtype=bf16" "$TMP/mine.txt" || fail "assume-llama qkv: $(cat "$TMP/mine.txt")"
grep -q "read as Llama-like" "$TMP/mine.err" || fail "assume-llama not said: $(cat "$TMP/mine.err")"
# A multimodal config: the language model's ops, the vision tower said to be out of scope.
"$ATTAIN" catalog --model gemma-3-27b-it --phase decode --tokens 1 --context 4096 > "$TMP/g3.txt" 2> "$TMP/g3.err"
grep -q "batched_gemm:batch=16,m=2,n=1024,k=128,dtype=bf16" "$TMP/g3.txt" || fail "gemma3 window"
grep -q "vision tower is out of scope" "$TMP/g3.err" || fail "vision tower not said"
# The config's dtype is the default: fp8 block scales for DeepSeek-V3.
"$ATTAIN" catalog --model deepseek-v3 --phase decode --tokens 8 | grep -q "gemm:m=8,n=2112,k=7168,dtype=fp8" || fail "deepseek default dtype"
printf '{"model_type": "phi3", "hidden_size": 3072, "num_hidden_layers": 2, "vocab_size": 10, "num_attention_heads": 32, "head_dim": 128, "intermediate_size": 64}' > "$TMP/phi.json"
expect_error 2 "head_dim 128 x num_attention_heads 32 = 4096" -- "$ATTAIN" catalog --model "$TMP/phi.json"
expect_error 2 "unknown suite" -- "$ATTAIN" catalog --suite nope
expect_error 2 "unknown model" -- "$ATTAIN" catalog --model nope
expect_error 2 "unknown dtype" -- "$ATTAIN" catalog --model llama-3.1-8b --dtype int3
expect_error 2 "one of" -- "$ATTAIN" catalog --suite quick --model llama-3.1-8b
# The suite as CSV, run "elsewhere" (every time_us filled in), imported back: the same 1,055
# specs, byte for byte, in the same order.
"$ATTAIN" catalog --csv --out "$TMP/all.csv" > /dev/null
head -1 "$TMP/all.csv" | grep -q "^spec,.*,time_us$" || fail "CSV header: $(head -1 "$TMP/all.csv")"
[ "$(($(wc -l < "$TMP/all.csv") - 1))" = 1055 ] || fail "CSV rows"
sed '1!s/$/1000000/' "$TMP/all.csv" > "$TMP/timed.csv"
"$ATTAIN" import "$TMP/timed.csv" --device h100-sxm -o "$TMP/imp.json" > "$TMP/imp.txt" 2> "$TMP/imp.err"
python3 - "$TMP/all.json" "$TMP/imp.json" <<'PY'
import json, sys
want = [o["spec"] for o in json.load(open(sys.argv[1]))]
got = [r["op"]["spec"] for r in json.load(open(sys.argv[2]))["results"]]
assert got == want, [(a, b) for a, b in zip(want, got) if a != b][:3] or (len(want), len(got))
PY
grep -q "ignored columns: flops, bytes" "$TMP/imp.txt" || fail "ignored columns not said: $(cat "$TMP/imp.txt")"
expect_error 2 "known: table, json, csv" -- "$ATTAIN" catalog --format xml
expect_error 2 "choose one output" -- "$ATTAIN" catalog --csv --json
echo "catalog CLI: ok"
