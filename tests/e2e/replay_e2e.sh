#!/usr/bin/env bash
# End to end through the binary: trace synth / convert / stats, replay on cpu and sim of the
# committed traces, preemption in both modes, bad input (a malformed line is reported with file,
# line and field, and the rest of the trace still runs; --strict stops), the lockstep check,
# simulate (routers, the contiguous allocator), plan (in parallel, in shards, merged), and a
# measured profile driving all three. With a SECTION named it runs that one alone (CTest runs
# each section as its own test, side by side); with none, all of them in order.
#   tests/e2e/replay_e2e.sh PAGEDLLM_BINARY SOURCE_DIR [SECTION]
set -euo pipefail
pagedllm="$1"
source_dir="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PAGEDLLM_CACHE="$work/cache"  # the tiny model is written here on first use

fail() { echo "FAILED: $*" >&2; exit 1; }
# json FILE EXPR: prints a Python expression over the parsed document `d`.
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
expect() {  # expect DESCRIPTION ACTUAL EXPECTED
  [ "$2" == "$3" ] || fail "$1: got '$2', expected '$3'"
  echo "ok: $1 = $3"
}

section_replay() {
  echo "--- synth is deterministic"
  "$pagedllm" trace synth -n 50 --request-rate 5 --seed 3 -o "$work/a.jsonl" 2>/dev/null
  "$pagedllm" trace synth -n 50 --request-rate 5 --seed 3 -o "$work/b.jsonl" 2>/dev/null
  "$pagedllm" trace synth -n 50 --request-rate 5 --seed 4 -o "$work/c.jsonl" 2>/dev/null
  cmp -s <(tail -n +2 "$work/a.jsonl") <(tail -n +2 "$work/b.jsonl") || fail "same seed, different traces"
  ! cmp -s <(tail -n +2 "$work/a.jsonl") <(tail -n +2 "$work/c.jsonl") || fail "different seeds, same trace"
  "$pagedllm" trace stats --json "$work/a.jsonl" > "$work/stats.json"
  expect "stats: requests" "$(json "$work/stats.json" "d['num_requests']")" 50

  echo "--- replay on cpu: a committed ShareGPT-like trace"
  "$pagedllm" replay --trace "$source_dir/traces/sharegpt_like.jsonl" --max-requests 24 --threads 1 -q \
    --goodput ttft:1000 -o "$work/cpu.json" > "$work/cpu.txt"
  grep -q "Serving Benchmark Result" "$work/cpu.txt" || fail "no summary printed"
  expect "cpu: completed" "$(json "$work/cpu.json" "d['metrics']['completed']")" 24
  expect "cpu: failed" "$(json "$work/cpu.json" "d['metrics']['failed']")" 0
  expect "cpu: per-request records" "$(json "$work/cpu.json" "len(d['requests'])")" 24
  expect "cpu: output tokens as the trace asks" "$(json "$work/cpu.json" "d['metrics']['total_output_tokens'] > 0 and all(r['output_tokens'] > 0 for r in d['requests'])")" True

  echo "--- replay on sim: the committed Mooncake-style trace shares prefixes"
  "$pagedllm" replay --trace "$source_dir/traces/mooncake_like.jsonl" --executor sim --sim-model llama-3-8b \
    --hardware h100-sxm -q -o "$work/sim.json" > /dev/null
  expect "sim: every request completed" \
    "$(json "$work/sim.json" "d['metrics']['completed'] == d['trace']['requests_accepted'] - d['trace']['rejected_over_length']")" True
  expect "sim: prefix cache hits" "$(json "$work/sim.json" "d['engine']['prefix_hit_rate'] > 0.2")" True

  echo "--- preemption in both modes, nothing lost"
  for mode in swap recompute; do
    "$pagedllm" replay --trace "$source_dir/traces/sharegpt_like.jsonl" --max-requests 40 --time fast --threads 1 -q \
      --num-gpu-blocks-override 96 --preemption-mode "$mode" -o "$work/$mode.json" > /dev/null
    expect "$mode: completed" "$(json "$work/$mode.json" "d['metrics']['completed']")" 40
    expect "$mode: preempted" "$(json "$work/$mode.json" "d['engine']['preemptions_$mode'] > 0")" True
  done

  echo "--- a malformed line is reported and skipped; the rest runs"
  cat > "$work/bad.jsonl" <<'TRACE'
{"arrival_time": 0.0, "prompt_len": 12, "output_len": 4}
{"arrival_time": 0.1, "prompt_len": 12, "output_len": -4}
{"arrival_time": 0.2, "prompt_len": 12, "output_len": 4}
{"arrival_time": 0.3, "prompt_len": 5000, "output_len": 4}
TRACE
  "$pagedllm" replay --trace "$work/bad.jsonl" --threads 1 -q --over-length reject -o "$work/bad.json" \
    > /dev/null 2> "$work/bad.err"
  grep -q "bad.jsonl:2: output_len" "$work/bad.err" || fail "no file:line: field in: $(cat "$work/bad.err")"
  grep -q "bad.jsonl:4: prompt_len" "$work/bad.err" || fail "over-length request not named: $(cat "$work/bad.err")"
  expect "bad: completed" "$(json "$work/bad.json" "d['metrics']['completed']")" 2
  expect "bad: skipped lines" "$(json "$work/bad.json" "d['trace']['lines_skipped']")" 1
  expect "bad: rejected for length" "$(json "$work/bad.json" "d['trace']['rejected_over_length']")" 1
  if "$pagedllm" replay --trace "$work/bad.jsonl" --strict -q > /dev/null 2> "$work/strict.err"; then
    fail "--strict accepted a malformed line"
  fi
  grep -q "bad.jsonl:2: output_len" "$work/strict.err" || fail "--strict error lacks file:line: field"
  echo "ok: --strict stops at the bad line"
}

