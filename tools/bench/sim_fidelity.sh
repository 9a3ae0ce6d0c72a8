#!/usr/bin/env bash
# Simulator fidelity against the real engine (cpu or cuda), in one command:
#   1. pagedllm profile --executor E          (a measured step profile of this machine)
#   2. pagedllm replay --executor E           (the real engine; --repeats times, half of them
#                                              before the profile and half after)
#   3. pagedllm replay --executor sim --profile   (the simulator on that profile; also with
#      --profile-quiet, the tables without the profile's load factor)
#   4. with --roofline "ARGS": pagedllm replay --executor sim ARGS (the uncalibrated roofline, e.g.
#      "--hardware h100-sxm": the error before calibration), then the same with --gemm-model
#      per-gemm (GEMMs priced per shape: which of the two linear models whole steps agree with)
# and prints, per metric, the real runs (median, min..max), each simulation and its error against
# the real median. Everything the runs wrote stays in --out.
#
#   tools/bench/sim_fidelity.sh [--bin build/release/pagedllm] [--executor cpu|cuda] [--model tiny]
#       [--trace traces/sharegpt_like.jsonl] [--synth N:RATE] [--rate-scale 15] [--repeats 5]
#       [--threads 1] [--time virtual|real] [--profile FILE] [--profile-args "--quick"]
#       [--roofline "--hardware h100-sxm"] [--out DIR] [-- extra replay options]
#
# --synth N:RATE replays a trace of N requests at RATE req/s synthesized with --trace's length
# distributions (a longer trace than the committed one: steadier percentiles).
# Extra replay options go to every replay, real and simulated (e.g. --num-gpu-blocks-override N,
# so that the simulation has the real run's KV cache).
set -euo pipefail

bin=${PAGEDLLM:-build/release/pagedllm}
trace=traces/sharegpt_like.jsonl
rate_scale=15
repeats=5
threads=1
time_mode=virtual
executor=cpu
model=tiny
roofline=""
profile=""
profile_args=""
synth=""
out=""
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --executor) executor=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --roofline) roofline=$2; shift 2 ;;
    --trace) trace=$2; shift 2 ;;
    --synth) synth=$2; shift 2 ;;
    --rate-scale) rate_scale=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --time) time_mode=$2; shift 2 ;;
    --profile) profile=$2; shift 2 ;;
    --profile-args) profile_args=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "sim_fidelity.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$executor" == cpu || "$executor" == cuda ]] || { echo "sim_fidelity.sh: --executor is cpu or cuda, got '$executor'" >&2; exit 2; }
[[ -x "$bin" ]] || { echo "sim_fidelity.sh: no pagedllm binary at $bin (--bin, or PAGEDLLM=...)" >&2; exit 2; }
out=${out:-$(mktemp -d -t pagedllm_fidelity.XXXXXX)}
mkdir -p "$out"

if [[ -n "$synth" ]]; then
  [[ "$synth" == *:* ]] || { echo "sim_fidelity.sh: --synth expects N:RATE, got '$synth'" >&2; exit 2; }
  echo "== synthesizing ${synth%%:*} requests at ${synth##*:} req/s with the lengths of $trace" >&2
  "$bin" trace synth -n "${synth%%:*}" --request-rate "${synth##*:}" --prompt-len "fit:$trace" \
    --output-len "fit:$trace" --seed 11 -o "$out/trace.jsonl" 2>/dev/null
  trace=$out/trace.jsonl
fi
common=(--trace "$trace" --model "$model" --rate-scale "$rate_scale" -q "${extra[@]}")
executor_flags=(--executor "$executor")
[[ "$executor" == cpu ]] && executor_flags+=(--threads "$threads")
real_replay() {  # real_replay INDEX
  echo "== real replay $1/$repeats (${executor_flags[*]}, $time_mode time)" >&2
  local began=$SECONDS
  "$bin" replay "${common[@]}" "${executor_flags[@]}" --time "$time_mode" -o "$out/real_$1.json" \
    >"$out/real_$1.txt"
  # The wall time with the start-up (weights, sizing, graphs), beside the report's own duration.
  echo "== real replay $1/$repeats took $((SECONDS - began)) s of wall time" >&2
}

# The machine's speed drifts (other work, shared caches): half the real runs go before the
# profile and half after, so that their median brackets the time it was measured in.
first_after=1
if [[ -z "$profile" ]]; then
  for i in $(seq 1 $((repeats / 2))); do real_replay "$i"; done
  first_after=$((repeats / 2 + 1))
  profile=$out/profile.json
  echo "== profile (${executor_flags[*]}) -> $profile" >&2
  # shellcheck disable=SC2086  # profile_args is a list of options
  "$bin" profile "${executor_flags[@]}" --model "$model" $profile_args -o "$profile" >"$out/profile.txt"
  cat "$out/profile.txt" >&2
