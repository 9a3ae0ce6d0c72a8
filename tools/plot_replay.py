#!/usr/bin/env python3
"""Plots of `pagedllm replay` / `simulate` results (the --output-json files), as PNG.

  tools/plot_replay.py RESULT.json [MORE.json ...] --out DIR

Writes DIR/kv_usage.png (KV usage and swapped blocks over time), DIR/queues.png (running,
waiting and swapped requests over time) and DIR/latency_cdf.png (CDFs of TTFT, TPOT and
end-to-end latency). With several results, each plot overlays them (e.g. cpu against sim).
Needs matplotlib (pip install matplotlib).
"""
import argparse
import json
import os
import sys


def load(path):
    try:
        with open(path, encoding="utf-8") as handle:
            result = json.load(handle)
    except (OSError, json.JSONDecodeError) as error:
        sys.exit(f"{path}: cannot read: {error}")
    for key in ("timeline", "requests", "config"):
        if key not in result:
            sys.exit(f"{path}: no '{key}' field: not a pagedllm replay result")
    return result


def label_of(path, result):
    config = result["config"]
    return f"{config.get('executor', '?')}: {os.path.basename(path)}"


def cdf(values):
    values = sorted(values)
    count = len(values)
    return values, [(i + 1) / count for i in range(count)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", help="replay result JSON files")
    parser.add_argument("--out", required=True, help="directory for the PNG files")
    args = parser.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = [(path, load(path)) for path in args.results]
    os.makedirs(args.out, exist_ok=True)

    figure, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for path, result in results:
        times = [point["time"] for point in result["timeline"]]
        axes[0].plot(times, [100 * point["kv_usage"] for point in result["timeline"]], label=label_of(path, result))
        axes[1].plot(times, [point["host_blocks_used"] for point in result["timeline"]], label=label_of(path, result))
    axes[0].set_ylabel("device KV blocks used (%)")
    axes[0].set_ylim(0, 105)
    axes[1].set_ylabel("swapped-out blocks")
    axes[1].set_xlabel("time (s)")
    axes[0].legend(loc="upper right", fontsize="small")
    figure.tight_layout()
    figure.savefig(os.path.join(args.out, "kv_usage.png"), dpi=120)
    plt.close(figure)

    figure, axes = plt.subplots(len(results), 1, figsize=(9, 3 * len(results)), squeeze=False)
    for axis, (path, result) in zip(axes[:, 0], results):
        times = [point["time"] for point in result["timeline"]]
        for key, name in (("num_running", "running"), ("num_waiting", "waiting"), ("num_swapped", "swapped")):
            axis.plot(times, [point[key] for point in result["timeline"]], label=name)
        axis.set_title(label_of(path, result), fontsize="small")
        axis.set_ylabel("requests")
        axis.legend(loc="upper right", fontsize="small")
    axes[-1, 0].set_xlabel("time (s)")
    figure.tight_layout()
    figure.savefig(os.path.join(args.out, "queues.png"), dpi=120)
    plt.close(figure)

    figure, axes = plt.subplots(1, 3, figsize=(13, 4))
    for path, result in results:
        done = [request for request in result["requests"] if request["success"]]
        for axis, key in zip(axes, ("ttft_ms", "tpot_ms", "e2el_ms")):
            values = [request[key] for request in done if request.get(key) is not None]
            if values:
                xs, ys = cdf(values)
                axis.plot(xs, ys, label=label_of(path, result))
    for axis, title in zip(axes, ("TTFT (ms)", "TPOT (ms)", "end-to-end latency (ms)")):
        axis.set_xlabel(title)
        axis.set_ylabel("fraction of requests")
        axis.grid(alpha=0.3)
    axes[0].legend(loc="lower right", fontsize="small")
    figure.tight_layout()
    figure.savefig(os.path.join(args.out, "latency_cdf.png"), dpi=120)
    plt.close(figure)
    print(f"wrote {args.out}/kv_usage.png, queues.png, latency_cdf.png")


if __name__ == "__main__":
    main()