section_check() {
  echo "--- check: cpu and sim in lockstep write identical KV event logs, through preemption"
  for mode in swap recompute; do
    "$pagedllm" check --trace "$source_dir/traces/mooncake_like.jsonl" --max-requests 40 --rate-scale 50 \
      --num-gpu-blocks-override 120 --threads 1 --preemption-mode "$mode" > "$work/check_$mode.txt"
    grep -q "ok: sim vs cpu: KV event logs identical" "$work/check_$mode.txt" || fail "check $mode: $(cat "$work/check_$mode.txt")"
    preempted=$(sed -n "s/.*sim .*preemptions \([0-9]*\) recompute \/ \([0-9]*\) swap.*/\1 \2/p" "$work/check_$mode.txt")
    [ "$mode" == swap ] && count=${preempted#* } || count=${preempted% *}
    [ "${count:-0}" -gt 0 ] || fail "check $mode: no $mode preemption ($preempted)"
    echo "ok: check under $mode preemption ($count)"
  done

  echo "--- check: a sliding-window model (blocks before the window released) in lockstep, through preemption"
  "$pagedllm" make-model --out "$work/tiny_window16" --sliding-window 16 > /dev/null
  mkdir -p "$work/window_events"
  for mode in swap recompute; do
    "$pagedllm" check --model "$work/tiny_window16" --trace "$source_dir/traces/mooncake_like.jsonl" --max-requests 40 \
      --rate-scale 50 --num-gpu-blocks-override 10 --max-num-batched-tokens 16 --threads 1 --preemption-mode "$mode" \
      --kv-events-dir "$work/window_events" > "$work/check_window_$mode.txt"
    grep -q "ok: sim vs cpu: KV event logs identical" "$work/check_window_$mode.txt" ||
      fail "windowed check $mode: $(cat "$work/check_window_$mode.txt")"
    grep -q '"op":"release_window"' "$work/window_events/cpu.jsonl" || fail "windowed check $mode: no block released"
    preempted=$(sed -n "s/.*sim .*preemptions \([0-9]*\) recompute \/ \([0-9]*\) swap.*/\1 \2/p" "$work/check_window_$mode.txt")
    [ "$mode" == swap ] && count=${preempted#* } || count=${preempted% *}
    [ "${count:-0}" -gt 0 ] || fail "windowed check $mode: no $mode preemption ($preempted)"
    echo "ok: windowed check under $mode preemption ($count)"
  done

  echo "--- check: speculative decoding in lockstep (the token script decides acceptance), through preemption"
  # swap: n-gram proposals over the script (it picks among the tiny model's 943 tokens, so it
  # rarely agrees: rejection and rollback); recompute: the simulator's drafts and acceptance rates
  # (most drafts keep some proposals).
  mkdir -p "$work/spec_events"
  for mode in swap recompute; do
    if [ "$mode" == swap ]; then
      spec='{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 1, "prompt_lookup_max": 3,
             "disable_by_batch_size": null}'
      blocks=120
    else
      spec='{"method": "ngram", "num_speculative_tokens": 3, "simulated_draft_rate": 0.5,
             "simulated_acceptance": [0.7, 0.5, 0.3], "disable_by_batch_size": null}'
      blocks=80
    fi
    "$pagedllm" check --trace "$source_dir/traces/mooncake_like.jsonl" --max-requests 40 --rate-scale 50 \
      --num-gpu-blocks-override "$blocks" --threads 1 --preemption-mode "$mode" --kv-events-dir "$work/spec_events" \
      --speculative-config "$spec" > "$work/check_spec_$mode.txt"
    grep -q "ok: sim vs cpu: KV event logs identical" "$work/check_spec_$mode.txt" ||
      fail "speculative check $mode: $(cat "$work/check_spec_$mode.txt")"
    settled=$(grep -c '"op":"settle"' "$work/spec_events/cpu.jsonl" || true)
    kept=$(grep -c '"op":"settle","seq":[0-9]*,"accepted":[1-9]' "$work/spec_events/cpu.jsonl" || true)
    [ "${settled:-0}" -gt 0 ] || fail "speculative check $mode: no verify pass settled"
    if [ "$mode" == recompute ] && [ $((kept * 2)) -lt "$settled" ]; then
      fail "speculative check $mode: $kept of $settled verify passes kept proposals (simulated rates 0.7 / 0.5 / 0.3)"
    fi
    preempted=$(sed -n "s/.*sim .*preemptions \([0-9]*\) recompute \/ \([0-9]*\) swap.*/\1 \2/p" "$work/check_spec_$mode.txt")
    [ "$mode" == swap ] && count=${preempted#* } || count=${preempted% *}
    [ "${count:-0}" -gt 0 ] || fail "speculative check $mode: no $mode preemption ($preempted)"
    echo "ok: speculative check under $mode preemption ($count; $settled verify passes settled, $kept keeping proposals)"
  done

  # The simulator needs measured rates to speculate; a real executor refuses them.
  if "$pagedllm" replay --executor sim --trace "$source_dir/traces/sharegpt_like.jsonl" \
    --speculative-config '{"method": "ngram", "num_speculative_tokens": 2}' > /dev/null 2> "$work/spec_err.txt"; then
    fail "the simulator speculated without rates"
  fi
  grep -q "simulated_draft_rate" "$work/spec_err.txt" || fail "the simulator's refusal: $(cat "$work/spec_err.txt")"
  if "$pagedllm" replay --trace "$source_dir/traces/sharegpt_like.jsonl" --speculative-config \
    '{"method": "ngram", "num_speculative_tokens": 1, "simulated_draft_rate": 0.5, "simulated_acceptance": [0.5]}' \
    > /dev/null 2> "$work/spec_err.txt"; then fail "the cpu executor took simulated rates"; fi
  grep -q "the simulator's" "$work/spec_err.txt" || fail "the cpu refusal: $(cat "$work/spec_err.txt")"
  echo "ok: speculative decoding's simulated rates go to the simulator and only there"

  echo "--- a measured trace: the run's output lengths and each request's speculation, replayed by the simulator"
  "$pagedllm" replay --model tiny --trace "$source_dir/traces/sharegpt_like.jsonl" --max-requests 20 --threads 1 \
    --quiet --speculative-config '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 1,
    "prompt_lookup_max": 3, "disable_by_batch_size": null}' -o "$work/measured_run.json" > /dev/null 2>&1 ||
    fail "the speculating replay to measure"
  "$pagedllm" trace measured --trace "$source_dir/traces/sharegpt_like.jsonl" --report "$work/measured_run.json" \
    -o "$work/measured.jsonl" 2> "$work/measured_err.txt" || fail "trace measured: $(cat "$work/measured_err.txt")"
  grep -q "^20 of 100 requests measured (20 with their speculation)" "$work/measured_err.txt" ||
    fail "trace measured's count: $(cat "$work/measured_err.txt")"
  python3 - "$work/measured_run.json" "$work/measured.jsonl" <<'PY' || fail "the measured trace does not hold the run"
import json, sys
run = json.load(open(sys.argv[1]))["requests"]
lines = [json.loads(line) for line in open(sys.argv[2])][1:]
for entry in run:
    line = lines[entry["id"]]
    n = (line.get("sampling") or {}).get("n", 1)
    assert line["output_len"] == entry["output_tokens"] // n, (entry, line["output_len"])
    spec, sim = entry["spec_decode"], line["simulated_speculation"]
    drafts, passes = spec["num_drafts"], spec["decode_passes"]
    assert abs(sim["draft_rate"] - (drafts / passes if passes else 0.0)) < 1e-12, (spec, sim)
    accepted = spec["num_accepted_tokens_per_pos"]
    assert sim["acceptance"] == [a / drafts if drafts else 0.0 for a in accepted], (spec, sim)
assert all("simulated_speculation" not in line for line in lines[20:])
PY
  "$pagedllm" replay --executor sim --model tiny --trace "$work/measured.jsonl" --max-requests 20 --quiet \
    --speculative-config '{"method": "ngram", "num_speculative_tokens": 3, "disable_by_batch_size": null,
    "simulated_draft_rate": 0.5, "simulated_acceptance": [0.5, 0.3, 0.1]}' -o "$work/measured_sim.json" \
    > /dev/null 2>&1 || fail "the simulator on the measured trace"
  python3 - "$work/measured.jsonl" "$work/measured_sim.json" <<'PY' || fail "the simulator did not follow the measured rates"
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])][1:]
sim = json.load(open(sys.argv[2]))["requests"]
for entry in sim:
    line, spec = lines[entry["id"]], entry["spec_decode"]
    assert entry["output_tokens"] == line["output_len"] * (line.get("sampling") or {}).get("n", 1)
    rate = line["simulated_speculation"]["draft_rate"]
    if rate == 0.0: assert spec["num_drafts"] == 0, (line, spec)   # never drafted for real: never in the sim
    if rate == 1.0: assert spec["num_drafts"] > 0, (line, spec)
