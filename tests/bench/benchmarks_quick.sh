#!/usr/bin/env bash
# Every CPU benchmark once with --quick: it runs to the end, its JSON parses and carries its
# figures, and a bad flag is refused with exit code 2 and the flag named. Figures from these runs
# mean nothing (tiny sizes, and under the sanitizers); they show the benchmarks still work.
#   benchmarks_quick.sh BENCH_DIR PAGEDLLM WORK_DIR
set -euo pipefail
bench_dir="$1"
pagedllm="$2"
work="$3"
rm -rf "$work" && mkdir -p "$work"
export PAGEDLLM_CACHE="$work/cache"  # pagedllm writes the embedded tiny model here, for bench_cpu_decode
fail() { echo "FAIL: $*" >&2; exit 1; }

# check NAME JSON_FILE PYTHON_EXPRESSION: the expression over the document d must be True.
check() {
  local verdict
  verdict="$(python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($3)" "$2")" ||
    fail "$1: $2 is not JSON"
  [ "$verdict" = "True" ] || fail "$1: $3 does not hold for $2"
  echo "ok: $1"
}

"$bench_dir/bench_kv" --quick --json "$work/kv.json" > "$work/kv.txt"
check bench_kv "$work/kv.json" \
  "d['benchmark'] == 'bench_kv' and d['config']['quick'] and len(d['ops']) > 0 and d['ops'][0]['pagedllm_ns'] > 0 and len(d['decode_step']['variants']) == 3"

"$bench_dir/bench_scheduler" --quick --json "$work/scheduler.json" > "$work/scheduler.txt"
check bench_scheduler "$work/scheduler.json" \
  "[s['key'] for s in d['sections']] == ['decode', 'mixed', 'pressure'] and all(s['plans_identical'] for s in d['sections']) and d['floor_p50_us'] > 0"

"$bench_dir/bench_sim" --quick --json "$work/sim.json" > "$work/sim.txt"
check bench_sim "$work/sim.json" \
  "[t['key'] for t in d['traces']] == ['azure', 'sharegpt'] and all(t['skipped'] or (t['fingerprints_agree'] and t['runs'][0]['finished'] > 0) for t in d['traces'])"

"$pagedllm" inspect --model tiny > /dev/null
tiny_dir="$(dirname "$(find "$PAGEDLLM_CACHE" -name config.json | head -n 1)")"
[ -f "$tiny_dir/config.json" ] || fail "pagedllm did not write the tiny model into $PAGEDLLM_CACHE"
"$bench_dir/bench_cpu_decode" --model "$tiny_dir" --quick --threads 1 --json > "$work/cpu_decode.json" 2> "$work/cpu_decode.txt"
check bench_cpu_decode "$work/cpu_decode.json" \
  "d['bench'] == 'bench_cpu_decode' and d['steps'] == 4 and d['decode_tokens_per_s'] > 0 and d['ratio_to_mem_floor'] > 0"

"$bench_dir/bench_structured" --quick --tokenizer "$tiny_dir" --json "$work/structured.json" > "$work/structured.txt"
check bench_structured "$work/structured.json" \
  "[r['constraint'] for r in d['results']] == ['pydantic_record', 'tool_arguments', 'json_object', 'regex_date_time', 'gbnf_json'] and all(r['steps'] > 0 and r['cached_us_p50'] > 0 for r in d['results'])"

for bench in bench_kv bench_scheduler bench_sim bench_cpu_decode bench_structured; do
  status=0
  "$bench_dir/$bench" --no-such-flag > /dev/null 2> "$work/$bench.err" || status=$?
  [ "$status" = 2 ] || fail "$bench --no-such-flag: exit code $status, expected 2"
  grep -q "unknown flag '--no-such-flag'" "$work/$bench.err" || fail "$bench: the bad flag is not named: $(cat "$work/$bench.err")"
done
echo "ok: a bad flag is refused by every benchmark (exit code 2, named)"
