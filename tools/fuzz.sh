#!/usr/bin/env bash
# Builds the libFuzzer targets of the model file parsers (GGUF and safetensors headers), of the
# OpenAI request parser (the server's JSON bodies), of the EBNF grammar compiler and of the trace
# readers (JSONL, ShareGPT, Azure, BurstGPT, Mooncake), with clang, ASan and UBSan, and runs each
# for a bounded time on its seed corpus.
#   tools/fuzz.sh [seconds per target]   (default 20)
# A crash, leak, sanitizer report or any exception other than the parser's own error (ModelFormatError;
# ApiError with a 4xx status; GrammarError; TraceError) fails the run;
# the input that caused it is left in build/fuzz/ as crash-* (or leak-*, timeout-*).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (tools/setup.sh installs it)" >&2; exit 1; }
out=build/fuzz
mkdir -p "$out"
flags=(-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I.)

declare -A sources=(
  [gguf_header]="core/model/gguf_file.cpp core/model/ggml_type.cpp core/model/mapped_file.cpp"
  [safetensors_header]="core/model/safetensors_file.cpp core/model/mapped_file.cpp"
  [grammar]="core/structured/grammar_parser.cpp core/structured/regex_escape.cpp core/structured/grammar_automaton.cpp core/structured/grammar_matcher.cpp core/structured/thompson_nfa.cpp core/structured/token_trie.cpp core/structured/code_point_set.cpp core/structured/byte_dfa.cpp core/tokenizer/utf8.cpp"
  [openai_request]="tools/server/openai_errors.cpp tools/server/openai_request.cpp tools/server/openai_refused_fields.cpp tools/server/openai_structured_outputs.cpp tools/server/openai_tools.cpp core/common/json_value.cpp core/sched/sampling_params.cpp"
  [trace_readers]="core/trace/trace.cpp core/trace/trace_formats.cpp core/trace/trace_jsonl.cpp core/trace/csv_reader.cpp core/trace/sharegpt_reader.cpp core/trace/azure_reader.cpp core/trace/burstgpt_reader.cpp core/trace/mooncake_reader.cpp core/trace/trace_random.cpp core/sched/sampling_params.cpp core/spec/speculative_config.cpp core/common/json_value.cpp"
)
for target in gguf_header safetensors_header openai_request grammar trace_readers; do
  echo "=== fuzz ${target}: build"
  # shellcheck disable=SC2086
  clang++ "${flags[@]}" "tests/fuzz/fuzz_${target}.cpp" ${sources[$target]} -o "$out/fuzz_${target}"
  corpus="$out/corpus_${target}"
  mkdir -p "$corpus"
  [ -d "tests/fuzz/corpus_${target}" ] && cp -n "tests/fuzz/corpus_${target}"/* "$corpus"/ 2>/dev/null || true
  echo "=== fuzz ${target}: ${seconds} s"
  log="$out/fuzz_${target}.log"
  status=0
  # -timeout: an input must run in milliseconds; one that takes 10 s fails the run at once and is
  # written out as timeout-* (libFuzzer's default of 1,200 s let a grammar whose matcher stacks
  # blew up hold a CI run for 20 minutes, 2026-11-28).
  (cd "$out" && "./fuzz_${target}" -max_total_time="$seconds" -timeout=10 -max_len=4096 -print_final_stats=1 \
      "corpus_${target}" >"fuzz_${target}.log" 2>&1) || status=$?
  grep -E "^stat::number_of_executed_units" "$log" || true
  # libFuzzer exits non-zero and writes crash-* / leak-* / timeout-* beside itself on a finding.
  if [ "$status" -ne 0 ]; then
    tail -40 "$log" >&2
    echo "fuzz: ${target} found a failing input (exit ${status}; see ${log} and ${out}/crash-*)" >&2
    exit 1
  fi
done
echo "fuzz: no findings"
