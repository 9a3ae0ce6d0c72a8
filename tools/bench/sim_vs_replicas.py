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
               with the machine as busy as K replicas make it (and only the first is kept). A
               second profile is measured after the real runs (unless --no-profile-after): the
               simulation uses their cell-by-cell mean, since this VM's step times drift by 5-10%
               within minutes, and each profile's own prediction is reported beside it
  4. real      R replicas (`serve --threads T`), vllm-router --policy round_robin in front; first
               the CPU probe on the idle deployment (--cpu-probe-requests of --output-max tokens,
               one at a time: the CPU seconds per output token of the replicas' threads besides
               their engine loops, the router and the client, from /proc), then the serving-path
               probe (--probe-requests of the trace's prompts, one output token each, --probe-gap s
               apart), then `pagedllm bench --trace` through the router (the trace's arrival times)
  5. sim       `pagedllm simulate --replicas R --router round-robin --profile`: the probe, whose
               median TTFT gap to the real probe is the serving path's latency; then the trace,
               once on the profile alone and once modelled (--host-cores, --serving-cpu-us-per-token,
               --serving-latency-ms);
               the modelled run also on the profile before and the profile after alone
  6. report    output tok/s, p50/p99 TTFT, p50 TPOT: real, simulated, error

  python3 tools/bench/sim_vs_replicas.py --router-bin $(which vllm-router) [--replicas 3] [--threads 1]
      [--requests 120] [--rate 3] [--host-cores N] [--profile-under-load 3] [--out build/bench/sim_vs_replicas]

Needs vllm-router (PyPI, tests/pypi/requirements.txt pins it). Run it on a quiet machine: the
real run and the profile are timings.
"""
import argparse
import json
import os
import statistics
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
PROBE_BLOCK_IDS = 1 << 40  # the probe's prefix block ids start here, far above any trace's
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


def mean_profile(paths, out):
    """The cell-by-cell mean of profiles measured on one machine with one grid: every time (a key
    ending in `seconds`, scalar or table) and the load factor are averaged; everything else (the
    axes, the model, the executor, the filled cells) must agree."""
    profiles = [json.loads(Path(path).read_text()) for path in paths]

    def merge(values, name, where):
        first = values[0]
        if isinstance(first, dict):
            if any(set(v) != set(first) for v in values):
                sys.exit(f"sim_vs_replicas: the profiles' fields differ under {where or 'the top level'}")
            return {k: merge([v[k] for v in values], k, f"{where}.{k}" if where else k) for k in first}
        if isinstance(first, list):
            if any(not isinstance(v, list) or len(v) != len(first) for v in values):
                sys.exit(f"sim_vs_replicas: the profiles' {where} differ in shape")
            return [merge([v[i] for v in values], name, f"{where}[{i}]") for i in range(len(first))]
        if (name.endswith("seconds") or name == "load_factor") and first is not None:
            if any(not isinstance(v, (int, float)) for v in values):
                sys.exit(f"sim_vs_replicas: the profiles' {where} is not a number in each")
            return statistics.mean(values)
        if any(v != first for v in values):
            sys.exit(f"sim_vs_replicas: the profiles' {where} differ ({values}): not one machine and grid")
        return first

    Path(out).write_text(json.dumps(merge(profiles, "", "")) + "\n")


def real_run(args, model, runs, cpu_probe=None):
    """Starts the deployment once and runs `pagedllm bench` for each (trace, output) in order.
    Around the run of the trace `cpu_probe`, measures the serving path's CPU: returns its seconds
    per output token by part (empty without one)."""
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
        cpu_per_token = {}
        for trace, out in runs:
            measure = trace == cpu_probe
            before = cpu_snapshot(replicas, router) if measure else None
            with open(out.with_suffix(".txt"), "w") as bench_log:
                run([args.pagedllm, "bench", "--trace", trace, "--base-url", f"http://127.0.0.1:{router.port}",
                     "--model", "m", "-q", "-o", out], stdout=bench_log)
            if measure:
                spent = serving_cpu_seconds(before, cpu_snapshot(replicas, router))
                tokens = sum(r["output_tokens"] for r in json.loads(out.read_text())["requests"] if r["success"])
                if tokens == 0:
                    sys.exit("sim_vs_replicas: the CPU probe produced no tokens")
                cpu_per_token = {part: seconds / tokens for part, seconds in spent.items()}
        return cpu_per_token
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


def measure_interference(args, model):
    """How much longer a replica's step takes beside another one stepping (the host's caches and
    memory bandwidth): bench_cpu_decode's prefill (a --interference-prompt-tokens prompt) and decode
    step, each the median of --interference-repeats runs, alone and beside `pagedllm replay` in a
    loop in another process, replaying only decodes (one long output) or only prefills (long
    prompts, one output token each). Weights as `serve` holds them (the stored types, mapped).
    Returns simulate --host-interference's fractions."""
    bench = Path(args.pagedllm).parent / "bench" / "bench_cpu_decode"
    common = [str(bench), "--model", model, "--threads", str(args.threads), "--json"]
    prefill = common + ["--prompt-tokens", str(args.interference_prompt_tokens), "--steps", "1", "--warmup-steps", "1"]
    decode = common + ["--prompt-tokens", "32", "--steps", "300"]
    header = {"pagedllm_trace": 1, "prefix_block_tokens": 512}
    loops = {  # (prompt_len, output_len) x count: seconds of one kind of step per model load
        "decode": [(32, 900)],
        "prefill": [(args.interference_prompt_tokens, 1)] * 40,
    }
    for kind, requests in loops.items():
        with open(args.out / f"interference_{kind}.jsonl", "w") as file:
            file.write(json.dumps({**header, "source": f"the interference measurement's {kind} loop"}) + "\n")
            for i, (prompt_len, output_len) in enumerate(requests):
                file.write(json.dumps({"arrival_time": 0.0, "prompt_len": prompt_len, "output_len": output_len,
                                       "prefix_block_ids": [3 * PROBE_BLOCK_IDS + i]}) + "\n")

    def timed(command, key):
        samples = []
        for _ in range(args.interference_repeats):
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            samples.append(json.loads(out)[key])
        return statistics.median(samples)

    def measured(neighbour):
        loop = None
        if neighbour:
            replay = [args.pagedllm, "replay", "--model", model, "--trace", args.out / f"interference_{neighbour}.jsonl",
                      "--time", "fast", "--threads", args.threads, "--max-num-seqs", "1", "-o", "/dev/null"]
            script = "while true; do " + " ".join(str(c) for c in replay) + " > /dev/null 2>&1; done"
            loop = subprocess.Popen(["bash", "-c", script], start_new_session=True)
            time.sleep(1.0)  # past its model load
        try:
            return timed(prefill, "prefill_s"), timed(decode, "step_ms_mean")
        finally:
            if loop:
                os.killpg(loop.pid, 9)
                loop.wait()

    alone, beside_decode, beside_prefill = measured(None), measured("decode"), measured("prefill")
    fractions = {
        "decode_by_decode": beside_decode[1] / alone[1] - 1,
        "decode_by_prefill": beside_prefill[1] / alone[1] - 1,
        "prefill_by_decode": beside_decode[0] / alone[0] - 1,
        "prefill_by_prefill": beside_prefill[0] / alone[0] - 1,
    }
    print(f"interference: prefill {alone[0] * 1e3:.0f} ms alone, {beside_decode[0] * 1e3:.0f} beside decodes, "
          f"{beside_prefill[0] * 1e3:.0f} beside prefills; decode step {alone[1]:.2f} ms alone, {beside_decode[1]:.2f} "
          f"beside decodes, {beside_prefill[1]:.2f} beside prefills", flush=True)
    return {name: max(0.0, value) for name, value in fractions.items()}


