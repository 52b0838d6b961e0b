#!/usr/bin/env bash
# Hostile input: endless, special and oversized files, outputs that name a directory, tuning-cache
# entries the engine must not run. Each case: a clear error (exit 2) or a warning, no hang, no
# temp file left behind.
source "$(dirname "$0")/lib.sh"
T="timeout 60"

# Files that are not regular files, or too large, are refused before they are read.
expect_error 2 "is not a regular file" -- $T "$ATTAIN" catalog --model /dev/zero --summary
expect_error 2 "is not a regular file" -- $T "$ATTAIN" report /dev/zero -o "$TMP/r.html"
expect_error 2 "is not a regular file" -- $T "$ATTAIN" compare /dev/zero /dev/zero
expect_error 2 "is not a regular file" -- $T "$ATTAIN" import /dev/zero --device h100-sxm -o "$TMP/i.json"
mkfifo "$TMP/fifo"
expect_error 2 "is not a regular file" -- $T "$ATTAIN" catalog --model "$TMP/fifo" --summary
head -c $((17 << 20)) /dev/zero | tr '\0' ' ' > "$TMP/big.json"
expect_error 2 "over the limit of 16 MiB" -- $T "$ATTAIN" catalog --model "$TMP/big.json" --summary
rm -f "$TMP/big.json"
expect_error 2 "cannot read model config" -- $T "$ATTAIN" catalog --model "$TMP/missing.json" --summary
# Found by the fuzzers: 2e8 groups (a row count per group: 1.6 GB before any check), and a
# results field that must be an integer holding 2e52 (converted to int: undefined).
expect_error 2 "groups=205421887 is more than 65536" -- "$ATTAIN" catalog \
  --op grouped_gemm:groups=205421887,m=3888,n=4,k=368,dtype=fp8,skew=1,layout=masked
expect_error 2 "field 'reps' is not an integer (2.2222222222222222e+52)" -- "$ATTAIN" report \
  "$ROOT/tests/fuzz/corpus/results/crash-float-to-int.json" -o "$TMP/f.html"
# A number past double's range (found by the fuzzers): bad input like any other JSON error.
printf '{"model_type":"llama","hidden_size":1e999}' > "$TMP/huge.json"
expect_error 2 "not valid JSON" -- "$ATTAIN" catalog --model "$TMP/huge.json" --summary

# An output that names a directory: refused, and nothing beside it.
mkdir -p "$TMP/outdir"
expect_error 2 "it is a directory" -- $T "$ATTAIN" catalog --op gemm:m=1,n=8,k=8,dtype=fp32 --out "$TMP/outdir"
$T "$ATTAIN" bench --op gemm:m=1,n=8,k=64,dtype=fp32 --backend attain --threads 1 --max-seconds 0.01 \
  --no-progress --no-recheck --out "$TMP/res.json" > /dev/null
expect_error 2 "it is a directory" -- $T "$ATTAIN" report "$TMP/res.json" -o "$TMP/outdir"
expect_error 2 "it is a directory" -- $T "$ATTAIN" cluster --days 1 --out "$TMP/outdir"
# Results and CSV rows the tables could not show: an unknown status, a time outside 1 ns..1 day.
python3 - "$TMP/res.json" "$TMP" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = dict(d["results"][0])
json.dump(dict(d, results=[dict(r, status="banana")]), open(sys.argv[2] + "/banana.json", "w"))
json.dump(dict(d, results=[dict(r, median_s=1e308)]), open(sys.argv[2] + "/slow.json", "w"))
PY
expect_error 2 "status 'banana' (known: ok" -- "$ATTAIN" report "$TMP/banana.json" -o "$TMP/b.html"
expect_error 2 "median_s 1e+308 outside" -- "$ATTAIN" compare "$TMP/slow.json" "$TMP/res.json"
printf 'm,n,k,dtype,time_us\n8,4096,4096,bf16,1e-320\n' > "$TMP/tiny.csv"
expect_error 2 "time_us 1e-320 outside" -- "$ATTAIN" import "$TMP/tiny.csv" --device h100-sxm -o "$TMP/t.json"
# A write the disk cannot take (a file-size limit stands in for a full disk): the run could not
# finish, exit 3, and neither the file nor its temp file is left.
expect_error 3 "cannot write '.*full.json': File too large" -- bash -c \
  'ulimit -f 8; trap "" XFSZ; exec "$0" catalog --suite llm-1055 --out "$1" > /dev/null' \
  "$ATTAIN" "$TMP/full.json"
[ ! -e "$TMP/full.json" ] || fail "a failed write left the file"
# The same limit on stdout: exit 3 as well.
expect_error 3 "File too large" -- bash -c \
  'ulimit -f 8; trap "" XFSZ; exec "$0" catalog --suite llm-1055 > "$1"' "$ATTAIN" "$TMP/stdout.txt"
leftovers=$(find "$TMP" -name "*.tmp*" | head -5)
[ -z "$leftovers" ] || fail "temp files left behind: $leftovers"

