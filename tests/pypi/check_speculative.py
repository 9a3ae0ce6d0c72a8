#!/usr/bin/env python3
"""Speculative decoding end to end: lossless on a real model, and counted as vLLM counts it.

    check_speculative.py --pagedllm BINARY --model SMOLLM2_GGUF

1. SmolLM2-135M-Instruct, greedy, on the committed input-grounded prompts
   (traces/grounded_edits.jsonl): `pagedllm generate` with n-gram speculation returns the texts it
   returns without, one request at a time, batched, and batched in a KV cache of 24 blocks (far
   too small for the batch: preempted by swap, then by recompute). The same with SmolLM2 as its own
   draft model (every greedy proposal accepted), batched and under recompute preemption.
2. `pagedllm serve --speculative-config` on the tiny model, with n-gram proposals and with the tiny
   model as its own draft: /metrics, read by prometheus_client,
   carries vLLM's spec_decode counters with consistent values (accepted <= proposed, the
   per-position counts summing to the accepted ones, position j + 1 never above position j), each
   equal to the `pagedllm:` series it names. Negative control: a bad --speculative-config keeps the
   server from starting and names the field.
"""
import argparse
import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

sys.dont_write_bytecode = True
from serve_process import start_server  # noqa: E402

FAILURES = []
NGRAM = '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, "prompt_lookup_max": 4}'
REPO = Path(__file__).resolve().parents[2]


def check(condition, what):
    print(("ok: " if condition else "FAILED: ") + what)
    if not condition:
        FAILURES.append(what)


def generate(binary, model, prompts, *extra):
    """Each request's text, by request index."""
    command = [binary, "generate", "-m", model, "-n", "64", "--no-stream", "--threads", "2", *extra]
    for prompt in prompts:
        command += ["-p", prompt]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        sys.exit(f"check_speculative: {' '.join(command[:6])} ... failed:\n{result.stderr}")
    texts = {"stderr": result.stderr}
    current = None
    for line in result.stdout.splitlines(keepends=True):
        if line.startswith("--- request "):
            current = int(line.split()[2].rstrip(","))
            texts[current] = ""
        elif current is not None:
            texts[current] += line
    return texts


def check_lossless(binary, model):
    lines = (REPO / "traces" / "grounded_edits.jsonl").read_text().splitlines()[1:]
    prompts = [json.loads(line)["prompt"] for line in lines]
    plain = generate(binary, model, prompts, "--max-num-seqs", "1")
    stderr = plain.pop("stderr")
    check(len(plain) == len(prompts) and all(plain.values()), f"plain decoding answered all {len(prompts)} prompts")
    check("speculation" not in stderr, "plain decoding does not speculate")
    runs = {
        "one at a time": ["--max-num-seqs", "1"],
        "batched": [],
        "batched, 24 KV blocks, swap": ["--num-gpu-blocks-override", "24", "--preemption-mode", "swap"],
        "batched, 24 KV blocks, recompute": ["--num-gpu-blocks-override", "24", "--preemption-mode", "recompute"],
    }
    draft = json.dumps({"model": model, "num_speculative_tokens": 3})
    runs["batched, draft model"] = ["--draft"]
    runs["batched, 24 KV blocks, recompute, draft model"] = ["--draft", "--num-gpu-blocks-override", "24",
                                                              "--preemption-mode", "recompute"]
    for name, extra in runs.items():
        config = draft if extra[:1] == ["--draft"] else NGRAM
        extra = [arg for arg in extra if arg != "--draft"]
        speculative = generate(binary, model, prompts, "--speculative-config", config, *extra)
        stderr = speculative.pop("stderr")
        differing = [i for i in plain if speculative.get(i) != plain[i]]
        check(not differing, f"SmolLM2 {name}: speculative texts equal plain ones (differing: {differing})")
        notes = re.search(r"tokens/s, cpu_ref(.*)\]", stderr)
        check(notes is not None and "speculation accepted" in notes.group(1), f"{name}: proposals were accepted "
              f"({notes.group(1).strip(', ') if notes else stderr.strip()})")
        if config is draft:
            accepted = re.search(r"speculation accepted (\d+) of (\d+) proposals", stderr)
            check(accepted is not None and accepted.group(1) == accepted.group(2),
                  f"{name}: the model as its own greedy draft has every proposal accepted")
        if "KV blocks" in name:
            kind = extra[-1]
            check(notes is not None and re.search(r"preemptions (\d+) swap / (\d+) recompute", notes.group(1)) is not None
                  and int(re.search(rf"(\d+) {kind}", notes.group(1)).group(1)) > 0, f"{name}: preempted by {kind}")