def thread_cpu_seconds(pid):
    """User + system CPU seconds of each thread of a process, by thread id (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    seconds = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # the thread ended
            continue
        seconds[tid] = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return seconds


def cpu_snapshot(replicas, router):
    """Per-thread CPU seconds of every replica and the router, and this script's finished children's
    (the load client's)."""
    children = os.times()
    return {"replicas": [thread_cpu_seconds(process.pid) for process in replicas],
            "router": sum(thread_cpu_seconds(router.process.pid).values()),
            "client": children.children_user + children.children_system}


def serving_cpu_seconds(before, after):
    """CPU seconds between two snapshots of what serves a stream besides the engines: each replica's
    threads but the busiest one (the engine loop, whose steps the profile prices), the router, and
    the load client."""
    replica_threads = engine_threads = 0.0
    for old, new in zip(before["replicas"], after["replicas"]):
        spent = [seconds - old.get(tid, 0.0) for tid, seconds in new.items()]
        engine_threads += max(spent, default=0.0)
        replica_threads += sum(spent) - max(spent, default=0.0)
    return {"replica_threads": replica_threads, "router": after["router"] - before["router"],
            "client": after["client"] - before["client"], "engine_threads": engine_threads}


def cpu_probe_trace(out, count, gap, output_len):
    """`count` requests of a 32-token prompt and `output_len` tokens, `gap` seconds apart (one at a
    time on the idle deployment): the CPU the serving path spends per streamed token. Their
    prefix block ids are far from the trace's and the serving-path probe's."""
    with open(out, "w") as file:
        file.write(json.dumps({"pagedllm_trace": 1, "prefix_block_tokens": 512,
                               "source": "the serving-path CPU probe"}) + "\n")
        for i in range(count):
            file.write(json.dumps({"arrival_time": i * gap, "prompt_len": 32, "output_len": output_len,
                                   "prefix_block_ids": [2 * PROBE_BLOCK_IDS + i]}) + "\n")


def probe_trace(trace, out, count, gap):
    """The trace's first `count` prompt lengths, one output token each, `gap` seconds apart: requests
    that meet an idle deployment, so that their TTFT is a prefill plus the serving path. Their
    prefix block ids are moved out of the trace's range, so that the probe caches none of the
    trace's prompts."""
    lines = trace.read_text().splitlines()
    header, records = json.loads(lines[0]), [json.loads(line) for line in lines[1:] if line.strip()]
    header["source"] = f"the serving-path probe of {trace.name}"
    with open(out, "w") as file:
        file.write(json.dumps(header) + "\n")
        for i, record in enumerate(records[:count]):
            ids = [PROBE_BLOCK_IDS + block for block in record.get("prefix_block_ids", [])]
            file.write(json.dumps({**record, "arrival_time": i * gap, "output_len": 1, "prefix_block_ids": ids}) + "\n")


def simulate(args, model, trace, profile_path, out, *extra):
    run([args.pagedllm, "simulate", "--trace", trace, "--model", model, "--profile", profile_path, "--replicas",
         args.replicas, "--router", "round-robin", "--max-num-seqs", args.max_num_seqs, *extra, "-q", "-o", out],
        stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def serving_latency_ms(reals, sim):
    """The median over the probes' requests (every repeat's) of real TTFT minus simulated TTFT."""
    simulated = {r["id"]: r["ttft_ms"] for r in sim["requests"] if r["success"]}
    gaps = [r["ttft_ms"] - simulated[r["id"]] for real in reals for r in real["requests"]
            if r["success"] and r["id"] in simulated]
    if not gaps:
        sys.exit("sim_vs_replicas: no probe request succeeded in both runs")
    return max(0.0, statistics.median(gaps))


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
    parser.add_argument("--no-profile-after", action="store_true",
                        help="measure no second profile after the real runs (simulate on the one before)")
    parser.add_argument("--profile-under-load", type=int, default=1,
                        help="K: time the profile with K-1 copies of it running beside it")
    parser.add_argument("--real-repeats", type=int, default=1,
                        help="real runs, each on a fresh deployment (a cold prefix cache); errors are against "
                             "their mean")
    parser.add_argument("--host-cores", type=int, default=os.cpu_count(),
                        help="the cores the replicas share (simulate --host-cores; default: this machine's)")
    parser.add_argument("--probe-requests", type=int, default=24,
                        help="requests of the serving-path probe (0: none; then --serving-latency-ms)")
    parser.add_argument("--probe-gap", type=float, default=0.5, help="seconds between the probe's requests")
    parser.add_argument("--serving-latency-ms", type=float, default=0.0, help="without a probe: the latency to use")
    parser.add_argument("--interference-repeats", type=int, default=5,
                        help="samples of each step kind alone and beside another replica's (0: no interference)")
    parser.add_argument("--interference-prompt-tokens", type=int, default=400,
                        help="the prompt of the interference measurement's prefills")
    parser.add_argument("--cpu-probe-requests", type=int, default=6,
                        help="requests of --output-max tokens, one at a time, whose serving path's CPU is measured "
                             "(0: none; then --serving-cpu-us-per-token)")
    parser.add_argument("--cpu-probe-gap", type=float, default=1.0, help="seconds between the CPU probe's requests")
    parser.add_argument("--serving-cpu-us-per-token", type=float, default=0.0,
                        help="without a CPU probe: the serving path's CPU per output token to use")
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
    profile_before = args.out / "profile_before.json"
    profile_after = args.out / "profile_after.json"
    bracketed = not args.profile and not args.no_profile_after
    if not args.profile:
        started = time.time()
        profile(args, model, profile_before)
        print(f"profile before: {time.time() - started:.0f} s", flush=True)

    interference = {}
    if args.host_cores > 0 and args.interference_repeats > 0:
        interference = measure_interference(args, model)
    interference_text = ",".join(f"{name}={value:.4f}" for name, value in interference.items())

    # A multiple of the replicas, so that the router's round robin starts the trace at replica 0,
    # as the simulated one does.
    args.probe_requests = -(-args.probe_requests // args.replicas) * args.replicas
    probe = args.out / "probe_trace.jsonl"
    probe_trace(trace, probe, args.probe_requests, args.probe_gap)
    real_paths = [args.out / f"real_{i}.json" for i in range(args.real_repeats)]
    probe_paths = [args.out / f"probe_real_{i}.json" for i in range(args.real_repeats)] if args.probe_requests else []
    # Also a multiple of the replicas, so that each serves as many of them.
    args.cpu_probe_requests = -(-args.cpu_probe_requests // args.replicas) * args.replicas
    cpu_probe = args.out / "cpu_probe_trace.jsonl"
    cpu_probe_trace(cpu_probe, args.cpu_probe_requests, args.cpu_probe_gap, args.output_max)
    cpu_probe_paths = [args.out / f"cpu_probe_real_{i}.json" for i in range(args.real_repeats)]
    serving_cpu = []  # per deployment: CPU seconds per output token, by part
    for i, real_path in enumerate(real_paths):
        started = time.time()
        runs = [(cpu_probe, cpu_probe_paths[i])] if args.cpu_probe_requests else []
        runs += ([(probe, probe_paths[i])] if probe_paths else []) + [(trace, real_path)]
        measured = real_run(args, model, runs, cpu_probe if args.cpu_probe_requests else None)
        if measured:
            serving_cpu.append(measured)
            print(f"real run {i}: {time.time() - started:.0f} s; CPU per output token: " +
                  ", ".join(f"{part} {seconds * 1e6:.0f} us" for part, seconds in measured.items()), flush=True)
        else:
            print(f"real run {i}: {time.time() - started:.0f} s", flush=True)
    serving_cpu_us = args.serving_cpu_us_per_token
    if serving_cpu:
        serving_cpu_us = statistics.mean(m["replica_threads"] + m["router"] + m["client"] for m in serving_cpu) * 1e6
        print(f"serving path's CPU: {serving_cpu_us:.0f} us per output token (replicas' other threads, router, client; "
              f"the mean of {len(serving_cpu)} deployment(s))", flush=True)
    if bracketed:
        started = time.time()
        profile(args, model, profile_after)
        print(f"profile after: {time.time() - started:.0f} s", flush=True)
        mean_profile([profile_before, profile_after], profile_path)
    elif not args.profile:
        shutil.copyfile(profile_before, profile_path)

    host = ["--host-cores", args.host_cores, "--serving-cpu-us-per-token", serving_cpu_us]
    if interference_text:
        host += ["--host-interference", interference_text]

    def modelled(profile_file, name):
        """The trace simulated with host sharing and the serving path measured against this profile."""
        latency = args.serving_latency_ms
        if args.probe_requests > 0:
            probe_sim = simulate(args, model, probe, profile_file, args.out / f"probe_sim{name}.json", *host)
            latency = serving_latency_ms([json.loads(path.read_text()) for path in probe_paths], probe_sim)
        sim = simulate(args, model, trace, profile_file, args.out / f"sim_modelled{name}.json", *host,
                       "--serving-latency-ms", latency)
        return sim["metrics"], latency

    runs = {"profile only": simulate(args, model, trace, profile_path, args.out / "sim.json")["metrics"]}
    runs["modelled"], latency = modelled(profile_path, "")
    latencies = {"modelled": latency}
    if bracketed:
        runs["before, modelled"], latencies["before, modelled"] = modelled(profile_before, "_before")
        runs["after, modelled"], latencies["after, modelled"] = modelled(profile_after, "_after")
    if args.probe_requests > 0:
        print("serving path (median real - simulated TTFT over "
              f"{args.probe_requests} idle requests x {len(probe_paths)} deployment(s)): " +
              ", ".join(f"{name} {value:.1f} ms" for name, value in latencies.items()), flush=True)
    reals = [json.loads(path.read_text())["metrics"] for path in real_paths]
    real = {key: statistics.mean(r[key] for r in reals) for key, _ in METRICS}
    print(f"\n{args.replicas} replicas x {args.threads} thread(s), {args.requests} requests at {args.rate} req/s, "
          f"vllm-router round_robin vs simulate --router round-robin (profile under load "
          f"{args.profile_under_load}{', the mean of the profiles before and after' if bracketed else ''}); "
          f"modelled: --host-cores {args.host_cores} --serving-cpu-us-per-token {serving_cpu_us:.0f} "
          f"{'--host-interference ' + interference_text + ' ' if interference_text else ''}"
          f"--serving-latency-ms as above; "
          f"real: the mean of {len(reals)} run(s) [min..max]")
    print(f"{'metric':<14} {'real':>22} " + " ".join(f"{name:>22}" for name in runs))
    report = {"replicas": args.replicas, "threads": args.threads, "requests": args.requests, "rate": args.rate,
              "real_repeats": len(reals),
              "profile_under_load": args.profile_under_load, "profile_bracketed": bracketed,
              "host_cores": args.host_cores, "serving_latency_ms": latencies,
              "serving_cpu_us_per_token": serving_cpu_us, "serving_cpu_by_deployment": serving_cpu,
              "host_interference": interference, "metrics": {}}
    for key, label in METRICS:
        cells = []
        report["metrics"][key] = {"real": real[key], "real_runs": [r[key] for r in reals]}
        for name, sim in runs.items():
            error = (sim[key] - real[key]) / real[key] if real[key] else float("nan")
            report["metrics"][key][name] = {"sim": sim[key], "error": error}
            cells.append(f"{sim[key]:>12.2f} ({error:>+6.1%})")
        spread = f"[{min(r[key] for r in reals):.1f}..{max(r[key] for r in reals):.1f}]"
        print(f"{label:<14} {real[key]:>8.2f} {spread:>13} " + " ".join(cells))
    (args.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
