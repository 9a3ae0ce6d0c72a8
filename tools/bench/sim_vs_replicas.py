#!/usr/bin/env python3
"""The simulator against a real multi-replica CPU deployment (issue 25): the same requests through
R `pagedllm serve --executor cpu` replicas behind vllm-router, and through `pagedllm simulate
--replicas R` on a `pagedllm profile --executor cpu` of the same model and threads. Prints each
metric real vs simulated and the error; exit 0 whatever the error (a benchmark, not a test).

Steps (everything lands in --out):
  1. model     `pagedllm make-model` at --shape (unless --model): big enough that a step costs
               milliseconds, so the HTTP path's own latency is small beside it
  2. trace     `pagedllm trace synth` (-n --requests at --rate req/s, lengths capped by --prompt-max
               and --output-max)
  3. profile   `pagedllm profile --executor cpu --threads T` (unless --profile); with
               --profile-under-load K, K-1 copies run at once beside it, so that its steps are timed
               with the machine as busy as K replicas make it (and only the first is kept)
  4. real      R replicas (`serve --threads T`), vllm-router --policy round_robin in front, and
               `pagedllm bench --trace` through the router (the trace's arrival times)
  5. sim       `pagedllm simulate --replicas R --router round-robin --profile` on the same trace
  6. report    output tok/s, p50/p99 TTFT, p50 TPOT: real, simulated, error

  python3 tools/bench/sim_vs_replicas.py --router-bin $(which vllm-router) [--replicas 3] [--threads 1]
      [--requests 120] [--rate 3] [--profile-under-load 3] [--out build/bench/sim_vs_replicas]

Needs vllm-router (PyPI, tests/pypi/requirements.txt pins it). Run it on a quiet machine: the
real run and the profile are timings.
"""
import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "pypi"))
from router_harness import Router  # noqa: E402  (vllm-router as check_router.py starts it)
from serve_process import start_server  # noqa: E402  (one way of starting a replica for every script)

SHAPES = {  # make-model options: steps of milliseconds on one core, a profile of minutes
    "small": ["--hidden-size", "512", "--layers", "8", "--heads", "8", "--kv-heads", "2", "--head-dim", "64",
              "--intermediate-size", "1408", "--max-positions", "1024", "--vocab-size", "2048"],
}
METRICS = [  # (key in the metrics, label)
    ("output_throughput", "output tok/s"),
    ("median_ttft_ms", "TTFT p50 ms"),
    ("p99_ttft_ms", "TTFT p99 ms"),
    ("median_tpot_ms", "TPOT p50 ms"),
]


def run(command, **kwargs):
    print("$ " + " ".join(str(c) for c in command), flush=True)
    return subprocess.run([str(c) for c in command], check=True, **kwargs)