drafts = sum(entry["spec_decode"]["num_drafts"] for entry in sim)
assert drafts > 0
PY
  if "$pagedllm" trace measured --trace "$source_dir/traces/grounded_edits.jsonl" --report "$work/measured_run.json" \
    -o "$work/wrong.jsonl" 2> "$work/measured_err.txt"; then fail "a report of another trace was taken"; fi
  grep -q "measured_run.json: requests\[[0-9]*\]: id [0-9]* is not in the trace (8 requests)" "$work/measured_err.txt" ||
    fail "the refusal of another trace's report: $(cat "$work/measured_err.txt")"
  echo "ok: trace measured writes the run's lengths and rates, and the simulator follows them"

  echo "--- speculative decoding with a draft model: the tiny model's weights rounded to bf16"
  "$pagedllm" make-model --out "$work/tiny_bf16" --safetensors-dtype bf16 > /dev/null
  "$pagedllm" make-model --out "$work/tiny_vocab900" --vocab-size 900 > /dev/null
  draft_spec="{\"model\": \"$work/tiny_bf16\", \"num_speculative_tokens\": 3, \"disable_by_batch_size\": null}"
  "$pagedllm" replay --model tiny --trace "$source_dir/traces/sharegpt_like.jsonl" --max-requests 20 --threads 1 \
    --quiet --speculative-config "$draft_spec" > "$work/replay_draft.txt" 2> "$work/replay_draft_err.txt" ||
    fail "replay with a draft model: $(cat "$work/replay_draft_err.txt")"
  grep -q "draft model $work/tiny_bf16" "$work/replay_draft_err.txt" || fail "replay did not name its draft model"
  accepted=$(sed -n 's/^Spec drafts \/ proposed \/ accepted: *[0-9]* \/ [0-9]* \/ \([0-9]*\).*/\1/p' "$work/replay_draft.txt")
  [ "${accepted:-0}" -gt 0 ] || fail "the draft model's proposals were never accepted: $(cat "$work/replay_draft.txt")"
  grep -q "^Draft model passes" "$work/replay_draft.txt" || fail "no draft model line in the summary"
  for refused in "replay --executor sim" "check"; do
    # shellcheck disable=SC2086
    if "$pagedllm" $refused --model tiny --trace "$source_dir/traces/sharegpt_like.jsonl" --max-requests 2 \
      --speculative-config "$draft_spec" > /dev/null 2> "$work/draft_err.txt"; then fail "$refused ran a draft model"; fi
    grep -qE "give \"simulated_acceptance\"|lockstep check runs one token script" "$work/draft_err.txt" ||
      fail "$refused's refusal: $(cat "$work/draft_err.txt")"
  done
  # The simulator runs the draft's passes (priced by its own roofline) and draws the acceptance.
  sim_draft_spec="{\"model\": \"$work/tiny_bf16\", \"num_speculative_tokens\": 3, \"simulated_acceptance\": [0.7, 0.5, 0.3]}"
  "$pagedllm" replay --executor sim --model tiny --trace "$source_dir/traces/sharegpt_like.jsonl" --max-requests 20 \
    --quiet --speculative-config "$sim_draft_spec" > "$work/sim_draft.txt" 2> "$work/sim_draft_err.txt" ||
    fail "replay --executor sim with a draft model: $(cat "$work/sim_draft_err.txt")"
  grep -q "^Draft model passes" "$work/sim_draft.txt" || fail "the simulator priced no draft pass: $(cat "$work/sim_draft.txt")"
  if "$pagedllm" replay --model tiny --trace "$source_dir/traces/sharegpt_like.jsonl" --max-requests 2 \
    --speculative-config "{\"model\": \"$work/tiny_vocab900\", \"num_speculative_tokens\": 3}" \
    > /dev/null 2> "$work/draft_err.txt"; then fail "a draft of another vocabulary was taken"; fi
  grep -q "must share the target's tokenizer" "$work/draft_err.txt" || fail "the vocabulary refusal: $(cat "$work/draft_err.txt")"
  echo "ok: a draft model proposes on replay ($accepted accepted) and in the simulator; check, the simulator without rates and a foreign vocabulary refuse it"

  if "$pagedllm" check --trace "$source_dir/traces/mooncake_like.jsonl" --executors cpu,sim,cpu > /dev/null \
    2> "$work/check_err.txt"; then fail "check accepted an executor named twice"; fi
  grep -q "'cpu' is named twice" "$work/check_err.txt" || fail "the repeated executor: $(cat "$work/check_err.txt")"
  if ! nvidia-smi > /dev/null 2>&1; then
    # Without a GPU (or without the CUDA executor in this build) check refuses before anything runs.
    if "$pagedllm" check --trace "$source_dir/traces/mooncake_like.jsonl" --executors sim,cuda > "$work/check_cuda.txt" \
      2>&1; then fail "check --executors sim,cuda ran without a GPU"; fi
    grep -qE "error: (--executor cuda|cuda executor)" "$work/check_cuda.txt" || fail "the cuda refusal: $(cat "$work/check_cuda.txt")"
    if grep -q " steps, " "$work/check_cuda.txt"; then fail "check ran sim before refusing cuda"; fi
    echo "ok: check refuses cuda up front where there is no GPU"
  fi
}

