#!/bin/bash
# A capacity plan's sweep as a Slurm job array: task i runs `pagedllm plan ... --shard i/N`, and a
# job that depends on the whole array joins the shards with `pagedllm plan merge`.
#
#   sbatch --array=0-7 deploy/slurm/plan-array.sh          # N = 8 shards: tasks 0..7
#   sbatch --dependency=afterok:<array job id> --wrap \
#     "pagedllm plan merge $PLAN_DIR/shard-*.json -o $PLAN_DIR/plan.json"
#
# Every task runs the same arguments but --shard (`plan merge` checks it); set PLAN_ARGS to the
# sweep, PLAN_DIR to a directory every node sees, PAGEDLLM to the binary. No GPU is needed: each
# task simulates as many configurations at once as it has CPUs (--cpus-per-task; --jobs).
#SBATCH --job-name=pagedllm-plan
#SBATCH --cpus-per-task=4
#SBATCH --mem=8G
#SBATCH --time=04:00:00
#SBATCH --output=pagedllm-plan-%A-%a.log
set -euo pipefail

: "${SLURM_ARRAY_TASK_ID:?run as a job array: sbatch --array=0-N-1 $0}"
: "${SLURM_ARRAY_TASK_COUNT:?run as a job array: sbatch --array=0-N-1 $0}"
PAGEDLLM=${PAGEDLLM:-pagedllm}
PLAN_DIR=${PLAN_DIR:-$PWD/plan}
PLAN_ARGS=${PLAN_ARGS:---trace $PLAN_DIR/trace.jsonl --model llama-3-8b --hardware h100-sxm --slo ttft_p99=2000,tpot_p99=100 --target-rate 40 --sweep max-num-seqs=64,128,256,512 --sweep max-num-batched-tokens=2048,4096,8192,16384 --sweep tp=1,2}

# Task ids run from the array's first id; a shard index must run from 0.
first=${SLURM_ARRAY_TASK_MIN:-0}
index=$((SLURM_ARRAY_TASK_ID - first))
mkdir -p "$PLAN_DIR"
# shellcheck disable=SC2086  # PLAN_ARGS is a list of arguments
exec "$PAGEDLLM" plan $PLAN_ARGS --jobs "${SLURM_CPUS_PER_TASK:-0}" \
  --shard "$index/$SLURM_ARRAY_TASK_COUNT" --output-json "$PLAN_DIR/shard-$index.json"
