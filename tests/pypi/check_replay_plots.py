#!/usr/bin/env python3
"""Replays a committed trace on the CPU engine and on the simulator, then checks the reported
serving metrics against numpy computed from the per-request latencies in the same JSON (vLLM's
benchmark_serving computes them with numpy), and that tools/plot_replay.py draws the PNGs."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def replay(pagedllm, out, *extra):
    subprocess.run([pagedllm, "replay", "--trace", "traces/sharegpt_like.jsonl", "--max-requests", "40", "-q",
                    "--percentiles", "50,90,99,99.9", "-o", out, *extra], check=True, stdout=subprocess.DEVNULL)
    with open(out, encoding="utf-8") as handle:
        return json.load(handle)


def check_metrics(name, result):
    metrics = result["metrics"]
    done = [r for r in result["requests"] if r["success"]]
    assert metrics["completed"] == len(done), (name, metrics["completed"], len(done))
    assert metrics["total_input_tokens"] == sum(r["prompt_tokens"] for r in done)
    assert metrics["total_output_tokens"] == sum(r["output_tokens"] for r in done)
    for key in ("ttft", "tpot", "e2el"):
        values = np.array([r[f"{key}_ms"] for r in done if r[f"{key}_ms"] is not None])
        expected = {
            f"mean_{key}_ms": np.mean(values), f"median_{key}_ms": np.median(values),
            f"std_{key}_ms": np.std(values), f"p90_{key}_ms": np.percentile(values, 90),
            f"p99_{key}_ms": np.percentile(values, 99), f"p99.9_{key}_ms": np.percentile(values, 99.9),
        }
        for field, want in expected.items():
            got = metrics[field]
            # The JSON's per-request values are themselves rounded ms conversions of the seconds
            # the metrics start from: agree to 1e-9 relative.
            if abs(got - want) > 1e-9 * max(1.0, abs(want)):
                raise AssertionError(f"{name}: {field} = {got}, numpy says {want}")
    duration = metrics["duration"]
    assert abs(metrics["request_throughput"] - len(done) / duration) < 1e-9 * metrics["request_throughput"]
    print(f"{name}: {len(done)} requests, TTFT/TPOT/E2EL mean, median, std, p90, p99, p99.9 equal numpy's")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pagedllm", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        cpu = replay(args.pagedllm, os.path.join(work, "cpu.json"), "--threads", "1", "--kv-cache-mib", "2")
        sim = replay(args.pagedllm, os.path.join(work, "sim.json"), "--executor", "sim", "--sim-model", "llama-2-7b")
        check_metrics("cpu", cpu)
        check_metrics("sim", sim)
        plots = os.path.join(work, "plots")
        subprocess.run([sys.executable, "tools/plot_replay.py", os.path.join(work, "cpu.json"),
                        os.path.join(work, "sim.json"), "--out", plots], check=True)
        for name in ("kv_usage.png", "queues.png", "latency_cdf.png"):
            path = os.path.join(plots, name)
            with open(path, "rb") as handle:
                head = handle.read(8)
            size = os.path.getsize(path)
            if head != PNG_MAGIC or size < 10_000:
                raise AssertionError(f"{name}: not a drawn PNG ({size} bytes)")
        print("plots: kv_usage.png, queues.png, latency_cdf.png drawn")


if __name__ == "__main__":
    main()
