#!/usr/bin/env python3
"""How OpenMP's idle wait decides cpu_ref's step times on an idle and on a busy machine.

Runs bench_cpu_decode (the whole engine loop, decode steps timed one by one) under each wait
setting, first on the idle machine, then with one busy-looping process per core beside it, rounds
interleaved so that drift in the machine falls on every setting alike. Prints, per setting, the
median over rounds of the mean, p50 and p99 step times, and two ratios measured in the same run:
loaded / idle, and against libgomp's own default under the same load.

    tools/bench/cpu_wait_policy.py --model M [--bench build/release/bench/bench_cpu_decode]
        [--batch 4] [--prompt-tokens 64] [--steps 64] [--rounds 3] [--json OUT]

Settings: libgomp's default (GOMP_SPINCOUNT=300000, what an unset environment gives), pagedllm's
default (nothing set: bench_cpu_decode applies it as pagedllm does, cpu_ref/openmp_wait.h),
OMP_WAIT_POLICY=passive, and one thread fewer than the cores (a core left to other work).
Standard library only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run_bench(args, env_extra, threads):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(env_extra)
    command = [args.bench, "--model", args.model, "--batch", str(args.batch), "--prompt-tokens",
               str(args.prompt_tokens), "--steps", str(args.steps), "--threads", str(threads), "--json"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"cpu_wait_policy: {' '.join(command)} failed: {result.stderr[-500:]}")
    return json.loads(result.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--bench", default="build/release/bench/bench_cpu_decode")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--prompt-tokens", type=int, default=64)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="write every run's figures here")
    args = parser.parse_args()

    cores = len(os.sched_getaffinity(0))
    settings = [
        ("libgomp default", {"GOMP_SPINCOUNT": "300000"}, cores),
        ("pagedllm default", {}, cores),
        ("passive", {"OMP_WAIT_POLICY": "passive"}, cores),
    ]
    if cores > 1:
        settings.append((f"{cores - 1} thread(s), spin default", {"GOMP_SPINCOUNT": "300000"}, cores - 1))

    runs = {}
    for load in ("idle", "loaded"):
        hogs = []
        if load == "loaded":
            hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]
        try:
            for round_index in range(args.rounds):
                for name, env, threads in settings:
                    figures = run_bench(args, env, threads)
                    runs.setdefault((name, load), []).append(figures)
                    print(f"{load} round {round_index + 1} {name}: mean {figures['step_ms_mean']:.1f} ms, "
                          f"p99 {figures['step_ms_p99']:.1f} ms", file=sys.stderr)
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()

    def med(name, load, key):
        return statistics.median(run[key] for run in runs[(name, load)])

    print(f"cpu_wait_policy: {args.model}, batch {args.batch}, {args.steps} decode steps, {cores} cores, "
          f"{args.rounds} rounds (medians); loaded = {cores} busy-looping processes beside the engine")
    print(f"{'setting':<32} {'threads':>7} {'idle mean':>9} {'idle p99':>9} {'load mean':>9} {'load p99':>9} "
          f"{'load/idle':>9} {'vs libgomp':>10}")
    base_loaded = med("libgomp default", "loaded", "step_ms_mean")
    summary = []
    for name, _, threads in settings:
        idle_mean, idle_p99 = med(name, "idle", "step_ms_mean"), med(name, "idle", "step_ms_p99")
        load_mean, load_p99 = med(name, "loaded", "step_ms_mean"), med(name, "loaded", "step_ms_p99")
        print(f"{name:<32} {threads:>7} {idle_mean:>9.1f} {idle_p99:>9.1f} {load_mean:>9.1f} {load_p99:>9.1f} "
              f"{load_mean / idle_mean:>9.2f} {load_mean / base_loaded:>10.2f}")
        summary.append({"setting": name, "threads": threads, "idle_step_ms_mean": idle_mean,
                        "idle_step_ms_p99": idle_p99, "loaded_step_ms_mean": load_mean,
                        "loaded_step_ms_p99": load_p99})
    print("(step times in ms; 'vs libgomp': loaded mean / libgomp default's loaded mean)")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"summary": summary,
                       "runs": [{"setting": k[0], "load": k[1], "figures": v} for k, v in runs.items()]}, out, indent=1)


if __name__ == "__main__":
    main()
