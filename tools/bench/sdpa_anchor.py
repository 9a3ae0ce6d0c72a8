#!/usr/bin/env python3
"""PyTorch anchor for pagedllm's attention benchmark (cuda/bench/bench_attention.cu).

Same cases as `bench_cuda_attention`: bf16, head_dim 128, 32 query heads with 32 KV heads (MHA)
and 8 KV heads (GQA), batch 1/16/64 x context 1024/2048/4096/32768, one query token per sequence.
For each case: dense K/V [batch, kv_heads, context, 128] and q [batch, 32, 1, 128] on the GPU,
torch.nn.functional.scaled_dot_product_attention timed with CUDA events (--warmup launches, then
--iters back to back, averaged), reported as
    us        microseconds per call
    GB/s      bytes / time, bytes = K + V (un-repeated) + q + out, as the C++ bench counts them
    % memcpy  of the device-to-device copy bandwidth measured in the same run (a torch copy of a
              1 GiB buffer, counting bytes read + written, i.e. 2 x 1 GiB per copy)
in the column layout the C++ bench prints; the "partition" column says "sdpa" (or "sdpa-rep",
see below). A case whose tensors would need more than 80% of the free device memory is printed
as skipped, like the C++ bench does.

GQA: with torch >= 2.5 SDPA gets the 8 KV heads directly (enable_gqa=True). An older torch lacks
it; then K/V are repeat_interleave'd to 32 heads once, outside the timed loop ("sdpa-rep"), and
only the un-repeated K/V bytes count as useful, so that GB/s stays comparable with pagedllm's
kernel (which reads each KV head once for its 4 query heads).

Prefill, after decode: the C++ bench's whole-prompt cases (batch x prompt 1x512, 1x2048,
4x2048, 1x8192; the same heads), SDPA with is_causal=True on dense q/K/V [batch, heads, prompt,
128], reported as microseconds and TFLOP/s over the same causal FLOP count (4 * head_dim * heads *
prompt (prompt + 1) / 2 per sequence), so the two tables compare line by line.

Usage
    python tools/bench/sdpa_anchor.py [--iters 100] [--warmup 10] [--json PATH]
        [--batches 1 16 64] [--contexts 1024 2048 4096 32768] [--kv-heads 32 8]
Needs a CUDA device: without one it says "no CUDA device" and exits 2.
Requirements: pip install torch (a CUDA build; PyPI's Linux wheel is one).
"""
from __future__ import annotations

import argparse
import json
import sys

HEAD_DIM = 128
NUM_HEADS = 32
BF16_BYTES = 2


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--contexts", type=int, nargs="+", default=[1024, 2048, 4096, 32768])
    parser.add_argument("--kv-heads", type=int, nargs="+", default=[32, 8], help="32 = MHA, 8 = GQA 32/8")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--memory-fraction", type=float, default=0.8,
                        help="skip a case needing more than this fraction of the free device memory")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    if args.warmup < 0 or args.iters < 1:
        parser.error("--warmup must be >= 0 and --iters >= 1")
    if any(NUM_HEADS % h for h in args.kv_heads):
        parser.error(f"--kv-heads must divide {NUM_HEADS}")
    return args


def time_it(torch, body, warmup: int, iters: int) -> float:
    """Average seconds per call of body(), enqueued back to back on the current stream."""
    for _ in range(warmup):
        body()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        body()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / 1e3 / iters


def memcpy_gbps(torch, warmup: int, iters: int) -> float:
    nbytes = 1 << 30
    a = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    a.fill_(1)
    seconds = time_it(torch, lambda: b.copy_(a), warmup, iters)
    del a, b
    torch.cuda.empty_cache()
    return 2.0 * nbytes / seconds / 1e9


def has_enable_gqa(torch) -> bool:
    F = torch.nn.functional
    q = torch.zeros(1, 4, 1, 8, device="cuda", dtype=torch.bfloat16)
    kv = torch.zeros(1, 2, 4, 8, device="cuda", dtype=torch.bfloat16)
    try:
        F.scaled_dot_product_attention(q, kv, kv, enable_gqa=True)
        return True
    except TypeError:
        return False


PREFILL_SHAPES = [(1, 512), (1, 2048), (4, 2048), (1, 8192)]  # (batch, prompt), as bench_attention.cu


