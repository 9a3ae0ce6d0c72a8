#!/usr/bin/env python3
"""CPU decode throughput of pagedllm (bench_cpu_decode) beside llama.cpp (llama-cpp-python), same run.

    python tools/bench/bench_vs_llama_cpp.py --pagedllm-bench build/release/bench/bench_cpu_decode \\
        --model MODEL.gguf --threads 2 [--batches 1,8,32] [--prompt-tokens 128] [--steps N]
        [--repeats R] [--with-fp32] [--requantize Q4_K_M] [--json PATH] [--verbose]

Needs llama-cpp-python (tests/pypi/requirements.txt pins it; e.g. build/pypi-venv/bin/python).
For every batch size B, R times in turn:
  - pagedllm: `bench_cpu_decode --model MODEL --batch B --prompt-tokens P --steps S --threads T
    --json` (B requests with distinct P-token prompts through the whole engine loop, greedy,
    ignore_eos; S timed decode steps of B tokens after 2 untimed; figures against the memory and
    compute floors it measures itself);
  - llama.cpp on the same GGUF, same thread count (n_threads = n_threads_batch = T), its defaults
    otherwise (F16 KV cache, no flash attention), the same prompt length and step counts, greedy
    (numpy argmax over the logits, inside the timed step):
      unified: B = 1 through the high-level Llama.eval loop, one token per eval; B > 1 through
               the low-level API: one llama_batch of B sequences (one token each per step),
               n_seq_max = B, one unified KV buffer (kv_unified = true), each prompt prefilled
               on its own first;
      split:   the same low-level loop (B = 1 included) with one KV stream per sequence
               (kv_unified = false), where attention reads only the sequence's own cells.
With --requantize TYPE (a llama.cpp file type: Q4_K_M, Q5_K_M, Q6_K, Q8_0, ...), both engines load
MODEL rewritten in that type by llama.cpp's own quantizer (llama_model_quantize, which dequantizes
and quantizes again) into a temporary file: most GGUF downloads are Q4_K_M, whose layer types
differ from one model shape to another.
With --with-fp32, pagedllm also runs with its weights dequantized to fp32 at load
(`--fp32-weights`, the pre-stored path) in each repeat, for the stored / fp32 ratio.
Decode tokens/s = B * S / (sum of the S step times). Prints, per batch, the best and the median
over the repeats, the ratio pagedllm / llama.cpp (the faster llama.cpp setup, best runs), and
pagedllm's step time over its memory floor (1 = at the floor) and over its compute floor.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    import llama_cpp
except ImportError:  # pragma: no cover
    sys.exit("bench_vs_llama_cpp.py needs llama-cpp-python (pip install -r tests/pypi/requirements.txt)")

WARMUP_STEPS = 2  # bench_cpu_decode's default, used for llama.cpp too


@llama_cpp.llama_log_callback
def _quiet_log(level, text, user_data):
    del level, text, user_data


llama_cpp.llama_log_set(_quiet_log, ctypes.c_void_p(0))


def prompts(batch: int, length: int, vocab: int) -> list[list[int]]:
    """Distinct pseudo-random prompts away from the lowest ids (special tokens), as the C++ bench."""
    rng = np.random.default_rng(20261122)
    low = min(vocab // 8, 256)
    return [rng.integers(low, vocab, size=length).tolist() for _ in range(batch)]


def default_steps(batch: int) -> int:
    return max(32, 256 // batch)


# --- pagedllm ------------------------------------------------------------------------------------

def run_pagedllm(args, batch: int, steps: int, fp32: bool = False) -> dict:
    command = [args.pagedllm_bench, "--model", args.model, "--batch", str(batch), "--prompt-tokens",
               str(args.prompt_tokens), "--steps", str(steps), "--warmup-steps", str(WARMUP_STEPS),
               "--threads", str(args.threads), "--json"] + (["--fp32-weights"] if fp32 else [])
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"bench_vs_llama_cpp: {' '.join(command)} failed:\n{result.stderr}")
    if args.verbose:
        sys.stderr.write(result.stderr)
    return json.loads(result.stdout)


# --- llama.cpp -----------------------------------------------------------------------------------

def llama_cpp_batch1(args, steps: int) -> dict:
    n_ctx = -(-(args.prompt_tokens + WARMUP_STEPS + steps + 16) // 256) * 256
    llm = llama_cpp.Llama(model_path=args.model, n_ctx=n_ctx, n_batch=512, n_threads=args.threads,
                          n_threads_batch=args.threads, verbose=False)
    vocab = llm.n_vocab()
    prompt = prompts(1, args.prompt_tokens, vocab)[0]
    logits = lambda: np.ctypeslib.as_array(llama_cpp.llama_get_logits(llm.ctx), shape=(vocab,))
    start = time.perf_counter()
    llm.eval(prompt)
    prefill = time.perf_counter() - start
    token = int(np.argmax(logits()))
    times = []
    for step in range(WARMUP_STEPS + steps):
        start = time.perf_counter()
        llm.eval([token])
        token = int(np.argmax(logits()))
        if step >= WARMUP_STEPS:
            times.append(time.perf_counter() - start)
    llm.close()
    return {"step_seconds": times, "prefill_s": prefill}


def llama_cpp_batched(args, batch: int, steps: int, unified: bool) -> dict:
    model_params = llama_cpp.llama_model_default_params()
    model = llama_cpp.llama_model_load_from_file(args.model.encode(), model_params)
    if not model:
        sys.exit(f"llama.cpp cannot load {args.model}")
    vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
    per_sequence = args.prompt_tokens + WARMUP_STEPS + steps + 16
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = -(-batch * per_sequence // 256) * 256
    params.n_batch = params.n_ubatch = max(args.prompt_tokens, batch)
    params.n_seq_max = batch
    params.kv_unified = unified
    params.n_threads = params.n_threads_batch = args.threads
    ctx = llama_cpp.llama_init_from_model(model, params)
    if not ctx:
        sys.exit("llama.cpp: cannot create the context")
    llama_batch = llama_cpp.llama_batch_init(max(args.prompt_tokens, batch), 0, 1)

    def fill(entries):  # entries: (token, position, sequence, wants logits)
        llama_batch.n_tokens = len(entries)
        for i, (token, position, sequence, logits) in enumerate(entries):
            llama_batch.token[i] = token
            llama_batch.pos[i] = position
            llama_batch.n_seq_id[i] = 1
            llama_batch.seq_id[i][0] = sequence
            llama_batch.logits[i] = logits
        status = llama_cpp.llama_decode(ctx, llama_batch)
        if status != 0:
            sys.exit(f"llama_decode returned {status}")

    def row(i):
        return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, i), shape=(vocab,))

    next_tokens = []
    start = time.perf_counter()
    for sequence, prompt in enumerate(prompts(batch, args.prompt_tokens, vocab)):
        fill([(token, position, sequence, position == len(prompt) - 1) for position, token in enumerate(prompt)])
        next_tokens.append(int(np.argmax(row(len(prompt) - 1))))
    prefill = time.perf_counter() - start
    times = []
    for step in range(WARMUP_STEPS + steps):
        position = args.prompt_tokens + step
        start = time.perf_counter()
        fill([(next_tokens[s], position, s, True) for s in range(batch)])
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits(ctx), shape=(batch, vocab))
        next_tokens = logits.argmax(axis=1).tolist()
        if step >= WARMUP_STEPS:
            times.append(time.perf_counter() - start)
    llama_cpp.llama_batch_free(llama_batch)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
    return {"step_seconds": times, "prefill_s": prefill}


def run_llama_cpp(args, batch: int, steps: int, kv: str) -> dict:
    """kv "unified": B = 1 through Llama.eval, B > 1 through the low-level API with one unified KV
    buffer; kv "split": the low-level API with one KV stream per sequence (kv_unified = false)."""
    if kv == "unified" and batch == 1:
        result = llama_cpp_batch1(args, steps)
    else:
        result = llama_cpp_batched(args, batch, steps, unified=kv == "unified")
    result["decode_tokens_per_s"] = batch * len(result["step_seconds"]) / sum(result["step_seconds"])
    result["step_ms_mean"] = 1e3 * statistics.fmean(result["step_seconds"])
    return result


def requantize(model: str, file_type: str, directory: str) -> str:
    """MODEL rewritten as FILE_TYPE by llama.cpp's quantizer; returns the new file's path."""
    ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{file_type.upper()}", None)
    if ftype is None:
        names = sorted(n.removeprefix("LLAMA_FTYPE_MOSTLY_") for n in dir(llama_cpp) if n.startswith("LLAMA_FTYPE_MOSTLY_"))
        sys.exit(f"--requantize: llama.cpp has no file type {file_type!r} (one of {', '.join(names)})")
    output = os.path.join(directory, f"{os.path.basename(model).removesuffix('.gguf')}.{file_type.upper()}.gguf")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.allow_requantize = True  # MODEL may be quantized already: it is dequantized first
    params.nthread = os.cpu_count() or 1
    status = llama_cpp.llama_model_quantize(model.encode(), output.encode(), ctypes.byref(params))
    if status != 0:
        sys.exit(f"--requantize: llama_model_quantize({model} -> {file_type}) returned {status}")
    return output


# --- main ----------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pagedllm-bench", required=True, help="build/release/bench/bench_cpu_decode")
    parser.add_argument("--model", required=True, help="a GGUF file both engines load")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batches", default="1,8,32")
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--steps", type=int, help="timed decode steps (default: max(32, 256 / batch))")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each engine per batch, in turn")
    parser.add_argument("--with-fp32", action="store_true",
                        help="also run pagedllm with fp32 weights (--fp32-weights) for the stored / fp32 ratio")
    parser.add_argument("--requantize", metavar="TYPE",
                        help="run both engines on MODEL rewritten in this llama.cpp file type (e.g. Q4_K_M)")
    parser.add_argument("--json", help="also write every run's figures to this file")
    parser.add_argument("--verbose", action="store_true", help="show bench_cpu_decode's own report")
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    if args.requantize:
        with tempfile.TemporaryDirectory() as directory:
            source = args.model
            args.model = requantize(source, args.requantize, directory)
            print(f"{source} requantized by llama.cpp as {args.requantize.upper()}: "
                  f"{os.path.getsize(args.model) / 1e6:.1f} MB")
            return compare(args, batches)
    return compare(args, batches)


def compare(args, batches: list[int]) -> int:

    print(f"model {args.model}; {args.threads} threads; prompt {args.prompt_tokens} tokens; "
          f"llama-cpp-python {llama_cpp.__version__}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f}")
    rows = []
    for batch in batches:
        steps = args.steps or default_steps(batch)
        runs = {"pagedllm": [], "llama.cpp unified": [], "llama.cpp split": []}
        if args.with_fp32:
            runs["pagedllm fp32"] = []
        for repeat in range(args.repeats):
            ours = run_pagedllm(args, batch, steps)
            runs["pagedllm"].append(ours)
            if args.with_fp32:
                runs["pagedllm fp32"].append(run_pagedllm(args, batch, steps, fp32=True))
            runs["llama.cpp unified"].append(run_llama_cpp(args, batch, steps, "unified"))
            runs["llama.cpp split"].append(run_llama_cpp(args, batch, steps, "split"))
            print(f"  batch {batch:3d} run {repeat + 1}: " + ", ".join(
                f"{name} {r[-1]['decode_tokens_per_s']:.1f} tok/s ({r[-1]['step_ms_mean']:.2f} ms/step)"
                for name, r in runs.items()) +
                f"; pagedllm / memory floor {ours['ratio_to_mem_floor']:.2f}x at {ours['read_bandwidth_gb_s']:.1f} GB/s, "
                f"/ compute floor {ours['ratio_to_compute_floor']:.2f}x at {ours['linear_peak_gflop_s']:.1f} GFLOP/s",
                flush=True)
        row = {"batch": batch, "steps": steps, "runs": runs}
        for name, results in runs.items():
            row[name] = {"best": max(r["decode_tokens_per_s"] for r in results),
                         "median": statistics.median(r["decode_tokens_per_s"] for r in results)}
        best_ours = max(runs["pagedllm"], key=lambda r: r["decode_tokens_per_s"])
        row["mem_floor_ratio"] = best_ours["ratio_to_mem_floor"]
        row["mem_floor_tokens_per_s"] = best_ours["mem_floor_tokens_per_s"]
        row["compute_floor_ratio"] = best_ours["ratio_to_compute_floor"]
        rows.append(row)

    print()
    print("| batch | steps | pagedllm tok/s | llama.cpp tok/s, unified KV (B = 1: Llama.eval) | llama.cpp tok/s, "
          "split KV | pagedllm / llama.cpp (faster of the two) | pagedllm step / memory floor | "
          "pagedllm step / compute floor |" + (" pagedllm fp32 tok/s | stored / fp32 |" if args.with_fp32 else ""))
    print("|---|---|---|---|---|---|---|---|" + ("---|---|" if args.with_fp32 else ""))
    cell = lambda figures: f"{figures['best']:.1f} / {figures['median']:.1f}" if args.repeats > 1 else f"{figures['best']:.1f}"
    for r in rows:
        fastest = max(r["llama.cpp unified"]["best"], r["llama.cpp split"]["best"])
        print(f"| {r['batch']} | {r['steps']} | {cell(r['pagedllm'])} | {cell(r['llama.cpp unified'])} | "
              f"{cell(r['llama.cpp split'])} | {r['pagedllm']['best'] / fastest:.2f}x | {r['mem_floor_ratio']:.2f}x "
              f"(floor {r['mem_floor_tokens_per_s']:.0f} tok/s) | {r['compute_floor_ratio']:.2f}x |" +
              (f" {cell(r['pagedllm fp32'])} | {r['pagedllm']['best'] / r['pagedllm fp32']['best']:.2f}x |"
               if args.with_fp32 else ""))
    if args.repeats > 1:
        print(f"(tok/s: best / median of {args.repeats} runs; ratios from the best runs)")
    for r in rows:
        if r["batch"] != 1:
            continue
        # Batch 1: one prompt, so prefill_s is the time to its first token's logits in every setup.
        best = {name: min(run["prefill_s"] for run in runs) for name, runs in r["runs"].items()}
        fastest = min(best["llama.cpp unified"], best["llama.cpp split"])
        print(f"prefill of one {args.prompt_tokens}-token prompt (batch 1, best of {args.repeats}): " +
              ", ".join(f"{name} {seconds * 1e3:.1f} ms" for name, seconds in best.items()) +
              f"; pagedllm / llama.cpp (faster setup) {fastest / best['pagedllm']:.2f}x (speed)")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)
        print(f"JSON written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