def profile(args, model, out):
    command = [str(c) for c in [args.pagedllm, "profile", "--executor", "cpu", "--model", model, "--threads",
                                args.threads, "--max-num-seqs", args.max_num_seqs, *args.profile_args.split(), "-q"]]
    extra = [subprocess.Popen(command + ["-o", str(out.parent / f"profile_load_{i}.json")], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for i in range(args.profile_under_load - 1)]
    try:
        run(command + ["-o", out], stdout=subprocess.DEVNULL)
    finally:
        for process in extra:
            process.kill()
            process.wait()


def real_run(args, model, trace, out):
    replicas = []
    router = None
    try:
        for i in range(args.replicas):
            process, port = start_server(args.pagedllm, model, "--threads", str(args.threads), "--served-model-name",
                                         "m", "--max-num-seqs", str(args.max_num_seqs), timeout=120)
            replicas.append(process)
            print(f"replica {i}: port {port}", flush=True)
            replicas[-1].port = port
        router = Router(args.router_bin, [f"http://127.0.0.1:{p.port}" for p in replicas], "round_robin")
        if not router.wait_ready(60):
            sys.exit(f"sim_vs_replicas: vllm-router did not become ready (see {router.log.name})")
        with open(out.parent / "bench.txt", "w") as bench_log:
            run([args.pagedllm, "bench", "--trace", trace, "--base-url", f"http://127.0.0.1:{router.port}",
                 "--model", "m", "-q", "-o", out], stdout=bench_log)
    finally:
        if router:
            router.stop()
        for process in replicas:
            process.terminate()
        for process in replicas:
            try:
                process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                process.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pagedllm", default=str(REPO / "build/release/pagedllm"))
    parser.add_argument("--router-bin", default=shutil.which("vllm-router"), help="vllm-router (default: on PATH)")
    parser.add_argument("--model", help="a model for serve (default: make-model at --shape into --out)")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="small")
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="OpenMP threads per replica and for the profile")
    parser.add_argument("--max-num-seqs", type=int, default=32)
    parser.add_argument("--requests", type=int, default=120)
    parser.add_argument("--rate", type=float, default=3.0, help="requests per second, Poisson")
    parser.add_argument("--prompt-max", type=int, default=512)
    parser.add_argument("--output-max", type=int, default=128)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", type=Path, help="reuse this profile instead of measuring one")
    parser.add_argument("--profile-args", default="--repeats 5 --passes 2")
    parser.add_argument("--profile-under-load", type=int, default=1,
                        help="K: time the profile with K-1 copies of it running beside it")
    parser.add_argument("--out", type=Path, default=REPO / "build/bench/sim_vs_replicas")
    args = parser.parse_args()
    if not args.router_bin:
        parser.error("no vllm-router on PATH: pip install vllm-router (tests/pypi/requirements.txt), or --router-bin")
    args.out.mkdir(parents=True, exist_ok=True)

    model = args.model
    if not model:
        model = str(args.out / f"model-{args.shape}")
        if not (Path(model) / "config.json").exists():
            run([args.pagedllm, "make-model", "--out", model, *SHAPES[args.shape]], stdout=subprocess.DEVNULL)
    trace = args.out / "trace.jsonl"
    run([args.pagedllm, "trace", "synth", "-n", args.requests, "--request-rate", args.rate, "--seed", args.seed,
         "--prompt-max", args.prompt_max, "--output-max", args.output_max, "-o", trace], stderr=subprocess.DEVNULL)
    profile_path = args.profile or args.out / "profile.json"
    if not args.profile:
        started = time.time()
        profile(args, model, profile_path)
        print(f"profile: {time.time() - started:.0f} s", flush=True)

    real_path = args.out / "real.json"
    started = time.time()
    real_run(args, model, trace, real_path)
    print(f"real run: {time.time() - started:.0f} s", flush=True)
    sim_path = args.out / "sim.json"
    run([args.pagedllm, "simulate", "--trace", trace, "--model", model, "--profile", profile_path, "--replicas",
         args.replicas, "--router", "round-robin", "--max-num-seqs", args.max_num_seqs, "-q", "-o", sim_path],
        stdout=subprocess.DEVNULL)

    real = json.loads(real_path.read_text())["metrics"]
    sim = json.loads(sim_path.read_text())["metrics"]
    print(f"\n{args.replicas} replicas x {args.threads} thread(s), {args.requests} requests at {args.rate} req/s, "
          f"vllm-router round_robin vs simulate --router round-robin (profile under load "
          f"{args.profile_under_load})")
    print(f"{'metric':<14} {'real':>10} {'sim':>10} {'error':>8}")
    report = {"replicas": args.replicas, "threads": args.threads, "requests": args.requests, "rate": args.rate,
              "profile_under_load": args.profile_under_load, "metrics": {}}
    for key, label in METRICS:
        error = (sim[key] - real[key]) / real[key] if real[key] else float("nan")
        report["metrics"][key] = {"real": real[key], "sim": sim[key], "error": error}
        print(f"{label:<14} {real[key]:>10.2f} {sim[key]:>10.2f} {error:>+8.1%}")
    (args.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
