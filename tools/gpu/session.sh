#!/usr/bin/env bash
# A GPU session's work (issues 8, 9 and 11), run on the lent device machine from the repository root
# over binaries packed here by tools/gpu/pack.sh:
#
#   tools/gpu/session.sh [--budget SECONDS] [--max-step SECONDS] PHASE...      (e.g. `kernels sanitize`)
#
# --max-step caps every step's own limit (a 15-minute lease runs every phase once, shallowly, in one
# call, rather than the first phases deeply and the rest not at all).
#
# Phases, in the order a lease should take them:
#   kernels       test_cuda (every kernel and executor test), bench_cuda_attention, PyTorch's SDPA anchor
#   sanitize      compute-sanitizer memcheck, racecheck and synccheck over the kernel tests
#   executor      a head_dim-64 test model: generate, replay and `check --executors sim,cpu,cuda` on every
#                 committed trace (default KV, and a small KV with swap and with recompute), the
#                 Transformers oracle in bf16 and fp16
#   decode        bench_cuda_decode: the decode step against the memory floor, and block 16 vs 2048
#   nsight        Nsight Compute per-kernel summaries of eager Llama-3-8B decode steps (batch 1 and 64)
#   transformers  tools/bench/cuda_vs_transformers.sh (output tok/s against HF generate())
#   calibrate     a random Llama-2-7B-shaped checkpoint (the transformers phase's, in the same call):
#                 `profile --executor cuda`, real replays, the simulator on that profile and on the
#                 roofline preset (tools/bench/sim_fidelity.sh)
#
# Every step runs under a timeout inside the call's --budget (default 540 s of the device's 600 s
# per command): a step gets at most what is left, and is skipped (and said so) once under 20 s
# remain, so that the logs always come back. Results land in $OUT (the device tool's folder;
# default build/gpu_out):
#   $OUT/summary.txt          one line per step: phase, name, exit code, seconds
#   $OUT/logs.tar.gz          every step's whole output
#   $OUT/*.json               the benchmarks' and the calibration's machine-readable results
set -uo pipefail
cd "$(dirname "$0")/../.."

budget=540
max_step=0
phases=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --budget) budget=$2; shift 2 ;;
    --max-step) max_step=$2; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    kernels|sanitize|executor|decode|nsight|transformers|calibrate) phases+=("$1"); shift ;;
    *) echo "session.sh: unknown phase or option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ ${#phases[@]} -gt 0 ]] || { echo "session.sh: name at least one phase (see --help)" >&2; exit 2; }

start=$SECONDS
out=${OUT:-build/gpu_out}
logs=/tmp/pagedllm_gpu_logs
work=/tmp/pagedllm_gpu_work
mkdir -p "$out" "$logs" "$work"
summary=$out/summary.txt
# The packed binaries go to build/gpu/, apart from a build of this checkout (a dry run here keeps it).
bin=build/gpu/pagedllm
test_cuda=build/gpu/test_cuda
bench=build/gpu

finish() {
  tar -czf "$out/logs.tar.gz" -C "$logs" . 2>/dev/null
  echo "== summary ($((SECONDS - start)) s)"; cat "$summary"
}
trap finish EXIT

# step PHASE NAME TIMEOUT COMMAND...: runs COMMAND under min(TIMEOUT, what the budget has left),
# its output in $logs/PHASE.NAME.log (the last lines also on stdout), one line in the summary.
step() {
  local phase=$1 name=$2 limit=$3; shift 3
  local left=$((budget - (SECONDS - start) - 15))
  if [[ $left -lt 20 ]]; then
    printf '%-13s %-36s %s\n' "$phase" "$name" "skipped: the call's budget is spent" | tee -a "$summary"
    return 0
  fi
  [[ $limit -gt $left ]] && limit=$left
  [[ $max_step -gt 0 && $limit -gt $max_step ]] && limit=$max_step
  local log=$logs/$phase.$name.log began=$SECONDS rc
  echo "== $phase/$name (at most $limit s): $*"
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  rc=$?
  tail -n 25 "$log"
  local verdict="rc $rc"
  [[ $rc -eq 124 || $rc -eq 137 ]] && verdict="rc $rc (timed out after $limit s)"
  printf '%-13s %-36s %-32s %4d s\n' "$phase" "$name" "$verdict" "$((SECONDS - began))" | tee -a "$summary"
  return 0
}

