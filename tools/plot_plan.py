#!/usr/bin/env python3
"""The rate-vs-latency plot of a `pagedllm plan` result (its --output-json file), as PNG.

  tools/plot_plan.py PLAN.json --out rate_vs_latency.png

One panel per SLO term (e.g. ttft_p99, tpot_p99): the latency at every request rate the search
evaluated, one line per configuration, the objective as a dashed line, and each configuration's
highest feasible rate marked. Needs matplotlib (pip install matplotlib).
"""
import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("plan", help="the JSON written by pagedllm plan --output-json")
    parser.add_argument("--out", required=True, help="the PNG to write")
    args = parser.parse_args()
    try:
        with open(args.plan, encoding="utf-8") as handle:
            plan = json.load(handle)
        slo = plan["slo"]
        configurations = plan["configurations"]
    except (OSError, json.JSONDecodeError, KeyError) as error:
        sys.exit(f"{args.plan}: not a pagedllm plan result: {error}")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    terms = list(slo)
    figure, axes = plt.subplots(1, len(terms), figsize=(6 * len(terms), 4.5), squeeze=False)
    for axis, term in zip(axes[0], terms):
        for configuration in configurations:
            label = " ".join(f"{k}={v}" for k, v in configuration["knobs"].items()) or "as given"
            # Rates stopped at a certain SLO miss carry no latencies (plan --full-runs gives them).
            curve = [point for point in configuration["curve"] if "latency_ms" in point]
            rates = [point["request_rate"] for point in curve]
            latencies = [point["latency_ms"][term] for point in curve]
            (line,) = axis.plot(rates, latencies, marker=".", label=label)
            if "max_request_rate_per_replica" in configuration:
                axis.axvline(configuration["max_request_rate_per_replica"], color=line.get_color(), alpha=0.3)
        axis.axhline(slo[term], color="black", linestyle="--", linewidth=1, label=f"SLO {slo[term]} ms")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("request rate per replica (req/s)")
        axis.set_ylabel(f"{term} (ms)")
        axis.grid(alpha=0.3, which="both")
    axes[0][0].legend(fontsize="small")
    figure.suptitle(f"{plan['model']} on {plan['hardware']}", fontsize="medium")
    figure.tight_layout()
    figure.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