section_models() {
  echo "--- the embedded model by name in generate, score and inspect"
  "$pagedllm" generate -m tiny -p "hello" -n 4 --no-stream --threads 1 > "$work/generate_tiny.txt"
  grep -q "sample 0 (length)" "$work/generate_tiny.txt" || fail "generate -m tiny: $(cat "$work/generate_tiny.txt")"
  echo '{"ids": [5, 6, 7]}' > "$work/score_in.jsonl"
  "$pagedllm" score -m tiny --input-jsonl "$work/score_in.jsonl" --output-dir "$work/score_tiny" --threads 1 > /dev/null
  expect "score -m tiny wrote 3 positions" "$(json "$work/score_tiny/index.json" "d[0]['num_tokens']")" 3
  "$pagedllm" inspect --model tiny | grep -q "architecture *llama" || fail "inspect --model tiny"
  echo "ok: generate, score and inspect take --model tiny"
}

section_simulate() {
  echo "--- simulate: routers and the contiguous (pre-vLLM) allocator"
  for router in round-robin prefix-affinity; do
    "$pagedllm" simulate --trace "$source_dir/traces/mooncake_like.jsonl" --model llama-3-8b --replicas 4 \
      --router "$router" --rate-scale 8 -q -o "$work/$router.json" > /dev/null
  done
  expect "prefix-affinity hits more of the prefix cache than round-robin" \
    "$(python3 -c "import json; a=json.load(open('$work/prefix-affinity.json')); b=json.load(open('$work/round-robin.json')); print(a['engine']['prefix_hit_rate'] > b['engine']['prefix_hit_rate'] and len(a['replicas']) == 4)")" True
  # replay's spelling of the shape, --sim-model, names the same model here; two different ones are refused.
  "$pagedllm" simulate --trace "$source_dir/traces/mooncake_like.jsonl" --sim-model llama-3-8b --replicas 4 \
    --router round-robin --rate-scale 8 -q -o "$work/sim_model.json" > /dev/null
  expect "simulate --sim-model is --model" \
    "$(python3 -c "import json; a=json.load(open('$work/sim_model.json')); b=json.load(open('$work/round-robin.json')); print(a['config']['model'] == 'llama-3-8b' and a['metrics'] == b['metrics'])")" True
  # GEMMs priced per shape: slower than the roofline's bound near its ridge (prompts of a few hundred
  # tokens), and said in the report; an unknown model is refused by name.
  for gemm in roofline per-gemm; do
    "$pagedllm" simulate --trace "$source_dir/traces/sharegpt_like.jsonl" --model llama-2-7b --gemm-model "$gemm" \
      -q -o "$work/gemm_$gemm.json" > /dev/null
  done
  expect "simulate --gemm-model per-gemm: named in the report, prefills priced above the roofline's bound" \
    "$(python3 -c "import json; a=json.load(open('$work/gemm_per-gemm.json')); b=json.load(open('$work/gemm_roofline.json')); print(a['config']['cost_model'] == 'roofline, per-gemm' and b['config']['cost_model'] == 'roofline' and a['metrics']['mean_ttft_ms'] > 1.05 * b['metrics']['mean_ttft_ms'])")" True
  if "$pagedllm" simulate --trace "$source_dir/traces/sharegpt_like.jsonl" --gemm-model tiles -q 2> "$work/gemm_err.txt"; then
    fail "simulate accepted --gemm-model tiles"
  fi
  grep -q "gemm-model: unknown GEMM model 'tiles' (roofline, per-gemm)" "$work/gemm_err.txt" ||
    fail "the --gemm-model refusal: $(cat "$work/gemm_err.txt")"
  if "$pagedllm" simulate --trace "$source_dir/traces/mooncake_like.jsonl" --model llama-2-7b --sim-model llama-3-8b -q \
    > /dev/null 2> "$work/sim_model_err.txt"; then fail "two models were accepted"; fi
  grep -q "^pagedllm simulate: error: --sim-model llama-3-8b and --model llama-2-7b name two models" "$work/sim_model_err.txt" ||
    fail "the two-model refusal: $(cat "$work/sim_model_err.txt")"
  echo "--- simulate's progress off a terminal: one line per tenth of the requests, then the last"
  # 13 requests of the committed trace: a total that is not a multiple of 10.
  "$pagedllm" simulate --trace "$source_dir/traces/sharegpt_like.jsonl" --model llama-2-7b --max-requests 13 \
    -o "$work/progress.json" > /dev/null 2> "$work/progress.txt"
  expect "progress lines off a terminal: 2 to 11, each count printed once, the last at 13/13" \
    "$(python3 -c "
lines = [l.split()[1] for l in open('$work/progress.txt') if l.startswith('simulate: ')]
print(2 <= len(lines) <= 11 and len(set(lines)) == len(lines) and lines[-1] == '13/13')")" True
  echo "--- simulate streams a trace in arrival order; one out of order is read whole and sorted: same report"
  # The committed trace with its fifth request's line moved to the top: out of order, so read whole
  # and stably sorted back into the same requests (same ids and prompts); only the trace section
  # (which says it was reordered) may differ.
  { head -n 1 "$source_dir/traces/sharegpt_like.jsonl"; sed -n 6p "$source_dir/traces/sharegpt_like.jsonl"
    tail -n +2 "$source_dir/traces/sharegpt_like.jsonl" | sed 5d; } > "$work/moved.jsonl"
  for input in "$source_dir/traces/sharegpt_like.jsonl" "$work/moved.jsonl"; do
    "$pagedllm" simulate --trace "$input" --model llama-2-7b --replicas 3 --router least-outstanding -q \
      --max-model-len 512 -o "$work/$(basename "$input" .jsonl).report.json" > /dev/null 2> "$work/stream_err.txt"
  done
  expect "streamed and whole-read reports agree (metrics, engine, replicas, every request)" \
    "$(python3 -c "import json; a=json.load(open('$work/sharegpt_like.report.json')); b=json.load(open('$work/moved.report.json')); print(all(a[k] == b[k] for k in ('metrics', 'engine', 'replicas', 'requests', 'timeline')) and not a['trace']['reordered'] and b['trace']['reordered'] and len(a['requests']) == a['trace']['requests_accepted'] and a['trace']['clipped'] > 0)")" True

  for allocator in paged contiguous; do
    "$pagedllm" simulate --trace "$source_dir/traces/sharegpt_like.jsonl" --model llama-2-13b --hardware a100-40gb \
      --max-model-len 2048 --allocator "$allocator" --time fast -q -o "$work/$allocator.json" > /dev/null
  done
  expect "paged KV wastes under 5% of its slots" "$(json "$work/paged.json" "d['engine']['internal_waste_mean'] < 0.05")" True
  expect "contiguous reservation wastes over half" "$(json "$work/contiguous.json" "d['engine']['internal_waste_mean'] > 0.5")" True
  expect "paged serves more tokens per second" \
    "$(python3 -c "import json; a=json.load(open('$work/paged.json')); b=json.load(open('$work/contiguous.json')); print(a['metrics']['output_throughput'] > 1.5 * b['metrics']['output_throughput'])")" True
}