# The sonames the binaries in build/gpu cannot load: missing, or present in too old a version.
unresolved_libraries() {
  ldd build/gpu/* 2>/dev/null | sed -n -e 's/^\s*\(\S*\) => not found.*/\1/p' \
    -e "s|^\s*\(/\S*/\)\?\([^/: ]*\): version .* not found.*|\2|p" | sort -u
}

# cuBLAS, which the binaries open with dlopen on first use (cuda/cublas_library.h), so ldd does
# not name it: its soname when the dynamic loader cannot find it (the toolkit's major, as cudart's).
unresolved_dlopen_libraries() {
  local cublas
  cublas=$(ldd build/gpu/pagedllm 2>/dev/null | sed -n 's/^\s*libcudart\.so\.\([0-9]*\) .*/libcublas.so.\1/p' | head -1)
  [[ -n "$cublas" ]] || return 0
  python3 -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$cublas" 2>/dev/null || echo "$cublas"
}

# The packed binaries in build/gpu; the libraries they link that this machine lacks, from the
# packed Debian packages; cuBLAS from wherever this machine keeps it.
setup() {
  [[ -d .gpu/bin ]] || { echo "session.sh: no .gpu/bin: run tools/gpu/pack.sh here and carry .gpu" >&2; exit 2; }
  mkdir -p build/gpu
  cp .gpu/bin/* build/gpu/
  local libs=/tmp/pagedllm_gpu_libs unpacked=/tmp/pagedllm_gpu_debs
  mkdir -p "$libs" "$unpacked"
  for deb in .gpu/debs/*.deb; do
    [[ -f "$deb" ]] || continue
    if command -v dpkg >/dev/null; then dpkg -x "$deb" "$unpacked"; else python3 tools/gpu/unpack_deb.py "$deb" "$unpacked"; fi
  done
  export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # A supplied library may need another that is missing too (libicuuc needs libicudata, cuBLAS
  # needs cuBLASLt): ldd names it only once the first resolves, hence the rounds. A library the
  # machine has in too old a version ("libstdc++.so.6: version `GLIBCXX_3.4.30' not found") is
  # replaced by the packed one.
  local missing library found
  for round in 1 2 3; do
    missing=$(unresolved_libraries; unresolved_dlopen_libraries)
    [[ -z "$missing" ]] && break
    for library in $missing; do
      found=$(find "$unpacked" .gpu/lib -name "$library" 2>/dev/null | head -1)
      [[ -z "$found" ]] && found=$(find /usr/local/cuda*/ /usr/lib /opt -name "$library" 2>/dev/null | head -1)
      [[ -n "$found" ]] && ln -sf "$(readlink -f "$found")" "$libs/$library"
    done
  done
  missing=$( (unresolved_libraries; unresolved_dlopen_libraries) | tr '\n' ' ')
  {
    echo "== machine"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
    nvcc --version 2>/dev/null | tail -1
    python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)' 2>&1
    cat .gpu/manifest.txt
    echo "libraries supplied: $(ls "$libs" | tr '\n' ' ')"
    echo "libraries still missing: ${missing:-none}"
  } 2>&1 | tee "$out/machine.txt"
  [[ -z "$missing" ]] || { echo "session.sh: cannot run the packed binaries without $missing" >&2; exit 1; }
}

