#!/usr/bin/env bash
# Issue 9: pagedllm's CUDA engine vs Hugging Face Transformers' generate() with static batches, on the
# same random Llama checkpoint, the same ShareGPT-like trace and the same GPU (vLLM's blog: 24x over
# HF Transformers on LLaMA-7B; the goal here is >= 24x). Output tok/s of each, and the ratio
# pagedllm / the best HF batch size.
#
# Steps (--steps, comma-separated; default all of them, in this order):
#   checkpoint  a random bf16 Llama of --shape, written by transformers (tools/validate/hf_checkpoint.py)
#               with pagedllm make-model's tokenizer (~943 tokens: pagedllm accepts a config vocab_size
#               above the tokenizer's size); kept in WORK and reused unless --fresh
#   trace       `pagedllm trace synth` with prompt and output lengths fitted to --fit (all at time 0)
#   hf          tools/bench/hf_generate_baseline.py at each --batch-sizes (first --hf-max-requests
#               requests of the trace; static batches are independent, so a prefix estimates the rate)
#   pagedllm    `pagedllm replay --executor cuda --time fast` on the whole trace (or its first
#               --pagedllm-max-requests)
#   report      the table, and WORK/summary.json (also the default --json)
# Results land in WORK (default build/bench/cuda_vs_transformers), so steps can run in separate calls
# (e.g. --steps checkpoint,trace,hf then --steps pagedllm,report).
#
# GPU session:   tools/bench/cuda_vs_transformers.sh --python /path/to/venv/bin/python
# CPU smoke run: tools/bench/cuda_vs_transformers.sh --shape tiny --hf-device cpu --pagedllm-executor cpu \
#                  --num-requests 16 --batch-sizes "4 16" --synth-args "--output-max 48 --prompt-max 128" \
#                  --python /tmp/hf-venv/bin/python
set -euo pipefail
cd "$(dirname "$0")/../.."

usage() {
  cat <<'EOF'
usage: tools/bench/cuda_vs_transformers.sh [options]
  --shape S                 llama-2-7b (default), llama-3-8b or tiny (CPU smoke test)
  --work DIR                where checkpoint, trace and results go (default build/bench/cuda_vs_transformers)
  --steps LIST              comma-separated: checkpoint,trace,hf,pagedllm,report (default all)
  --fresh                   rebuild the checkpoint even if WORK has one
  --python PY               python with torch + transformers (default: $PYTHON or python3)
  --pagedllm BIN            default build/release/pagedllm
  --num-requests N          requests in the synthesized trace (default 512)
  --seed N                  trace, checkpoint and prompt seed (default 0)
  --fit TRACE               the trace whose lengths are fitted (default traces/sharegpt_like.jsonl)
  --synth-args "ARGS"       more `pagedllm trace synth` options (e.g. "--output-max 256")
  --batch-sizes "B..."      HF static batch sizes (default "8 32")
  --hf-max-requests N       HF runs the first N requests of the trace (default 64; 0 = all)
  --hf-device D             cuda (default) or cpu
  --hf-args "ARGS"          more hf_generate_baseline.py options (e.g. "--attn-implementation eager")
  --pagedllm-executor E     cuda (default), cpu or sim
  --pagedllm-max-requests N pagedllm replays the first N requests (default 0 = all)
  --replay-args "ARGS"      more `pagedllm replay` options (e.g. "--enforce-eager")
  --json PATH               the summary (default WORK/summary.json)
  -h, --help                this help
Exit status: 0 done (whatever the ratio), non-zero a step failed. An HF batch size that runs out of
device memory is reported as OOM and skipped.
EOF
}

shape=llama-2-7b
work=build/bench/cuda_vs_transformers
steps=checkpoint,trace,hf,pagedllm,report
fresh=0
python="${PYTHON:-python3}"
pagedllm=build/release/pagedllm
num_requests=512
seed=0
fit=traces/sharegpt_like.jsonl
synth_args=""
batch_sizes="8 32"
hf_max_requests=64
hf_device=cuda
hf_args=""
executor=cuda
pagedllm_max_requests=0
replay_args=""
summary=""