# The trace and arguments the plan and time-limit sections share.
plan_args=(--trace "$work/plan_trace.jsonl" --model llama-2-7b --hardware h100-sxm --slo ttft_p99=1000,tpot_p99=50
  --target-rate 30 --sweep max-num-seqs=32,128)
write_plan_trace() {
  "$pagedllm" trace synth -n 400 --request-rate 2 --seed 5 -o "$work/plan_trace.jsonl" 2>/dev/null
}

section_plan() {
  echo "--- plan: the highest rate within the SLOs"
  write_plan_trace
  "$pagedllm" plan "${plan_args[@]}" -o "$work/plan.json" > "$work/plan.txt"
  expect "plan: both configurations found a rate" \
    "$(json "$work/plan.json" "all(c['max_request_rate_per_replica'] > 2 for c in d['configurations'])")" True
  expect "plan: the chosen points meet the SLOs" \
    "$(json "$work/plan.json" "all(c['latency_ms']['ttft_p99'] <= 1000 and c['latency_ms']['tpot_p99'] <= 50 for c in d['configurations'])")" True
  expect "plan: more running sequences sustain more" \
    "$(json "$work/plan.json" "d['configurations'][1]['max_request_rate_per_replica'] > d['configurations'][0]['max_request_rate_per_replica']")" True

  echo "--- plan: a rate stops once it certainly misses the SLO, and the search ends where full runs end it"
  "$pagedllm" plan "${plan_args[@]}" --full-runs -q -o "$work/plan_full.json" > /dev/null
  same_search() {  # the rates found, every verdict, and the figures of every rate that ran to its end
    python3 - "$1" "$2" <<'EOF'
import json, sys
early, full = (json.load(open(path))["configurations"] for path in sys.argv[1:3])
same = len(early) == len(full)
for e, f in zip(early, full):
    same = same and e.get("max_request_rate_per_replica") == f.get("max_request_rate_per_replica")
    same = same and [p["rate_scale"] for p in e["curve"]] == [p["rate_scale"] for p in f["curve"]]
    for p, q in zip(e["curve"], f["curve"]):
        same = same and p["feasible"] == q["feasible"]
        if not p.get("stopped_early"):
            same = same and {k: v for k, v in p.items() if k != "slo_missed"} == q
print(same)
EOF
  }
  expect "plan: early stops change no rate found and no verdict" "$(same_search "$work/plan.json" "$work/plan_full.json")" True
  expect "plan: some infeasible rates stopped early, saying why" \
    "$(json "$work/plan.json" "any(p.get('stopped_early') and 'certainly above' in p['slo_missed'] for c in d['configurations'] for p in c['curve'])")" True

  echo "--- plan: sweep points on threads and in shards, merged"
  # Two shards, run by the Slurm array script as Slurm runs its tasks (one thread each), merge into
  # exactly the document the unsharded plan above wrote on all cores: the result depends neither on
  # the sharding nor on the thread count. A missing, repeated or foreign shard is refused.
  same_json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1])) == json.load(open(sys.argv[2])))" "$1" "$2"; }
  for i in 0 1; do
    SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=2 SLURM_CPUS_PER_TASK=1 PAGEDLLM="$pagedllm" PLAN_DIR="$work/shards" \
      PLAN_ARGS="${plan_args[*]}" bash "$source_dir/deploy/slurm/plan-array.sh" > /dev/null 2>&1
  done
  expect "plan --shard: one configuration each" \
    "$(json "$work/shards/shard-1.json" "[c['index'] for c in d['configurations']] == [1] and d['shard'] == {'index': 1, 'count': 2}")" True
  "$pagedllm" plan merge "$work/shards/shard-1.json" "$work/shards/shard-0.json" -o "$work/merged.json" > "$work/merged.txt"
  expect "plan merge: the shards (one thread each) make the unsharded document (all cores) exactly" \
    "$(same_json "$work/plan.json" "$work/merged.json")" True
  diff <(grep -v '^wrote' "$work/plan.txt") <(grep -v '^wrote' "$work/merged.txt") || fail "plan merge prints another table"
  merge_refuses() {  # merge_refuses DESCRIPTION MESSAGE SHARD...
    local description="$1" message="$2"
    shift 2
    if "$pagedllm" plan merge "$@" > /dev/null 2> "$work/merge_err.txt"; then fail "plan merge accepted $description"; fi
    grep -q "$message" "$work/merge_err.txt" || fail "plan merge, $description: $(cat "$work/merge_err.txt")"
    echo "ok: plan merge refuses $description"
  }
  merge_refuses "a missing shard" "shard 1/2 is missing" "$work/shards/shard-0.json"
  merge_refuses "a shard given twice" "given twice" "$work/shards/shard-0.json" "$work/shards/shard-0.json" \
    "$work/shards/shard-1.json"
  # Another sweep (its first value differs); its shard 1 is the cheaper 128.
  "$pagedllm" plan "${plan_args[@]/max-num-seqs=32,128/max-num-seqs=64,128}" --shard 1/2 -q -o "$work/foreign.json" > /dev/null
  merge_refuses "a shard of another sweep" "another sweep" "$work/shards/shard-0.json" "$work/foreign.json"
  merge_refuses "a file that is not a shard" "not a shard of a plan" "$work/shards/shard-0.json" "$work/plan.json"
}

