#!/usr/bin/env bash
# The README's 5-minute tour, run as written: every command below must be a line of the tour
# ("$ build/attain ...") in README.md, and runs with only tiny settings appended (a small config
# written here instead of the copied one, --context 256, --max-seconds 0.01, --threads 1).
source "$(dirname "$0")/lib.sh"

TOUR=$(sed -n '/^## A 5-minute tour/,/^## Subcommands/p' "$ROOT/README.md")
[ -n "$TOUR" ] || fail "README.md has no '## A 5-minute tour' section"
# in_tour CMD: the tour shows CMD as one line (counted: the script must cover every line).
CHECKED=0
in_tour() {
  grep -qxF -- "\$ $1" <<<"$TOUR" || fail "README's tour has no line '\$ $1'"
  CHECKED=$((CHECKED + 1))
}
# tour CMD [TINY...]: CMD as the README writes it, with the tiny settings TINY appended; its
# stdout in $TMP/out.
tour() {
  local cmd=$1 rc=0
  shift
  in_tour "$cmd"
  local -a words
  read -ra words <<<"$cmd"
  "${words[@]}" "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
  [ "$rc" -eq 0 ] || fail "exit $rc: $cmd $* ; stderr: $(tail -5 "$TMP/err")"
}

# The tour runs where build/attain and my-model/config.json are: here, a folder of its own.
mkdir -p "$TMP/build" "$TMP/my-model"
ln -s "$ATTAIN" "$TMP/build/attain"
cd "$TMP"
in_tour "mkdir -p my-model && cp data/models/qwen3-8b.json my-model/config.json"
cat > my-model/config.json <<'JSON'
{"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
 "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 1024}
JSON

tour "build/attain catalog --model my-model/config.json --phase decode --tokens 8" --context 256
grep -q "^gemm:m=8,n=512,k=256,dtype=bf16 " "$TMP/out" || fail "catalog lacks the QKV op: $(cat "$TMP/out")"
grep -q "^batched_gemm:batch=16,m=2,n=256,k=64,dtype=bf16 " "$TMP/out" || fail "catalog lacks QK^T: $(cat "$TMP/out")"

tour "build/attain bench --model my-model/config.json --phase decode --tokens 8 --out my-model.json" \
  --context 256 --max-seconds 0.01 --threads 1
[ "$(json_get my-model.json 'sum(r["backend"] == "attain" and r["status"] == "ok" and r["verified"] for r in d["results"])')" = 6 ] \
  || fail "bench: attain did not run and verify the 6 ops: $(cat "$TMP/out")"

tour "build/attain report my-model.json -o my-model.html"
grep -q "<svg" my-model.html || fail "report: no chart in my-model.html"

tour "build/attain project --device h100-sxm --like my-model.json --model my-model/config.json --phase decode --tokens 8 -o my-model-h100.json" \
  --context 256
[ "$(json_get my-model-h100.json 'all(r["projected"] for r in d["results"]) and len(d["results"])')" = 6 ] \
  || fail "project: not 6 projected ops"
tour "build/attain compare my-model.json my-model-h100.json"
grep -q "^6 ops in common: A runs at .* of B's speed" "$TMP/out" || fail "compare with the projection: $(cat "$TMP/out")"

# Timings "measured on the H100": one CSV row per GEMM of the catalog.
"$ATTAIN" catalog --model my-model/config.json --phase decode --tokens 8 --context 256 --json > catalog.json
python3 - <<'PY'
import json
ops = [o for o in json.load(open("catalog.json")) if o["kind"] == "gemm"]
with open("h100-timings.csv", "w") as f:
    f.write("m,n,k,dtype,time_us\n")
    f.writelines(f"{o['m']},{o['n']},{o['k']},{o['dtype']},10\n" for o in ops)
PY
tour "build/attain import h100-timings.csv --device h100-sxm -o h100.json"
grep -q "imported 4 row" "$TMP/out" || fail "import: $(cat "$TMP/out")"
tour "build/attain compare my-model.json h100.json"
grep -q "^4 ops in common: A runs at .* of B's speed" "$TMP/out" || fail "compare with the import: $(cat "$TMP/out")"
# The portable runner on "the GPU host": here the CPU device (the last --device wins), with the
# real PyTorch where python3 has it, else the pure-Python stand-in.
tour "build/attain catalog --model my-model/config.json --phase decode --tokens 8 --json --out my-suite.json" \
  --context 256
ln -s "$ROOT/scripts" scripts
python3 -c "import torch" 2> /dev/null || export PYTHONPATH="$ROOT/tests/torch_shim${PYTHONPATH:+:$PYTHONPATH}"
tour "python3 scripts/torch_runner.py my-suite.json --device cuda --device-id h100-sxm --out h100-torch.json" \
  --device cpu --max-seconds 0.01 --min-reps 2 --flush-bytes 4096 --no-progress
[ "$(json_get h100-torch.json 'sum(r["status"] == "ok" and r["verified"] for r in d["results"])')" = 6 ] \
  || fail "torch runner: not 6 verified ops: $(cat "$TMP/err")"
tour "build/attain report my-model.json h100.json h100-torch.json -o chips.html"
grep -q "torch:cpu" chips.html || fail "report: the runner's series is missing from chips.html"
LINES=$(grep -c '^\$ ' <<<"$TOUR")
[ "$CHECKED" -eq "$LINES" ] || fail "README's tour has $LINES commands, this script runs $CHECKED"
echo "README tour: ok"
