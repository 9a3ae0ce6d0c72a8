#!/usr/bin/env python3
"""`pagedllm serve`'s /metrics read by Prometheus's own Python parser (prometheus_client), against
the metrics vLLM documents: each vLLM name is present with vLLM's type (and, for the latency
histograms, vLLM's buckets), carries the same samples as the `pagedllm:` series it names, and the
token counters mean what vLLM's mean (whole prompts, generated tokens) after known requests.

    check_metrics.py --pagedllm BINARY

The list below is written from vLLM's production-metrics documentation (V1 engine), not from
pagedllm's code. Negative control: the parser must refuse a deliberately malformed exposition.
"""
import argparse
import json
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

sys.dont_write_bytecode = True  # no __pycache__ left in tests/pypi by the import below
from serve_process import start_server  # noqa: E402 (tests/pypi is on sys.path: the script's folder)

FAILURES = []

# vLLM's name (as the parser reports it: counters without _total) -> type.
VLLM_METRICS = {
    "vllm:num_requests_running": "gauge",
    "vllm:num_requests_waiting": "gauge",
    "vllm:kv_cache_usage_perc": "gauge",
    "vllm:gpu_cache_usage_perc": "gauge",
    "vllm:prefix_cache_queries": "counter",
    "vllm:prefix_cache_hits": "counter",
    "vllm:num_preemptions": "counter",
    "vllm:prompt_tokens": "counter",
    "vllm:generation_tokens": "counter",
    "vllm:request_success": "counter",
    "vllm:time_to_first_token_seconds": "histogram",
    "vllm:time_per_output_token_seconds": "histogram",
    "vllm:inter_token_latency_seconds": "histogram",
    "vllm:e2e_request_latency_seconds": "histogram",
    "vllm:request_queue_time_seconds": "histogram",
}
# vLLM's bucket bounds for its latency histograms.
TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
TPOT_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
                40.0, 80.0]
REQUEST_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
                   480.0, 960.0, 1920.0, 7680.0]
BUCKETS = {
    "vllm:time_to_first_token_seconds": TTFT_BUCKETS,
    "vllm:time_per_output_token_seconds": TPOT_BUCKETS,
    "vllm:inter_token_latency_seconds": TPOT_BUCKETS,
    "vllm:e2e_request_latency_seconds": REQUEST_BUCKETS,
    "vllm:request_queue_time_seconds": REQUEST_BUCKETS,
}


def check(condition, what):
    print(("ok: " if condition else "FAILED: ") + what)
    if not condition:
        FAILURES.append(what)


def post(port, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def families_by_name(text):
    return {family.name: family for family in text_string_to_metric_families(text)}


def samples_without_name(family, name_from, name_to):
    return sorted((s.name.replace(name_from, name_to, 1), tuple(sorted(s.labels.items())), s.value)
                  for s in family.samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pagedllm", required=True)
    args = parser.parse_args()

    try:
        list(text_string_to_metric_families("# TYPE x counter\nx{a=\"1\" 2\n"))
        check(False, "negative control: the parser refuses a malformed exposition")
    except Exception:  # the parser raises ValueError (or a subclass) on malformed input
        check(True, "negative control: the parser refuses a malformed exposition")

    process, port = start_server(args.pagedllm, "tiny", "--threads", "1", timeout=120)
    try:
        # Known requests: two prompts whose lengths the responses report, the same prompt twice so
        # that the second hits the prefix cache (vLLM's prompt_tokens still counts all of it).
        prompt_tokens = 0
        generation_tokens = 0
        for _ in range(2):
            reply = post(port, "/v1/completions", {"model": "tiny", "prompt": "The quick brown fox " * 8,
                                                   "max_tokens": 5, "ignore_eos": True})
            prompt_tokens += reply["usage"]["prompt_tokens"]
            generation_tokens += reply["usage"]["completion_tokens"]
        reply = post(port, "/v1/chat/completions", {"model": "tiny", "max_tokens": 3, "ignore_eos": True,
                                                    "messages": [{"role": "user", "content": "Hi"}]})
        prompt_tokens += reply["usage"]["prompt_tokens"]
        generation_tokens += reply["usage"]["completion_tokens"]

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
            text = response.read().decode()
        families = families_by_name(text)  # raises on anything the Prometheus parser rejects
        check(True, f"/metrics parses with prometheus_client ({len(families)} families)")
        for name, kind in VLLM_METRICS.items():
            family = families.get(name)
            check(family is not None and family.type == kind,
                  f"{name}: {kind} (got {family.type if family else 'absent'})")
            if family is None:
                continue
            check(all(s.labels.get("model_name") == "tiny" for s in family.samples),
                  f"{name}: every sample has vLLM's model_name label")
            if name in BUCKETS:
                bounds = sorted({float(s.labels["le"]) for s in family.samples if s.name.endswith("_bucket")})
                check(bounds == BUCKETS[name] + [float("inf")], f"{name}: vLLM's buckets")
        # Each vLLM series equals the pagedllm series it names.
        pairs = {"vllm:num_requests_running": "pagedllm:num_requests_running",
                 "vllm:kv_cache_usage_perc": "pagedllm:kv_cache_usage_perc",
                 "vllm:gpu_cache_usage_perc": "pagedllm:kv_cache_usage_perc",
                 "vllm:prefix_cache_hits": "pagedllm:prefix_cache_hits",
                 "vllm:prompt_tokens": "pagedllm:prompt_tokens",
                 "vllm:generation_tokens": "pagedllm:generation_tokens",
                 "vllm:request_success": "pagedllm:request_success",
                 "vllm:time_to_first_token_seconds": "pagedllm:time_to_first_token_seconds",
                 "vllm:time_per_output_token_seconds": "pagedllm:inter_token_latency_seconds",
                 "vllm:e2e_request_latency_seconds": "pagedllm:e2e_request_latency_seconds"}
        for vllm_name, ours in pairs.items():
            if vllm_name in families and ours in families:
                check(samples_without_name(families[vllm_name], vllm_name, "X") ==
                      samples_without_name(families[ours], ours, "X"), f"{vllm_name} carries {ours}'s samples")
            else:
                check(False, f"{vllm_name} and {ours} both present")
        preemptions = families.get("vllm:num_preemptions")
        ours = families.get("pagedllm:num_preemptions")
        check(preemptions is not None and ours is not None and len(preemptions.samples) == 1 and
              "mode" not in preemptions.samples[0].labels and
              preemptions.samples[0].value == sum(s.value for s in ours.samples),
              "vllm:num_preemptions: one series, the sum over pagedllm's modes")

        def total(name):
            return sum(s.value for s in families[name].samples if s.name.endswith("_total"))
        check(total("vllm:prompt_tokens") == prompt_tokens,
              f"vllm:prompt_tokens_total = the prompts' lengths ({total('vllm:prompt_tokens')} vs {prompt_tokens}), "
              "prefix-cache hits included")
        check(total("vllm:prefix_cache_hits") > 0, "the repeated prompt hit the prefix cache")
        check(total("vllm:generation_tokens") == generation_tokens,
              f"vllm:generation_tokens_total = the tokens generated ({generation_tokens})")
        success = {s.labels["finished_reason"]: s.value for s in families["vllm:request_success"].samples
                   if s.name.endswith("_total")}
        check(success.get("length") == 3, f"vllm:request_success_total{{finished_reason=length}} = 3 ({success})")
    finally:
        process.terminate()
        process.wait(timeout=60)
    if FAILURES:
        print(f"check_metrics: {len(FAILURES)} check(s) failed")
        sys.exit(1)
    print("check_metrics: all checks passed")


if __name__ == "__main__":
    main()