def bench_prefill(torch, args, gqa_native: bool) -> list:
    """Causal SDPA over whole prompts; TFLOP/s on the C++ bench's FLOP count."""
    F = torch.nn.functional
    print(f"\nprefill attention, torch SDPA is_causal, bf16, head_dim {HEAD_DIM} (causal FLOPs: QK^T + PV)")
    print(f"{'heads':<6} {'batch':<6} {'prompt':<8} {'us':>10} {'TFLOP/s':>10}")
    rows = []
    for num_kv_heads in args.kv_heads:
        gqa = num_kv_heads != NUM_HEADS
        for batch, prompt in PREFILL_SHAPES:
            q = torch.randn(batch, NUM_HEADS, prompt, HEAD_DIM, dtype=torch.bfloat16, device="cuda")
            k = torch.randn(batch, num_kv_heads, prompt, HEAD_DIM, dtype=torch.bfloat16, device="cuda")
            v = torch.randn(batch, num_kv_heads, prompt, HEAD_DIM, dtype=torch.bfloat16, device="cuda")
            if gqa and not gqa_native:
                group = NUM_HEADS // num_kv_heads
                k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
                body = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
            elif gqa:
                body = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            else:
                body = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
            seconds = time_it(torch, body, args.warmup, args.iters)
            flops = 4.0 * HEAD_DIM * NUM_HEADS * batch * prompt * (prompt + 1) / 2.0
            print(f"{NUM_HEADS:2d}/{num_kv_heads:<3d} {batch:<6d} {prompt:<8d} {seconds * 1e6:10.1f} "
                  f"{flops / seconds / 1e12:10.2f}")
            rows.append({"num_heads": NUM_HEADS, "num_kv_heads": num_kv_heads, "batch": batch, "prompt": prompt,
                         "us": seconds * 1e6, "tflops": flops / seconds / 1e12})
            del q, k, v, body
            torch.cuda.empty_cache()
    return rows


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("sdpa_anchor: needs torch (pip install torch)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        print(f"sdpa_anchor: no CUDA device (torch {torch.__version__}, built for CUDA "
              f"{torch.version.cuda or 'none'}); nothing to measure", file=sys.stderr)
        return 2
    F = torch.nn.functional
    torch.manual_seed(0)
    properties = torch.cuda.get_device_properties(0)
    gqa_native = has_enable_gqa(torch)
    print(f"{properties.name}: {properties.multi_processor_count} SMs, "
          f"{properties.total_memory / (1 << 30):.1f} GiB; torch {torch.__version__} (CUDA {torch.version.cuda})")
    peak = memcpy_gbps(torch, args.warmup, args.iters)
    print(f"device-to-device copy (torch, 1 GiB): {peak:.1f} GB/s (read + write)")
    print(f"\ndecode attention, torch SDPA, bf16, head_dim {HEAD_DIM}, dense K/V "
          f"(bytes = K + V read + q + out);\npartition column: sdpa = "
          + ("enable_gqa=True" if gqa_native else
             "sdpa-rep where GQA: this torch lacks enable_gqa, K/V repeat_interleave'd outside the timed "
             "loop, only un-repeated K/V bytes counted"))
    print(f"{'heads':<6} {'batch':<6} {'context':<8} {'partition':<9} {'us':>10} {'GB/s':>10} {'% memcpy':>8}")
    rows = []
    for num_kv_heads in args.kv_heads:
        gqa = num_kv_heads != NUM_HEADS
        repeat = gqa and not gqa_native
        for batch in args.batches:
            for context in args.contexts:
                kv_bytes = 2 * batch * num_kv_heads * context * HEAD_DIM * BF16_BYTES  # K + V
                q_bytes = batch * NUM_HEADS * HEAD_DIM * BF16_BYTES
                resident = kv_bytes * (1 + NUM_HEADS // num_kv_heads if repeat else 1) + 2 * q_bytes
                free_bytes, _ = torch.cuda.mem_get_info()
                row = {"num_heads": NUM_HEADS, "num_kv_heads": num_kv_heads, "batch": batch, "context": context}
                if resident > free_bytes * args.memory_fraction:
                    print(f"{NUM_HEADS:2d}/{num_kv_heads:<3d} {batch:<6d} {context:<8d} skipped: needs "
                          f"{resident / (1 << 30):.1f} GiB")
                    rows.append({**row, "skipped": True, "needs_gib": resident / (1 << 30)})
                    continue
                shape = (batch, num_kv_heads, context, HEAD_DIM)
                k = torch.empty(shape, dtype=torch.bfloat16, device="cuda").normal_(0.0, 0.5)
                v = torch.empty(shape, dtype=torch.bfloat16, device="cuda").normal_(0.0, 0.5)
                q = torch.randn(batch, NUM_HEADS, 1, HEAD_DIM, dtype=torch.bfloat16, device="cuda")
                if repeat:
                    group = NUM_HEADS // num_kv_heads
                    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
                    body = lambda: F.scaled_dot_product_attention(q, k, v)
                elif gqa:
                    body = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
                else:
                    body = lambda: F.scaled_dot_product_attention(q, k, v)
                seconds = time_it(torch, body, args.warmup, args.iters)
                useful = kv_bytes + 2 * q_bytes  # K + V (un-repeated) + q + out
                gbps = useful / seconds / 1e9
                label = "sdpa-rep" if repeat else "sdpa"
                print(f"{NUM_HEADS:2d}/{num_kv_heads:<3d} {batch:<6d} {context:<8d} {label:<9} "
                      f"{seconds * 1e6:10.1f} {gbps:10.1f} {100.0 * gbps / peak:7.1f}%")
                rows.append({**row, "skipped": False, "mode": label, "us": seconds * 1e6, "bytes": useful,
                             "gbps": gbps, "pct_memcpy": 100.0 * gbps / peak})
                del k, v, q, body
                torch.cuda.empty_cache()
    prefill_rows = bench_prefill(torch, args, gqa_native)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"device": properties.name, "torch": torch.__version__, "cuda": torch.version.cuda,
                       "enable_gqa": gqa_native, "memcpy_gbps": peak, "warmup": args.warmup,
                       "iters": args.iters, "head_dim": HEAD_DIM, "cases": rows,
                       "prefill_cases": prefill_rows}, out, indent=1)
            out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