need_value() { [ $# -ge 2 ] || { echo "cuda_vs_transformers: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --fresh) fresh=1; shift; continue ;;
  esac
  need_value "$@"
  case "$1" in
    --shape) shape=$2 ;;
    --work) work=$2 ;;
    --steps) steps=$2 ;;
    --python) python=$2 ;;
    --pagedllm) pagedllm=$2 ;;
    --num-requests) num_requests=$2 ;;
    --seed) seed=$2 ;;
    --fit) fit=$2 ;;
    --synth-args) synth_args=$2 ;;
    --batch-sizes) batch_sizes=$2 ;;
    --hf-max-requests) hf_max_requests=$2 ;;
    --hf-device) hf_device=$2 ;;
    --hf-args) hf_args=$2 ;;
    --pagedllm-executor) executor=$2 ;;
    --pagedllm-max-requests) pagedllm_max_requests=$2 ;;
    --replay-args) replay_args=$2 ;;
    --json) summary=$2 ;;
    *) echo "cuda_vs_transformers: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift 2
done

case "$shape" in llama-2-7b|llama-3-8b|tiny) ;; *) echo "cuda_vs_transformers: --shape: $shape?" >&2; exit 2 ;; esac
for step in ${steps//,/ }; do
  case "$step" in checkpoint|trace|hf|pagedllm|report) ;;
    *) echo "cuda_vs_transformers: --steps: unknown step '$step'" >&2; exit 2 ;; esac
done
for value in "$num_requests" "$seed" "$hf_max_requests" "$pagedllm_max_requests" $batch_sizes; do
  [[ "$value" =~ ^[0-9]+$ ]] || { echo "cuda_vs_transformers: '$value' is not a count" >&2; exit 2; }
done
[ -n "$batch_sizes" ] || { echo "cuda_vs_transformers: --batch-sizes is empty" >&2; exit 2; }
[ -x "$pagedllm" ] || { echo "cuda_vs_transformers: $pagedllm is not built (tools/build.sh, or --pagedllm)" >&2; exit 2; }
has_step() { [[ ",$steps," == *",$1,"* ]]; }

mkdir -p "$work"
model="$work/model-$shape"
trace="$work/trace.jsonl"
summary="${summary:-$work/summary.json}"
export HF_HUB_DISABLE_PROGRESS_BARS=1 TRANSFORMERS_VERBOSITY=error TOKENIZERS_PARALLELISM=false
read -r -a synth_extra <<<"$synth_args"
read -r -a hf_extra <<<"$hf_args"
read -r -a replay_extra <<<"$replay_args"
if [ "$hf_device" = cpu ]; then checkpoint_device=cpu; else checkpoint_device=cuda; fi
stamp() { date +%H:%M:%S; }

if has_step checkpoint; then
  if [ "$fresh" = 0 ] && [ -f "$model/config.json" ] && [ -f "$model/tokenizer.json" ] \
       && compgen -G "$model/*.safetensors" >/dev/null; then
    echo "=== $(stamp) checkpoint: reusing $model (--fresh rebuilds it)"
  else
    echo "=== $(stamp) checkpoint: random $shape bf16 -> $model"
    rm -rf "$model"
    "$python" tools/validate/hf_checkpoint.py --shape "$shape" --out "$model" --dtype bfloat16 \
      --device "$checkpoint_device" --seed "$seed" --pagedllm "$pagedllm"
  fi
fi

if has_step trace; then
  echo "=== $(stamp) trace: $num_requests requests, lengths fitted to $fit -> $trace"
  "$pagedllm" trace synth --num-requests "$num_requests" --seed "$seed" --prompt-len "fit:$fit" \
    --output-len "fit:$fit" ${synth_extra[@]+"${synth_extra[@]}"} --output "$trace"
fi

if has_step hf; then
  [ -f "$trace" ] || { echo "cuda_vs_transformers: no trace at $trace (run the trace step)" >&2; exit 2; }
  if [ "$hf_max_requests" = 0 ]; then hf_which="all requests"; else hf_which="first $hf_max_requests requests"; fi
  for batch in $batch_sizes; do
    echo "=== $(stamp) hf: generate() static batches of $batch on $hf_device ($hf_which)"
    rm -f "$work/hf-bs$batch.json"
    status=0
    "$python" tools/bench/hf_generate_baseline.py --model "$model" --trace "$trace" --batch-size "$batch" \
      --max-requests "$hf_max_requests" --device "$hf_device" --seed "$seed" --quiet \
      --json "$work/hf-bs$batch.json" ${hf_extra[@]+"${hf_extra[@]}"} || status=$?
    if [ "$status" = 3 ]; then
      echo "cuda_vs_transformers: HF batch size $batch ran out of device memory; skipped" >&2
    elif [ "$status" != 0 ]; then
      echo "cuda_vs_transformers: hf_generate_baseline.py failed ($status) at batch size $batch" >&2
      exit "$status"
    fi
  done
fi