section_limits() {
  echo "--- time limits: simulate and plan stop when told and say so"
  write_plan_trace
  # A limit of 1 ms has passed once the trace is read, so both stop at their first check.
  "$pagedllm" trace synth -n 20000 --request-rate 40 --seed 7 -o "$work/long.jsonl" 2>/dev/null
  "$pagedllm" simulate --trace "$work/long.jsonl" --model llama-2-7b --replicas 2 --max-wall-seconds 0.001 -q \
    -o "$work/stopped.json" > "$work/stopped.txt"
  grep -q "^Stopped by --max-wall-seconds 0.001 at simulated t=" "$work/stopped.txt" || fail "simulate did not say it stopped"
  expect "simulate --max-wall-seconds: stopped with requests unfinished, metrics over the finished" \
    "$(json "$work/stopped.json" "d['config']['stopped_by_wall_limit'] and d['config']['unfinished_requests'] > 0 and d['metrics']['completed'] + d['config']['unfinished_requests'] == 20000")" True
  "$pagedllm" plan "${plan_args[@]}" --max-wall-seconds 0.001 -q -o "$work/plan_stopped.json" > "$work/plan_stopped.txt"
  expect "plan --max-wall-seconds: every configuration says it stopped" \
    "$(json "$work/plan_stopped.json" "all(c.get('stopped_by_wall_limit') and 'max-wall-seconds' in c['note'] for c in d['configurations'])")" True

  # The steady state, not the trace's length, decides: 200 and 2,000 requests of one distribution
  # (synth seeds 1 and 2, as first run) give rates within 10% (docs/SIMULATOR.md has the spread
  # over other seeds), and the rates above the one found were judged on a growing queue.
  # The 200-request plan runs every rate to its end, for the growth figures of the rates above.
  for n in 200 2000; do
    "$pagedllm" trace synth -n "$n" --request-rate 10 --seed "$((n / 1000 + 1))" -o "$work/steady_$n.jsonl" 2>/dev/null
    "$pagedllm" plan --trace "$work/steady_$n.jsonl" --model llama-2-7b --hardware h100-sxm --max-num-seqs 256 \
      --slo ttft_p99=2000,tpot_p99=100 $([ "$n" == 200 ] && echo --full-runs) -o "$work/steady_$n.json" > /dev/null
  done
  expect "plan: 200 and 2,000 requests of one distribution agree within 10%" \
    "$(python3 -c "import json; r=[json.load(open('$work/steady_'+n+'.json'))['configurations'][0]['max_request_rate_per_replica'] for n in ('200','2000')]; print(abs(r[0]-r[1]) <= 0.1*r[1])")" True
  expect "plan: a rate above the one found shows a growing queue" \
    "$(json "$work/steady_200.json" "any(not p['sustained'] and p['delay_growth'] > 0.05 for p in d['configurations'][0]['curve'])")" True
}

