#!/usr/bin/env bash
# Load test of `pagedllm serve` on loopback, in one command: starts the server (tiny model, CPU
# engine), sends N streaming requests at once with `pagedllm bench` (all N in flight together),
# samples the server's resident memory and thread count every 0.2 s, and prints the bench report
# with the peaks beside the idle figures.
#   tools/bench/server_load.sh [--bin build/release/pagedllm] [--clients 1000] [--input-len 64]
#       [--output-len 32] [--out DIR] [-- extra serve options]
set -euo pipefail
bin=build/release/pagedllm
clients=1000
input_len=64
output_len=32
out=""
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --input-len) input_len=$2; shift 2 ;;
    --output-len) output_len=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "server_load.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
out=${out:-$(mktemp -d -t pagedllm_load.XXXXXX)}
mkdir -p "$out"
"$bin" serve --port 0 --max-pending-requests $((clients * 2)) "${extra[@]}" > "$out/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  grep -q "ready:" "$out/serve.log" && break
  kill -0 $server 2>/dev/null || { cat "$out/serve.log" >&2; exit 1; }
  sleep 0.1
done
port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out/serve.log")
sample() { awk '/^VmRSS/ {rss=$2} /^Threads/ {threads=$2} END {print rss, threads}' "/proc/$server/status"; }
read -r idle_rss idle_threads < <(sample)
(
  while kill -0 $server 2>/dev/null; do sample; sleep 0.2; done
) > "$out/samples.txt" &
sampler=$!
"$bin" bench --base-url "http://127.0.0.1:$port" --dataset random --num-prompts "$clients" --input-len "$input_len" \
  --output-len "$output_len" --request-rate inf -o "$out/bench.json" | tee "$out/bench.txt"
kill $sampler 2>/dev/null || true
read -r peak_rss peak_threads < <(awk 'BEGIN {r = 0; t = 0} {if ($1 > r) r = $1; if ($2 > t) t = $2} END {print r, t}' "$out/samples.txt")
echo "server: resident memory idle $((idle_rss / 1024)) MiB, peak $((peak_rss / 1024)) MiB; threads idle $idle_threads, peak $peak_threads"
echo "(files in $out)"