if has_step pagedllm; then
  [ -f "$trace" ] || { echo "cuda_vs_transformers: no trace at $trace (run the trace step)" >&2; exit 2; }
  if [ "$pagedllm_max_requests" = 0 ]; then paged_which="all requests"; else paged_which="first $pagedllm_max_requests requests"; fi
  echo "=== $(stamp) pagedllm: replay --executor $executor --time fast ($paged_which)"
  rm -f "$work/pagedllm.json"
  status=0
  "$pagedllm" replay --trace "$trace" --model "$model" --executor "$executor" --time fast \
    --max-requests "$pagedllm_max_requests" --seed "$seed" --quiet --output-json "$work/pagedllm.json" \
    ${replay_extra[@]+"${replay_extra[@]}"} >"$work/pagedllm.log" 2>&1 || status=$?
  if [ "$status" != 0 ] || [ ! -f "$work/pagedllm.json" ]; then
    cat "$work/pagedllm.log" >&2
    echo "cuda_vs_transformers: pagedllm replay failed ($status); its output is above and in $work/pagedllm.log" >&2
    exit 1
  fi
  grep -E "Successful requests|Failed requests|Benchmark duration|Output token throughput|Engine steps|Max running|Preemptions" \
    "$work/pagedllm.log" || true
  echo "(full report: $work/pagedllm.log)"
fi

if has_step report; then
  echo "=== $(stamp) report"
  "$python" - "$work" "$summary" "$shape" "$executor" "$batch_sizes" <<'PY'
import json
import sys
from pathlib import Path

work, summary, shape, executor, batch_sizes = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5].split()
rows, hf = [], []
for batch in batch_sizes:
    path = work / f"hf-bs{batch}.json"
    if not path.exists():
        rows.append((f"HF generate() static batch {batch}", None, None, None, "missing"))
        continue
    data = json.loads(path.read_text())
    if data.get("error"):
        rows.append((f"HF generate() static batch {batch}", None, None, None, data["error"]))
        continue
    hf.append(data)
    rows.append((f"HF generate() static batch {batch}", data["output_throughput"], data["requests"],
                 data["useful_output_tokens"], f"{data['wall_seconds']:.1f} s, {100 * data['wasted_output_fraction']:.0f}% waste"))
paged = None
path = work / "pagedllm.json"
if path.exists():
    data = json.loads(path.read_text())
    metrics = data["metrics"]
    paged = {"output_throughput": metrics["output_throughput"], "completed": metrics["completed"],
             "failed": metrics["failed"], "total_output_tokens": metrics["total_output_tokens"],
             "duration": metrics["duration"]}
    rows.append((f"pagedllm replay --executor {executor}", paged["output_throughput"], paged["completed"],
                 paged["total_output_tokens"], f"{paged['duration']:.1f} s, {paged['failed']} failed"))
else:
    rows.append((f"pagedllm replay --executor {executor}", None, None, None, "missing"))
best = max(hf, key=lambda d: d["output_throughput"]) if hf else None
ratio = paged["output_throughput"] / best["output_throughput"] if paged and best and best["output_throughput"] > 0 else None

device = best["device"] if best else "?"
print(f"\nmodel: random {shape} bf16; HF on {device}, transformers {best['transformers'] if best else '?'}")
header = f"{'system':<38} {'output tok/s':>13} {'requests':>9} {'out tokens':>11}  notes"
print(header)
print("-" * len(header))
for name, rate, requests, tokens, note in rows:
    cell = lambda v, f: f.format(v) if v is not None else "-"
    print(f"{name:<38} {cell(rate, '{:13.1f}'):>13} {cell(requests, '{:d}'):>9} {cell(tokens, '{:d}'):>11}  {note}")
if ratio is not None:
    print(f"\npagedllm / best HF (static batch {best['batch_size']}): {ratio:.2f}x   (goal >= 24x)")
else:
    print("\npagedllm / best HF: n/a (a side is missing)")
summary.parent.mkdir(parents=True, exist_ok=True)
summary.write_text(json.dumps({
    "shape": shape, "pagedllm_executor": executor, "device": device,
    "hf": [{k: v for k, v in d.items() if k != "per_batch"} for d in hf],
    "hf_failed": [name for name, rate, *_ , note in rows if rate is None and name.startswith("HF")],
    "pagedllm": paged, "best_hf_batch_size": best["batch_size"] if best else None,
    "ratio_pagedllm_over_best_hf": ratio, "goal": 24.0,
}, indent=1) + "\n")
print(f"wrote {summary}")
PY
fi