phase_kernels() {
  step kernels test_cuda 300 "$test_cuda" --log_level=message --report_level=detailed
  step kernels bench_cuda_attention 180 "$bench/bench_cuda_attention"
  step kernels sdpa_anchor 180 python3 tools/bench/sdpa_anchor.py --json "$out/sdpa_anchor.json"
}

phase_sanitize() {
  local cs
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  [[ -n "$cs" ]] || { echo "sanitize: no compute-sanitizer on this machine" | tee -a "$summary"; return 0; }
  step sanitize memcheck_kernels 240 $cs --tool memcheck --error-exitcode 1 "$test_cuda" \
    --run_test='!sampling/draws_stay_in_the_top_k_top_p_set_with_sane_frequencies:!gemm:!step_kernels:!cuda_executor:!executor_host'
  step sanitize racecheck 180 $cs --tool racecheck --error-exitcode 1 "$test_cuda" \
    --run_test=decode_attention,prefill_attention,sampling/greedy_matches_cpu_ref_sampler_exactly
  step sanitize synccheck 120 $cs --tool synccheck --error-exitcode 1 "$test_cuda" --run_test=decode_attention,prefill_attention
  step sanitize memcheck_executor 240 $cs --tool memcheck --error-exitcode 1 "$test_cuda" --run_test=gemm,step_kernels,cuda_executor
}