# Numbers that would run without end, or allocate without bound: refused with their range.
expect_error 2 "days inf outside 0..3650" -- $T "$ATTAIN" cluster --days inf
expect_error 2 "days 1e+09 outside 0..3650" -- $T "$ATTAIN" cluster --days 1e9
expect_error 2 "takes more than 3650 days" -- $T "$ATTAIN" cluster --days 0 --tokens 1e30
expect_error 2 "chip count 1000000000000 outside" -- $T "$ATTAIN" cluster --sweep 1000000000000
expect_error 2 "chips 1000000000000 outside" -- $T "$ATTAIN" cluster --chips 1000000000000
expect_error 2 "runs 1000000000 outside" -- $T "$ATTAIN" cluster --runs 1000000000
expect_error 2 "detect-min -5 must be 0 or more" -- $T "$ATTAIN" cluster --detect-min -5
expect_error 2 "peak-tflops 0 must be positive" -- $T "$ATTAIN" cluster --peak-tflops 0
expect_error 2 "reps 1000000000 outside" -- $T "$ATTAIN" moe --reps 1000000000
expect_error 2 "skew must be 0 or more" -- $T "$ATTAIN" moe --skew -1
expect_error 2 "'nope' is not a backend" -- $T "$ATTAIN" moe --backend nope
# Empty names, inconsistent configs, environment overrides, an op larger than memory.
expect_error 2 "--suite needs a value" -- "$ATTAIN" bench --suite ""
expect_error 2 "--model needs a value" -- "$ATTAIN" catalog --model ""
printf '{"model_type":"llama","hidden_size":4097,"intermediate_size":512,"num_hidden_layers":2,
  "vocab_size":1000,"num_attention_heads":32,"num_key_value_heads":8}' > "$TMP/odd.json"
expect_error 2 "not a multiple of num_attention_heads 32" -- "$ATTAIN" catalog --model "$TMP/odd.json"
expect_error 2 "ATTAIN_ISA=garbage: expected" -- env ATTAIN_ISA=garbage "$ATTAIN" mla --batch 1 --seqlen 64 --heads 16
expect_error 2 "ATTAIN_ISA=avx9: expected scalar, avx2, avx512 or avx512_bf16" -- env ATTAIN_ISA=avx9 "$ATTAIN" mla --batch 1 --seqlen 64 --heads 16
expect_error 2 "GiB of memory" -- $T "$ATTAIN" bench --op gemm:m=65536,n=65536,k=65536,dtype=fp32 --no-progress
expect_error 2 "min-reps -5 outside" -- "$ATTAIN" mla -b 1 -s 64 --heads 16 --min-reps -5
expect_error 2 "separate-kv-max-gb nan must be positive" -- "$ATTAIN" mla -b 1 -s 64 --heads 16 --separate-kv-max-gb nan
expect_error 2 "GiB of memory" -- $T "$ATTAIN" mla -b 1000000 -s 100000 --heads 16
# An error that quotes a huge input: one line, and the input cut.
expect_error 2 "x\.\.\.': missing 'dtype'" -- "$ATTAIN" catalog --op "gemm:$(head -c 100000 /dev/zero | tr '\0' x)=1"
[ "$(wc -l < "$TMP/err")" -eq 1 ] || fail "an input error takes more than one line"
[ "$(wc -c < "$TMP/err")" -lt 600 ] || fail "an input error echoes its input back"
# Parse errors: one line, exit 2, at most 160 characters of the input quoted.
expect_error 2 "not expected: --nope" -- "$ATTAIN" bench --nope
expect_error 2 "Could not convert" -- "$ATTAIN" bench --threads abc
expect_error 2 "(see --help)" -- "$ATTAIN" catalog --sample "$(head -c 100000 /dev/zero | tr '\0' 9)"
[ "$(wc -l < "$TMP/err")" -eq 1 ] || fail "a parse error takes more than one line"
[ "$(wc -c < "$TMP/err")" -lt 400 ] || fail "a parse error echoes its input back"

# A tuning-cache entry outside the engine's ranges (it crashed with SIGFPE, or hung): dropped with
# a warning, never run; the op runs on the model's schedule and verifies.
export ATTAIN_TUNE_CACHE="$TMP/tuning.json"
$T "$ATTAIN" tune --op gemm:m=64,n=64,k=128,dtype=fp32 --threads 1 --budget 0.2 --no-progress > /dev/null
python3 - "$ATTAIN_TUNE_CACHE" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["entries"][0]["best"] = "path=packed mc=2147483647 nc=2147483647 kc=2147483647"
json.dump(d, open(sys.argv[1], "w"))
PY
$T "$ATTAIN" bench --op gemm:m=64,n=64,k=128,dtype=fp32 --backend attain:auto --threads 1 --no-tune \
  --max-seconds 0.01 --no-progress --no-recheck --json > "$TMP/auto.json" 2> "$TMP/auto.err" ||
  fail "bench with a hostile cache entry: $(cat "$TMP/auto.err")"
grep -q "1 entry dropped, never run" "$TMP/auto.err" || fail "no warning: $(cat "$TMP/auto.err")"
[ "$(json_get "$TMP/auto.json" "d['results'][0]['status']")" = ok ] || fail "the op did not run"
$T "$ATTAIN" tune --op gemm:m=64,n=64,k=128,dtype=fp32 --threads 1 --budget 0.2 --no-progress \
  > "$TMP/tune.out" 2>&1
grep -q "1 tuned" "$TMP/tune.out" || fail "tune did not measure the dropped entry again: $(cat "$TMP/tune.out")"
echo "bad_input CLI: ok"
