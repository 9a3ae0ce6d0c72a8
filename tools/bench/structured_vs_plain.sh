#!/usr/bin/env bash
# Output throughput of constrained requests against unconstrained ones on one `pagedllm serve`,
# side by side: rounds of three `pagedllm bench` runs (plain, a regex, a JSON schema whose string
# cannot close within the output length), each 32 random prompts of 64 tokens, 64 output tokens,
# 16 at a time. Issue 23's target: constrained >= 0.9x unconstrained on the CPU engine.
#   tools/bench/structured_vs_plain.sh PAGEDLLM MODEL [ROUNDS]
# Prints each run's output tok/s, then the medians and their ratios.
set -euo pipefail
bin=$1
model=$2
rounds=${3:-4}
work=$(mktemp -d)
"$bin" serve --model "$model" --port 0 --threads 2 > "$work/serve.log" 2>&1 &
pid=$!
trap 'kill $pid; rm -rf "$work"' EXIT
for _ in $(seq 1200); do grep -q "ready:" "$work/serve.log" && break; sleep 0.1; done
port=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/serve.log" | head -1 | sed 's/.*://')
declare -A extra=(
  [plain]=''
  [regex]='{"guided_regex": "[A-Za-z0-9 ,.]+"}'
  [json]='{"guided_json": {"type": "object", "properties": {"story": {"type": "string", "minLength": 300}}, "required": ["story"]}}'
)
for round in $(seq "$rounds"); do
  for kind in plain regex json; do
    "$bin" bench --base-url "http://127.0.0.1:$port" --dataset random --num-prompts 32 --input-len 64 \
      --output-len 64 --max-concurrency 16 --seed 3 -q --output-json "$work/$kind.$round.json" \
      ${extra[$kind]:+--extra-body "${extra[$kind]}"} > /dev/null
  done
done
python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
medians = {}
for kind in ("plain", "regex", "json"):
    runs = [json.load(open(f"{work}/{kind}.{r}.json"))["metrics"] for r in range(1, rounds + 1)]
    assert all(m["failed"] == 0 and m["total_output_tokens"] == 32 * 64 for m in runs), f"{kind}: failed or short runs"
    values = [m["output_throughput"] for m in runs]
    medians[kind] = statistics.median(values)
    print(f"{kind:6} output tok/s by round: {', '.join(f'{v:.1f}' for v in values)}; median {medians[kind]:.1f}")
for kind in ("regex", "json"):
    print(f"{kind} / plain: {medians[kind] / medians['plain']:.2f}x (target >= 0.9x)")
PY