section_profile() {
  echo "--- a measured profile drives replay, simulate and plan alike"
  "$pagedllm" profile --executor cpu --threads 1 --quick -o "$work/profile.json" > /dev/null 2>&1
  "$pagedllm" replay --trace "$source_dir/traces/sharegpt_like.jsonl" --executor sim --profile "$work/profile.json" \
    --rate-scale 10 -q -o "$work/profile_replay.json" > /dev/null
  "$pagedllm" simulate --trace "$source_dir/traces/sharegpt_like.jsonl" --model tiny --profile "$work/profile.json" \
    --rate-scale 10 -q -o "$work/profile_simulate.json" > /dev/null
  expect "simulate on the profile: one replica gives replay's metrics" \
    "$(python3 -c "import json; a=json.load(open('$work/profile_replay.json')); b=json.load(open('$work/profile_simulate.json')); print(a['metrics'] == b['metrics'] and a['metrics']['completed'] == 100)")" True
  # SLOs loose enough for any machine (the profile is of this one, an ASan build included).
  "$pagedllm" plan --trace "$source_dir/traces/sharegpt_like.jsonl" --model tiny --profile "$work/profile.json" \
    --slo ttft_p99=60000,tpot_p99=5000 --sweep max-num-seqs=8,64 -o "$work/profile_plan.json" > /dev/null
  expect "plan on the profile: both configurations found a rate" \
    "$(json "$work/profile_plan.json" "d['cost_model'].startswith('profile') and len(d['configurations']) == 2 and all(c.get('max_request_rate_per_replica', 0) > 0 for c in d['configurations'])")" True
  if "$pagedllm" simulate --trace "$source_dir/traces/sharegpt_like.jsonl" --profile "$work/profile.json" -q \
    > /dev/null 2> "$work/profile_err.txt"; then fail "a profile of another model was accepted"; fi
  grep -q "give --model tiny" "$work/profile_err.txt" || fail "the shape mismatch is not explained: $(cat "$work/profile_err.txt")"
  if "$pagedllm" plan --trace "$source_dir/traces/sharegpt_like.jsonl" --model tiny --profile "$work/profile.json" \
    --slo ttft_p99=500 --sweep tp=1,2 > /dev/null 2> "$work/profile_err.txt"; then fail "a tp sweep on a profile was accepted"; fi
  grep -q "^pagedllm plan: error: --sweep tp" "$work/profile_err.txt" || fail "the tp sweep refusal: $(cat "$work/profile_err.txt")"

  echo "--- CPU replicas sharing a host: its cores, the serving path's CPU, interference"
  shared=(--trace "$source_dir/traces/sharegpt_like.jsonl" --model tiny --profile "$work/profile.json" --replicas 3
    --router round-robin --rate-scale 10 -q)
  "$pagedllm" simulate "${shared[@]}" --host-cores 2 -o "$work/host_cores.json" > /dev/null
  "$pagedllm" simulate "${shared[@]}" --host-cores 2 --serving-cpu-us-per-token 500 \
    --host-interference decode_by_decode=0.5,prefill_by_prefill=0.25 -o "$work/host_full.json" > /dev/null
  expect "the serving path's CPU and interference are recorded" \
    "$(json "$work/host_full.json" "(d['config']['serving_cpu_us_per_token'], d['config']['host_interference']['decode_by_decode'], d['config']['host_interference']['prefill_by_prefill'])")" \
    "(500.0, 0.5, 0.25)"
  expect "they slow the replicas' decodes" \
    "$(python3 -c "import json; a=json.load(open('$work/host_cores.json')); b=json.load(open('$work/host_full.json')); print(b['metrics']['mean_tpot_ms'] > a['metrics']['mean_tpot_ms'] and b['metrics']['completed'] == a['metrics']['completed'] == 100)")" True
  for refused in "--host-cores 2 --host-interference decode_by_decode=fast" "--host-cores 2 --host-interference decode=0.1" \
    "--serving-cpu-us-per-token 100" "--host-interference decode_by_decode=0.1"; do
    # shellcheck disable=SC2086
    if "$pagedllm" simulate "${shared[@]}" $refused -o "$work/host_refused.json" > /dev/null 2> "$work/profile_err.txt"; then
      fail "simulate took $refused"
    fi
    grep -qE "^pagedllm simulate: error: --(host-interference|serving-cpu-us-per-token): .*(decode_by_decode must be|is not NAME=FRACTION|needs --host-cores)" \
      "$work/profile_err.txt" || fail "the refusal of $refused: $(cat "$work/profile_err.txt")"
  done

  echo "--- a draft model on a profile of its own (--draft-profile): the tiny model drafting for itself"
  draft_sim_spec='{"model": "tiny", "num_speculative_tokens": 3, "disable_by_batch_size": null, "simulated_acceptance": [1, 1, 1]}'
  "$pagedllm" replay --executor sim --profile "$work/profile.json" --draft-profile "$work/profile.json" \
    --trace "$source_dir/traces/sharegpt_like.jsonl" --max-requests 20 -q --speculative-config "$draft_sim_spec" \
    > "$work/profile_draft.txt" 2> "$work/profile_draft_err.txt" || fail "--draft-profile: $(cat "$work/profile_draft_err.txt")"
  grep -q "draft model .*(profile $work/profile.json)" "$work/profile_draft_err.txt" || fail "the draft's profile is not named"
  grep -q "^Spec acceptance rate (%): *100.00" "$work/profile_draft.txt" || fail "$(cat "$work/profile_draft.txt")"
  draft_seconds=$(sed -n 's/^Draft model passes \/ tokens \/ time (s): *[0-9]* \/ [0-9]* \/ \([0-9.]*\).*/\1/p' "$work/profile_draft.txt")
  python3 -c "import sys; sys.exit(0 if float('${draft_seconds:-0}') > 0 else 1)" ||
    fail "the draft's passes were not priced: $(cat "$work/profile_draft.txt")"
  "$pagedllm" make-model --out "$work/tiny_deeper" --layers 3 > /dev/null
  for refused in "--profile $work/profile.json" "--draft-profile $work/profile.json" \
    "--profile $work/profile.json --draft-profile $work/profile.json --deeper"; do
    spec=$draft_sim_spec
    [[ "$refused" == *--deeper ]] && spec=${draft_sim_spec/\"tiny\"/\"$work/tiny_deeper\"} && refused=${refused% --deeper}
    [[ "$refused" == "--draft-profile"* ]] && spec='{"method": "ngram", "num_speculative_tokens": 3, "simulated_draft_rate": 0.5, "simulated_acceptance": [1, 1, 1]}'
    # shellcheck disable=SC2086
    if "$pagedllm" replay --executor sim $refused --trace "$source_dir/traces/sharegpt_like.jsonl" --max-requests 2 -q \
      --speculative-config "$spec" > /dev/null 2> "$work/profile_err.txt"; then fail "took $refused with $spec"; fi
    grep -qE "give the draft model's own with --draft-profile|goes with --profile and a draft model|--draft-profile .*whose shape differs" \
      "$work/profile_err.txt" || fail "the refusal of $refused: $(cat "$work/profile_err.txt")"
  done

  echo "--- a GPU simulator's per-operator profile (Vidur's CSV layout) imported and simulated"
  # Two made-up profiles of llama-2-7b in that layout, the second with every time doubled: with all
  # requests at time 0 the schedule does not depend on step times, so the simulated run takes
  # exactly twice as long on the second.
  python3 - "$work" <<'PY'
import sys
work = sys.argv[1]
def ms(value, scale):  # the value rounded as written, then scaled (exact in binary: x2)
    return f"{scale * round(value, 6):.6f}"
for scale in (1, 2):
    with open(f"{work}/mlp_{scale}.csv", "w") as mlp:
        mlp.write("time_stats.emb.median,time_stats.attn_pre_proj.median,time_stats.mlp_up_proj.median,"
                  "n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers\n")
        for tokens in (4096, 1024, 256, 64, 16, 1):
            mlp.write(f"{ms(0.001 * tokens / 64, scale)},{ms(0.03 + 0.0002 * tokens, scale)},"
                      f"{ms(0.06 + 0.0004 * tokens, scale)},32,32,4096,11008,32768,True,{tokens},1\n")
    with open(f"{work}/attention_{scale}.csv", "w") as attention:
        attention.write("time_stats.attn_decode.median,time_stats.attn_prefill.median,n_embd,n_q_head,n_kv_head,"
                        "block_size,num_tensor_parallel_workers,batch_size,prefill_chunk_size,kv_cache_size,is_prefill\n")
        for batch in (1, 8, 64, 256):
            for cached in (128, 1024, 4096):
                attention.write(f"{ms(0.000004 * batch * cached, scale)},,4096,32,32,16,1,{batch},0,{cached},False\n")
        for chunk in (16, 512, 2048):
            for cached in (0, 1024, 4096):
                attention.write(f",{ms(0.00002 * chunk * (cached + chunk / 2) / 64, scale)},4096,32,32,16,1,1,{chunk},{cached},True\n")
PY
  # Greedy requests only: copy-on-write copies (parallel samples) are priced by the roofline, not the files.
  "$pagedllm" trace synth -n 80 --seed 9 -o "$work/greedy.jsonl" 2>/dev/null
  for scale in 1 2; do
    "$pagedllm" profile import --mlp "$work/mlp_$scale.csv" --attention "$work/attention_$scale.csv" --model llama-2-7b \
      --hardware a100-80gb -o "$work/imported_$scale.json" > "$work/import.txt"
    "$pagedllm" simulate --trace "$work/greedy.jsonl" --model llama-2-7b --hardware a100-80gb \
      --profile "$work/imported_$scale.json" --time fast -q -o "$work/imported_sim_$scale.json" > "$work/imported_sim.txt"
  done
  grep -q "^Imported llama-2-7b: decode 4 x 3 (0 filled), prefill 3 x 3 (0 filled)" "$work/import.txt" ||
    fail "profile import: $(cat "$work/import.txt")"
  expect "the imported profile drives the simulator: twice the operator times, twice the run" \
    "$(python3 -c "import json; a=json.load(open('$work/imported_sim_1.json')); b=json.load(open('$work/imported_sim_2.json')); print(a['metrics']['completed'] == 80 and abs(b['metrics']['duration'] / a['metrics']['duration'] - 2) < 1e-9 and a['config']['num_device_blocks_per_replica'] > 1000)")" True
  sed -i 's/,32,32,4096,11008,32768,True,16,1$/,32,32,5120,11008,32768,True,16,1/' "$work/mlp_1.csv"
  if "$pagedllm" profile import --mlp "$work/mlp_1.csv" --attention "$work/attention_1.csv" --model llama-2-7b \
    -o "$work/bad.json" > /dev/null 2> "$work/import_err.txt"; then fail "a profile of another model was imported"; fi
  grep -q "mlp_1.csv:6: n_embd: 5120 here, but the model simulated (llama-2-7b) has 4096" "$work/import_err.txt" ||
    fail "the import's shape refusal: $(cat "$work/import_err.txt")"

  echo "--- bench_gemm_vs_operators: each row's own GEMM shapes, priced by both linear models"
  # A made-up file in the same layout (a GQA model at tensor parallel 1 and 4) whose "measured"
  # times are the roofline's own prices, worked out here from the rows' shapes: the roofline must
  # then be exact on every GEMM, which it is only if the bench splits the projections as written.
  python3 - "$work" <<'PY'
import sys
work = sys.argv[1]
peak, bandwidth = 989e12 * 0.65, 3.35e12 * 0.80  # h100-sxm at the roofline's linear efficiencies
def price_ms(m, n, k):
    return 1e3 * max(2.0 * m * n * k / peak, 2.0 * n * k / bandwidth)
ops = ["attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj"]
with open(f"{work}/gemm_mlp.csv", "w") as out:
    out.write(",".join(f"time_stats.{op}.median" for op in ops) +
              ",n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers\n")
    for tp in (1, 4):
        for tokens in (1, 64, 256, 2048):
            head_dim, q, kv, mlp = 128, 32 * 128 // tp, 8 // tp * 128, 14336 // tp
            shapes = [(tokens, q + 2 * kv, 4096), (tokens, 4096, q), (tokens, 2 * mlp, 4096), (tokens, 4096, mlp)]
            out.write(",".join(repr(price_ms(*shape)) for shape in shapes) + f",32,8,4096,14336,128256,True,{tokens},{tp}\n")
PY
  "$(dirname "$pagedllm")/bench/bench_gemm_vs_operators" --hardware h100-sxm --mlp "$work/gemm_mlp.csv" \
    > "$work/gemm_bench.txt"
  expect "bench_gemm_vs_operators: the roofline priced at exactly its own prices, in every regime" \
    "$(grep -c "roofline  1.00-1.00x, median 1.00x, 100% within 20%" "$work/gemm_bench.txt")" 6
  grep -q "^all 32 GEMMs: root mean square of ln(predicted / measured): roofline 0.000, per-gemm " "$work/gemm_bench.txt" ||
    fail "bench_gemm_vs_operators: $(cat "$work/gemm_bench.txt")"
}

section_switches() {
  echo "--- a run that uses no GPU never opens cuBLAS (it is opened on first use: cuda/cublas_library.h)"
  LD_DEBUG=libs "$pagedllm" replay --trace "$source_dir/traces/mooncake_like.jsonl" --executor sim \
    --sim-model llama-2-7b --max-requests 5 -q > /dev/null 2> "$work/loader.txt"
  grep -q "calling init: .*libc.so" "$work/loader.txt" || fail "LD_DEBUG=libs printed no library start-up: $(head -3 "$work/loader.txt")"
  if grep -q "libcublas" "$work/loader.txt"; then fail "a simulator run opened cuBLAS: $(grep -m1 libcublas "$work/loader.txt")"; fi

  echo "--- vLLM's spellings of the engine switches"
  for flag in --no-enable-prefix-caching --no-prefix-caching; do
    "$pagedllm" replay --trace "$source_dir/traces/mooncake_like.jsonl" --executor sim --sim-model llama-2-7b \
      --max-requests 30 -q $flag -o "$work/no_prefix.json" > /dev/null
    expect "$flag: no prefix hits" "$(json "$work/no_prefix.json" "d['engine']['prefix_hit_tokens']")" 0
  done
  "$pagedllm" replay --trace "$source_dir/traces/mooncake_like.jsonl" --executor sim --sim-model llama-2-7b \
    --max-requests 30 -q --enable-prefix-caching -o "$work/prefix.json" > /dev/null
  expect "--enable-prefix-caching: prefix hits" "$(json "$work/prefix.json" "d['engine']['prefix_hit_tokens'] > 0")" True
  if "$pagedllm" replay --trace "$source_dir/traces/mooncake_like.jsonl" --executor sim --enable-prefix-caching \
    --no-enable-prefix-caching -q > /dev/null 2> "$work/flags_err.txt"; then fail "contradicting switches accepted"; fi
  grep -q "contradict" "$work/flags_err.txt" || fail "contradicting switches: $(cat "$work/flags_err.txt")"

  echo "--- generate: stop strings cut the text (the same path as the server's)"
  "$pagedllm" generate -m tiny -p "Once upon a time" -n 40 --threads 1 > "$work/gen.txt" 2>/dev/null
  whole=$(cat "$work/gen.txt")
  stop=$(python3 -c "import sys; t=sys.argv[1]; print(next(t[i:i+3] for i in range(8, len(t) - 3) if t[i:i+3].isalnum()))" "$whole")
  "$pagedllm" generate -m tiny -p "Once upon a time" -n 40 --threads 1 --stop "$stop" > "$work/gen_stop.txt" 2>/dev/null
  expect "generate --stop '$stop': the text up to the stop string" \
    "$(python3 -c "import sys; w, c, s = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]; print(c.rstrip('\n') == w[:w.index(s)])" "$work/gen.txt" "$work/gen_stop.txt" "$stop")" True
}