phase_executor() {
  local model=$work/m64
  step executor make_model 60 "$bin" make-model --out "$model" --hidden-size 256 --heads 4 --kv-heads 2 --head-dim 64 \
    --intermediate-size 512 --layers 4
  step executor generate 60 "$bin" generate -m "$model" --executor cuda -p "The capital of France is" -n 32
  step executor replay 120 "$bin" replay --trace traces/sharegpt_like.jsonl --model "$model" --executor cuda -q \
    -o "$out/replay_cuda.json"
  # Speculative decoding with the model as its own draft: both KV caches sized from the device's memory
  # (cuda/target_and_draft.h). The trace samples, so a proposal is kept with the target's probability of it:
  # about a third on this model (the cpu executor's run of the same command: 33.6%).
  step executor replay_draft 120 "$bin" replay --trace traces/sharegpt_like.jsonl --model "$model" --executor cuda \
    --max-requests 32 --speculative-config "{\"model\": \"$model\", \"num_speculative_tokens\": 4}" \
    -o "$out/replay_cuda_draft.json"
  for trace in traces/*.jsonl; do
    local name; name=$(basename "$trace" .jsonl)
    step executor "check_$name" 120 "$bin" check --trace "$trace" --model "$model" --executors sim,cpu,cuda
    step executor "check_${name}_swap" 120 "$bin" check --trace "$trace" --model "$model" --executors sim,cpu,cuda \
      --num-gpu-blocks-override 96 --preemption-mode swap
    step executor "check_${name}_recompute" 120 "$bin" check --trace "$trace" --model "$model" \
      --executors sim,cpu,cuda --num-gpu-blocks-override 96 --preemption-mode recompute
  done
  # Gated against HF's own error in the same dtype (a fixed 2e-2 failed bf16 on the first H100 run
  # at 8x fp16's error: the mantissas' ratio, i.e. rounding).
  step executor hf_oracle_bf16 240 python3 tools/validate/hf_oracle.py --heads 4 --kv-heads 2 \
    --pagedllm "$bin" --extra-score-args "--executor cuda" --yardstick bfloat16
  step executor hf_oracle_fp16 240 python3 tools/validate/hf_oracle.py --heads 4 --kv-heads 2 \
    --pagedllm "$bin" --extra-score-args "--executor cuda --dtype fp16" --yardstick float16
}

phase_decode() {
  step decode floor 240 "$bench/bench_cuda_decode"
  step decode block_16_vs_2048 300 "$bench/bench_cuda_decode" --block-sizes 16,2048 --batches 1,4,8,32,64
}

# Where a decode step's time goes: Nsight Compute over eager Llama-3-8B steps at batch 1 (the
# 85%-of-floor target) and batch 64 (GQA decode attention at size), one line per kernel name
# (time, % of DRAM and SM peak, occupancy). --clock-control none: the card's clocks as found.
phase_nsight() {
  local ncu
  ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [[ -n "$ncu" ]] || { echo "nsight: no ncu on this machine" | tee -a "$summary"; return 0; }
  local batch
  for batch in 1 64; do
    # Only the timed step: the bench brackets its timed steps with cudaProfilerStart/Stop.
    # The first 40 launches of the step: the embedding and three layers, every per-layer kernel three
    # times (each launch is replayed ~10 times: the whole step, ~420 launches, did not finish in 111 s
    # on the H200 session of 2026-11-28). The LM head's GEMM is left out.
    step nsight "decode_batch_$batch" 150 "$ncu" --clock-control none --profile-from-start off --launch-count 40 \
      --section SpeedOfLight --section Occupancy --print-summary per-kernel \
      "$bench/bench_cuda_decode" --models llama-3-8b --batches "$batch" --eager --warmup 1 --steps 1
  done
}

# pagedllm first, then HF, then the report, as three steps: a step that runs out of time leaves the
# others' figures. HF runs one static batch of 32 (its first 32 requests): on the H200 (2026-11-28)
# batches of 8 took 193 s for those 32 requests (60.35 useful tok/s, 52% of generated tokens wasted
# on padding), and the batch of 32 did not finish in what was left of 280 s.
phase_transformers() {
  local cvt=(tools/bench/cuda_vs_transformers.sh --work "$work/cvt" --pagedllm "$bin" --hf-max-requests 32
             --batch-sizes 32 --json "$out/cuda_vs_transformers.json")
  step transformers pagedllm 240 "${cvt[@]}" --steps checkpoint,trace,pagedllm
  step transformers hf 240 "${cvt[@]}" --steps hf
  step transformers report 30 "${cvt[@]}" --steps report
  cp "$work/cvt/pagedllm.log" "$logs/transformers.pagedllm_replay.log" 2>/dev/null
}

# The Llama-2-7B-shaped checkpoint of the transformers phase where this call wrote one, else a new one.
phase_calibrate() {
  # The executor's prefill runs the tensor-core kernel by default, first run on a GPU here unless
  # the kernels phase ran before: its tests (seconds) say whether the profile below times a kernel
  # that computes the right thing.
  step calibrate prefill_kernels 60 "$test_cuda" --run_test=prefill_attention
  local model=$work/cvt/model-llama-2-7b hardware=h100-sxm
  nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && hardware=h200
  if [[ ! -f "$model/config.json" ]]; then
    model=$work/llama-2-7b
    step calibrate checkpoint 240 python3 tools/validate/hf_checkpoint.py --shape llama-2-7b --out "$model" \
      --device cuda --pagedllm "$bin"
  fi
  step calibrate fidelity 420 tools/bench/sim_fidelity.sh --bin "$bin" --executor cuda --model "$model" \
    --synth 200:8 --rate-scale 1 --repeats 2 --profile-args "--passes 1" --roofline "--hardware $hardware" \
    --out "$work/fidelity" \
    -- --num-gpu-blocks-override 4096 --max-model-len 4096
  cp "$work/fidelity/profile.json" "$out/cuda_profile_llama-2-7b_$hardware.json" 2>/dev/null
  cp "$work/fidelity/fidelity.json" "$out/fidelity.json" 2>/dev/null
  # What a failed or cut-short calibration got through: the real replays' reports and the profile's.
  local file
  for file in "$work"/fidelity/*.txt "$work"/fidelity/real_*.json; do
    [[ -f "$file" ]] && cp "$file" "$logs/calibrate.$(basename "$file")"
  done
}

: >"$summary"
setup
for phase in "${phases[@]}"; do "phase_$phase"; done