def metric_total(families, name, **labels):
    family = families.get(name)
    if family is None:
        return None
    return sum(s.value for s in family.samples
               if s.name.endswith("_total") and all(s.labels.get(k) == v for k, v in labels.items()))


def check_metrics(binary, speculative_config):
    bad = subprocess.run([binary, "serve", "--model", "tiny", "--port", "0", "--speculative-config",
                          '{"method": "ngram", "num_speculative_tokens": 0}'], capture_output=True, text=True,
                         timeout=120)
    check(bad.returncode != 0 and "num_speculative_tokens" in bad.stderr,
          "a bad --speculative-config stops serve, naming the field")
    process, port = start_server(binary, "tiny", "--threads", "1", "--speculative-config", speculative_config,
                                 timeout=120)
    try:
        for prompt in ["one two three four one two three four one two", "a b c a b c a b c a b"]:
            body = {"model": "tiny", "prompt": prompt, "max_tokens": 48, "ignore_eos": True, "temperature": 0}
            request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=60) as response:
                check(json.loads(response.read())["usage"]["completion_tokens"] == 48, "a completion of 48 tokens")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
            families = {f.name: f for f in text_string_to_metric_families(response.read().decode())}
    finally:
        process.terminate()
        process.wait(timeout=60)
    for name in ["drafts", "draft_tokens", "accepted_tokens", "accepted_tokens_per_pos"]:
        vllm, ours = f"vllm:spec_decode_num_{name}", f"pagedllm:spec_decode_num_{name}"
        check(vllm in families and families[vllm].type == "counter", f"{vllm} is a counter")
        check(vllm in families and ours in families and
              sorted((s.labels.get("position"), s.value) for s in families[vllm].samples) ==
              sorted((s.labels.get("position"), s.value) for s in families[ours].samples),
              f"{vllm} carries {ours}'s samples")
    drafts = metric_total(families, "vllm:spec_decode_num_drafts")
    proposed = metric_total(families, "vllm:spec_decode_num_draft_tokens")
    accepted = metric_total(families, "vllm:spec_decode_num_accepted_tokens")
    check(drafts is not None and drafts > 0, f"drafts were verified ({drafts})")
    check(None not in (drafts, proposed, accepted) and 0 < accepted <= proposed <= 4 * drafts,
          f"0 < accepted ({accepted}) <= proposed ({proposed}) <= k x drafts")
    per_position = {int(s.labels["position"]): s.value for s in families["vllm:spec_decode_num_accepted_tokens_per_pos"].samples
                    if s.name.endswith("_total")}
    ordered = [per_position[j] for j in sorted(per_position)]
    check(sorted(per_position) == list(range(len(per_position))) and sum(ordered) == accepted,
          f"per-position acceptance {ordered} sums to the accepted tokens")
    check(all(later <= earlier for earlier, later in zip(ordered, ordered[1:])),
          "a later position is never accepted more often than an earlier one")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pagedllm", required=True)
    parser.add_argument("--model", required=True, help="SmolLM2-135M-Instruct's GGUF")
    args = parser.parse_args()
    check_lossless(args.pagedllm, args.model)
    check_metrics(args.pagedllm, NGRAM)
    check_metrics(args.pagedllm, '{"model": "tiny", "num_speculative_tokens": 4}')
    if FAILURES:
        print(f"check_speculative: {len(FAILURES)} check(s) failed")
        sys.exit(1)
    print("check_speculative: all checks passed")


if __name__ == "__main__":
    main()