fi
for i in $(seq "$first_after" "$repeats"); do real_replay "$i"; done

sim_flags=()
[[ "$time_mode" == real ]] && sim_flags+=(--profile-engine-overhead)
echo "== simulated replay (profile $profile)" >&2
"$bin" replay "${common[@]}" --executor sim --profile "$profile" "${sim_flags[@]}" -o "$out/sim.json" >"$out/sim.txt"
"$bin" replay "${common[@]}" --executor sim --profile "$profile" "${sim_flags[@]}" --profile-quiet \
  -o "$out/sim_quiet.json" >"$out/sim_quiet.txt"
if [[ -n "$roofline" ]]; then
  echo "== simulated replay (roofline: $roofline)" >&2
  # shellcheck disable=SC2086  # roofline is a list of options
  "$bin" replay "${common[@]}" --executor sim $roofline -o "$out/sim_roofline.json" >"$out/sim_roofline.txt"
  # shellcheck disable=SC2086
  "$bin" replay "${common[@]}" --executor sim $roofline --gemm-model per-gemm -o "$out/sim_per_gemm.json" \
    >"$out/sim_per_gemm.txt"
fi

python3 - "$out" "$repeats" "$profile" "$roofline" <<'EOF'
import json, statistics, sys
out, repeats, profile, roofline = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
real = [json.load(open(f"{out}/real_{i}.json"))["metrics"] for i in range(1, repeats + 1)]
sim = json.load(open(f"{out}/sim.json"))["metrics"]
sim_quiet = json.load(open(f"{out}/sim_quiet.json"))["metrics"]
sim_roofline = json.load(open(f"{out}/sim_roofline.json"))["metrics"] if roofline else None
sim_per_gemm = json.load(open(f"{out}/sim_per_gemm.json"))["metrics"] if roofline else None
load_factor = json.load(open(profile))["load_factor"]
rows = [("request throughput (req/s)", "request_throughput"), ("output throughput (tok/s)", "output_throughput"),
        ("p50 TTFT (ms)", "p50_ttft_ms"), ("p99 TTFT (ms)", "p99_ttft_ms"),
        ("p50 TPOT (ms)", "p50_tpot_ms"), ("p99 TPOT (ms)", "p99_tpot_ms"), ("duration (s)", "duration")]
print(f"real: {repeats} runs (median, min..max); sim: the profile (load factor {load_factor:.3f}); "
      "sim quiet: without the load factor" + (f"; roofline: {roofline}" if roofline else ""))
header = f"{'metric':<27} {'real':>9} {'real min..max':>19} {'sim':>9} {'error':>7} {'sim quiet':>10} {'error':>7}"
print(header + (f" {'roofline':>9} {'error':>7} {'per-gemm':>9} {'error':>7}" if roofline else ""))
summary = {}
for name, key in rows:
    values = [r[key] for r in real]
    mid = statistics.median(values)
    err = lambda v: 100.0 * (v - mid) / mid if mid else float("nan")
    spread = f"{min(values):.4g}..{max(values):.4g}"
    line = f"{name:<27} {mid:>9.4g} {spread:>19} {sim[key]:>9.4g} {err(sim[key]):>+6.1f}% {sim_quiet[key]:>10.4g} {err(sim_quiet[key]):>+6.1f}%"
    summary[key] = {"real_median": mid, "real_min": min(values), "real_max": max(values),
                    "sim": sim[key], "sim_error_pct": err(sim[key]),
                    "sim_quiet": sim_quiet[key], "sim_quiet_error_pct": err(sim_quiet[key])}
    if sim_roofline:
        line += f" {sim_roofline[key]:>9.4g} {err(sim_roofline[key]):>+6.1f}%"
        line += f" {sim_per_gemm[key]:>9.4g} {err(sim_per_gemm[key]):>+6.1f}%"
        summary[key].update({"roofline": sim_roofline[key], "roofline_error_pct": err(sim_roofline[key]),
                             "per_gemm": sim_per_gemm[key], "per_gemm_error_pct": err(sim_per_gemm[key])})
    print(line)
json.dump({"repeats": repeats, "load_factor": load_factor, "roofline": roofline, "metrics": summary},
          open(f"{out}/fidelity.json", "w"), indent=1)
print(f"(files in {out}; the table as JSON in {out}/fidelity.json)")
EOF
