#!/usr/bin/env bash
# Every JSON file kind attain writes, produced by the real program and checked against its
# JSON Schema in docs/schemas/ (scripts/check-schemas.py, python3-jsonschema).
source "$(dirname "$0")/lib.sh"
# The python that has jsonschema: the first python3 on PATH, else Debian's.
PY=python3
python3 -c "import jsonschema" 2> /dev/null || PY=/usr/bin/python3
CHECK=("$ROOT/scripts/check-schemas.py")
"$ATTAIN" bench --op gemm:m=3,n=17,k=33,dtype=fp32 --backend attain,reference --threads 1 \
  --max-seconds 0.01 --out "$TMP/results.json" > /dev/null
"$ATTAIN" mla --batch 2 --seqlen 70 --heads 2 --varlen --threads 1 --max-seconds 0.01 \
  --min-reps 2 --hot --out "$TMP/mla.json" > /dev/null
"$ATTAIN" moe --tokens 8 --hidden 128 --experts 4 --topk 2 --inter 16 --reps 2 --align 8 \
  --backend reference --no-progress --out "$TMP/moe.json" > /dev/null
cat > "$TMP/tiny.json" <<'JSON'
{"model_type":"llama","hidden_size":256,"intermediate_size":512,"num_hidden_layers":2,
 "vocab_size":1000,"num_attention_heads":8,"num_key_value_heads":2}
JSON
"$ATTAIN" bench --layer "$TMP/tiny.json:decode:2" --context 64 --backend attain,attain:auto \
  --threads 1 --max-seconds 0.01 --no-tune --recheck --out "$TMP/layer.json" > /dev/null
ATTAIN_TUNE_CACHE="$TMP/tuning.json" "$ATTAIN" tune --op gemm:m=2,n=64,k=64,dtype=fp32 \
  --threads 1 --budget 0.1 --top 2 --no-progress > /dev/null
"$ATTAIN" cluster --runs 2 --days 2 --target-ettr 0.9 --efficiency-from "$ROOT/docs/results/gemm-h200-cublas-2026-11-29.json" --out "$TMP/cluster.json" > /dev/null
"$ATTAIN" cluster --sweep 1000,4000 --runs 2 --days 2 --target-ettr 0.9 --out "$TMP/sweep.json" > /dev/null
FILES=(results mla moe layer tuning cluster sweep)
"$PY" "${CHECK[@]}" $(printf "$TMP/%s.json " "${FILES[@]}") || fail "a file does not match its schema"
# The check itself fails: a field of the wrong type, and a file that names no schema.
python3 - "$TMP/mla.json" "$TMP/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["threads"] = "two"
json.dump(d, open(sys.argv[2], "w"))
PY
! "$PY" "${CHECK[@]}" "$TMP/bad.json" 2> "$TMP/err" || fail "a wrong type passed"
grep -q "threads" "$TMP/err" || fail "the error does not name the field: $(cat "$TMP/err")"
echo '{"x": 1}' > "$TMP/none.json"
! "$PY" "${CHECK[@]}" "$TMP/none.json" 2> /dev/null || fail "a file without a schema passed"
echo "schemas: ok"
