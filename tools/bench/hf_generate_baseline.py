#!/usr/bin/env python3
"""Hugging Face Transformers' generate() with static batches over a pagedllm trace (the baseline of
issue 9, as vLLM's blog measured HF Transformers).

What it does
    Reads a pagedllm JSONL trace (docs/TRACE_FORMAT.md: per request the prompt length, from
    `prompt_len` or `prompt_token_ids`, and `output_len`; arrival times are ignored: every request
    is there at time 0, as `pagedllm replay --time fast`), cuts it into static batches of
    --batch-size requests in trace order and, per batch:
      - prompts are random token ids (numpy, seeded per request) of each request's prompt length,
        left-padded (pad id --pad-id, attention mask 0) to the batch's longest prompt;
      - generate(max_new_tokens = min_new_tokens = the batch's longest output, greedy, no EOS):
        every sequence runs until the longest one is done, as a static batch must;
      - useful output = each request's own output_len; the tokens shorter requests are forced to
        generate past it are waste (counted apart, as in the vLLM blog).
    Times every batch with torch.cuda.synchronize() + time.perf_counter() (inputs already on the
    device; one warm-up generate first, not timed) and reports
        useful output tok/s = sum(output_len) / sum(batch seconds).

Usage
    python tools/bench/hf_generate_baseline.py --model DIR --trace T.jsonl --batch-size 8 --json out.json
    python tools/bench/hf_generate_baseline.py --model DIR --trace T.jsonl --device cpu --max-requests 8
Exit status: 0 done, 2 bad input, 3 out of device memory (the JSON, if asked, says "error": "oom").
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

try:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM
except ImportError as error:  # pragma: no cover
    sys.exit(f"hf_generate_baseline.py needs torch and transformers ({error}); "
             "pip install torch transformers safetensors numpy")

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def read_trace(path: Path) -> tuple[list[tuple[int, int]], int]:
    """(prompt_len, output_len) per request in file order, and how many requests ask for n > 1 or beams
    (run here as one greedy sequence each)."""
    requests: list[tuple[int, int]] = []
    parallel = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        record = json.loads(text)
        if "pagedllm_trace" in record:
            continue
        if "prompt_token_ids" in record:
            prompt = len(record["prompt_token_ids"])
        else:
            prompt = int(record.get("prompt_len", 0))
        if prompt < 1:
            raise ValueError(f"{path}:{number}: no prompt length (a text prompt needs prompt_len > 0 here)")
        output = int(record["output_len"])
        if output < 1:
            raise ValueError(f"{path}:{number}: output_len {output} < 1")
        sampling = record.get("sampling") or {}
        if sampling.get("n", 1) > 1 or sampling.get("beam_width", 1) > 1:
            parallel += 1
        requests.append((prompt, output))
    return requests, parallel


def batch_inputs(requests: list[tuple[int, int]], first: int, vocab: int, pad_id: int, seed: int,
                 device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded input_ids and attention_mask for requests[first:first+len]; request i's ids are
    drawn from numpy's default_rng([seed, i]), so they do not depend on the batch size."""
    longest = max(prompt for prompt, _ in requests)
    ids = np.full((len(requests), longest), pad_id, dtype=np.int64)
    mask = np.zeros((len(requests), longest), dtype=np.int64)
    for row, (prompt, _) in enumerate(requests):
        rng = np.random.default_rng([seed, first + row])
        ids[row, longest - prompt:] = rng.integers(0, vocab, size=prompt)
        mask[row, longest - prompt:] = 1
    return torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device)


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def generate(model, ids: torch.Tensor, mask: torch.Tensor, new_tokens: int, pad_id: int) -> torch.Tensor:
    return model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                          do_sample=False, num_beams=1, eos_token_id=None, pad_token_id=pad_id, use_cache=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, type=Path, help="a Hugging Face model directory")
    parser.add_argument("--trace", required=True, type=Path, help="a pagedllm JSONL trace")
    parser.add_argument("--batch-size", type=int, default=8, help="requests per static batch")
    parser.add_argument("--max-requests", type=int, default=0, help="keep the first N requests (0 = all)")
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu (smoke test)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bfloat16")
    parser.add_argument("--attn-implementation", default="sdpa", help="sdpa (default), eager, ...")
    parser.add_argument("--seed", type=int, default=0, help="prompt token ids")
    parser.add_argument("--pad-id", type=int, default=0, help="the left-padding token id (masked out)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed warm-up generates (a small batch)")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-batch lines")
    args = parser.parse_args()
    transformers.utils.logging.disable_progress_bar()
    if args.batch_size < 1 or args.max_requests < 0:
        parser.error("--batch-size must be >= 1 and --max-requests >= 0")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("hf_generate_baseline: no CUDA device (use --device cpu for a smoke test)", file=sys.stderr)
        return 2
    try:
        requests, parallel = read_trace(args.trace)
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as error:
        print(f"hf_generate_baseline: {args.trace}: {error}", file=sys.stderr)
        return 2
    if args.max_requests:
        requests = requests[:args.max_requests]
    if not requests:
        print(f"hf_generate_baseline: {args.trace}: no requests", file=sys.stderr)
        return 2
    if parallel:
        print(f"hf_generate_baseline: warning: {parallel} requests ask for n > 1 or beam search; "
              "each runs here as one greedy sequence", file=sys.stderr)

    torch.manual_seed(args.seed)
    load_start = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(str(args.model), dtype=DTYPES[args.dtype],
                                                 attn_implementation=args.attn_implementation)
    model.to(args.device).eval()
    model.generation_config.eos_token_id = None  # never stop early (min_new_tokens also forbids it)
    model.generation_config.pad_token_id = args.pad_id
    vocab = int(model.config.vocab_size)
    max_positions = int(getattr(model.config, "max_position_embeddings", 0) or 0)
    print(f"hf_generate_baseline: {args.model} ({sum(p.numel() for p in model.parameters()) / 1e9:.2f}B parameters, "
          f"{args.dtype}, {args.attn_implementation}) on {args.device} loaded in {time.perf_counter() - load_start:.1f} s; "
          f"transformers {transformers.__version__}, torch {torch.__version__}")

    batches = [(first, requests[first:first + args.batch_size]) for first in range(0, len(requests), args.batch_size)]
    too_long = sum(1 for _, batch in batches
                   if max_positions and max(p for p, _ in batch) + max(o for _, o in batch) > max_positions)
    if too_long:
        print(f"hf_generate_baseline: warning: {too_long} batches run past max_position_embeddings "
              f"{max_positions} (longest prompt + longest output)", file=sys.stderr)

    result: dict = {
        "tool": "hf_generate_baseline", "model": str(args.model), "trace": str(args.trace),
        "device": torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else args.device,
        "dtype": args.dtype, "attn_implementation": args.attn_implementation, "batch_size": args.batch_size,
        "transformers": transformers.__version__, "torch": torch.__version__, "seed": args.seed,
    }
    with torch.inference_mode():
        for _ in range(args.warmup):
            first, batch = batches[0]
            ids, mask = batch_inputs(batch, first, vocab, args.pad_id, args.seed, args.device)
            generate(model, ids[:, -min(ids.shape[1], 16):], mask[:, -min(ids.shape[1], 16):], 4, args.pad_id)
        synchronize(args.device)

        per_batch = []
        try:
            for index, (first, batch) in enumerate(batches):
                ids, mask = batch_inputs(batch, first, vocab, args.pad_id, args.seed, args.device)
                new_tokens = max(output for _, output in batch)
                synchronize(args.device)
                start = time.perf_counter()
                out = generate(model, ids, mask, new_tokens, args.pad_id)
                synchronize(args.device)
                seconds = time.perf_counter() - start
                if out.shape != (len(batch), ids.shape[1] + new_tokens):
                    print(f"hf_generate_baseline: batch {index}: output shape {tuple(out.shape)}, expected "
                          f"{(len(batch), ids.shape[1] + new_tokens)}", file=sys.stderr)
                    return 2
                useful = sum(output for _, output in batch)
                per_batch.append({"first": first, "requests": len(batch), "max_prompt": int(ids.shape[1]),
                                  "max_output": new_tokens, "useful_output_tokens": useful,
                                  "generated_tokens": len(batch) * new_tokens, "seconds": seconds})
                if not args.quiet:
                    print(f"  batch {index + 1}/{len(batches)}: {len(batch)} requests, prompt <= {ids.shape[1]}, "
                          f"{new_tokens} steps, {seconds:.2f} s, {useful / seconds:.1f} useful tok/s", flush=True)
        except torch.OutOfMemoryError as error:
            print(f"hf_generate_baseline: out of device memory at batch size {args.batch_size}: "
                  f"{str(error).splitlines()[0]}", file=sys.stderr)
            if args.json:
                args.json.write_text(json.dumps({**result, "error": "oom"}, indent=1) + "\n")
            return 3

    wall = sum(b["seconds"] for b in per_batch)
    useful = sum(b["useful_output_tokens"] for b in per_batch)
    generated = sum(b["generated_tokens"] for b in per_batch)
    result.update({
        "requests": len(requests), "batches": len(per_batch),
        "prompt_tokens": sum(prompt for prompt, _ in requests),
        "useful_output_tokens": useful, "generated_tokens": generated,
        "wasted_output_fraction": 1.0 - useful / generated if generated else 0.0,
        "wall_seconds": wall, "output_throughput": useful / wall if wall > 0 else 0.0,
        "generated_throughput": generated / wall if wall > 0 else 0.0, "per_batch": per_batch,
    })
    print(f"requests:                 {len(requests)} in {len(per_batch)} static batches of <= {args.batch_size}")
    print(f"useful output tokens:     {useful}  (generated {generated}, {100 * result['wasted_output_fraction']:.1f}% waste)")
    print(f"wall seconds:             {wall:.2f}")
    print(f"useful output tok/s:      {result['output_throughput']:.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