section_azure() {
  echo "--- converting the real Azure trace"
  azure="$source_dir/../shared/traces/azure_llm_2023_code.csv"
  if [ -f "$azure" ]; then
    "$pagedllm" trace convert --format azure --input "$azure" --max-requests 500 -o "$work/azure.jsonl" 2>/dev/null
    "$pagedllm" trace stats --json "$work/azure.jsonl" > "$work/azure_stats.json"
    expect "azure: requests" "$(json "$work/azure_stats.json" "d['num_requests']")" 500
    "$pagedllm" replay --trace "$work/azure.jsonl" --executor sim --sim-model llama-2-7b --max-model-len 4096 -q \
      -o "$work/azure.json" > /dev/null
    expect "azure on sim: completed" "$(json "$work/azure.json" "d['metrics']['completed']")" 500
  else
    echo "SKIPPED: $azure is absent (real traces live in ../shared/traces)"
  fi
}

sections=(replay check models simulate plan limits profile switches azure)
if [ $# -ge 3 ]; then
  [[ " ${sections[*]} " == *" $3 "* ]] || { echo "replay_e2e: unknown section '$3' (${sections[*]})" >&2; exit 2; }
  "section_$3"
  echo "e2e replay, $3: all checks passed"
else
  for section in "${sections[@]}"; do "section_$section"; done
  echo "e2e replay: all checks passed"
fi
