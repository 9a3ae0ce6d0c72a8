#!/usr/bin/env python3
"""A GGUF at a real model's shape with random weights, written tensor by tensor (no model in memory).

    python tools/bench/make_shaped_gguf.py --donor SmolLM2-135M-Instruct.Q4_1.gguf \\
        --shape llama-3-8b --type q8_0 --out /tmp/llama-3-8b-shaped.q8_0.gguf

For checking that the CPU engine loads and decodes models of the size people serve (memory as
mapped, tokens per second) where no such file can be downloaded. Needs gguf-py (the `gguf` package,
tests/pypi/requirements.txt). The tokenizer, and so the vocabulary size, comes from the donor GGUF
(every tokenizer.* key copied); the layers have the shape's exact dimensions. Weights: random
Q8_0 / Q4_0 blocks (uniform quants, fp16 scales near 1 / sqrt(row length), so activations stay
of order one) or F16; norms F32 ones. The output is deterministic for a given --seed.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

try:
    import gguf
except ImportError:  # pragma: no cover
    sys.exit("make_shaped_gguf.py needs gguf-py (pip install -r tests/pypi/requirements.txt)")

# (layers, hidden, heads, kv heads, intermediate, rope theta, context): the published configs.
SHAPES = {
    "llama-3-8b": (32, 4096, 32, 8, 14336, 500000.0, 8192),
    "llama-2-7b": (32, 4096, 32, 32, 11008, 10000.0, 4096),
    "mistral-7b": (32, 4096, 32, 8, 14336, 1000000.0, 32768),
    "qwen2.5-1.5b": (28, 1536, 12, 2, 8960, 1000000.0, 32768),
    # Every row a multiple of 256 values, so llama.cpp's Q4_K_M keeps its K-quants (SmolLM2's 576
    # falls back to Q5_0); the output head is written untied.
    "llama-3.2-1b": (16, 2048, 32, 8, 8192, 500000.0, 131072),
}
TYPES = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "q4_0": gguf.GGMLQuantizationType.Q4_0,
         "f16": gguf.GGMLQuantizationType.F16}


def random_rows(rng: np.random.Generator, rows: int, cols: int, kind: str) -> np.ndarray:
    """[rows, bytes per row] uint8 of random blocks of `kind` (or [rows, cols] float16)."""
    scale = 1.0 / np.sqrt(cols)
    if kind == "f16":
        return (rng.standard_normal((rows, cols), dtype=np.float32) * scale).astype(np.float16)
    blocks = rows * cols // 32
    d = (rng.uniform(0.5, 1.5, blocks).astype(np.float32) * scale * (2.0 / 127 if kind == "q8_0" else 2.0 / 8))
    d = d.astype(np.float16).view(np.uint8).reshape(blocks, 2)
    if kind == "q8_0":
        quants = rng.integers(-127, 128, (blocks, 32), dtype=np.int8).view(np.uint8)
    else:  # q4_0: 16 bytes of two nibbles each
        quants = rng.integers(0, 256, (blocks, 16), dtype=np.uint8)
    return np.concatenate([d, quants], axis=1).reshape(rows, -1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--donor", required=True, help="a GGUF whose tokenizer the new file takes")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="llama-3-8b")
    parser.add_argument("--type", choices=sorted(TYPES), default="q8_0", help="of the 2-D weights")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    layers, hidden, heads, kv_heads, intermediate, theta, context = SHAPES[args.shape]
    head_dim = hidden // heads

    donor = gguf.GGUFReader(args.donor)
    writer = gguf.GGUFWriter(args.out, "llama")
    vocab = 0
    for name, field in donor.fields.items():
        if not name.startswith("tokenizer."):
            continue
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(name, field.contents(), field.types[0], sub_type)
        if name == "tokenizer.ggml.tokens":
            vocab = len(field.data)
    if vocab == 0:
        sys.exit(f"{args.donor}: no tokenizer.ggml.tokens")
    writer.add_block_count(layers)
    writer.add_embedding_length(hidden)
    writer.add_feed_forward_length(intermediate)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(theta)
    writer.add_context_length(context)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(vocab)

    # (name, rows, cols); cols = 0: a norm of `rows` values.
    tensors = [("token_embd.weight", vocab, hidden)]
    for i in range(layers):
        tensors += [(f"blk.{i}.attn_norm.weight", hidden, 0), (f"blk.{i}.attn_q.weight", hidden, hidden),
                    (f"blk.{i}.attn_k.weight", kv_heads * head_dim, hidden),
                    (f"blk.{i}.attn_v.weight", kv_heads * head_dim, hidden),
                    (f"blk.{i}.attn_output.weight", hidden, hidden), (f"blk.{i}.ffn_norm.weight", hidden, 0),
                    (f"blk.{i}.ffn_gate.weight", intermediate, hidden), (f"blk.{i}.ffn_up.weight", intermediate, hidden),
                    (f"blk.{i}.ffn_down.weight", hidden, intermediate)]
    tensors += [("output_norm.weight", hidden, 0), ("output.weight", vocab, hidden)]
    raw_type = TYPES[args.type]
    for name, rows, cols in tensors:
        if cols == 0:
            writer.add_tensor_info(name, (rows,), np.dtype(np.float32), rows * 4)
        elif args.type == "f16":
            writer.add_tensor_info(name, (rows, cols), np.dtype(np.float16), rows * cols * 2)
        else:
            block_bytes = gguf.GGML_QUANT_SIZES[raw_type][1]
            shape = (rows, cols // 32 * block_bytes)
            writer.add_tensor_info(name, shape, np.dtype(np.uint8), shape[0] * shape[1], raw_dtype=raw_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    rng = np.random.default_rng(args.seed)
    total = 0
    for name, rows, cols in tensors:
        data = (np.ones(rows, dtype=np.float32) if cols == 0 else random_rows(rng, rows, cols, args.type))
        writer.write_tensor_data(data)
        total += data.nbytes
    writer.close()
    parameters = sum(rows * (cols or 1) for _, rows, cols in tensors)
    print(f"{args.out}: {args.shape} shape, vocabulary {vocab} (from {args.donor}), {parameters / 1e9:.2f}B "
          f"parameters, {args.type}, {total / 1e9:.2f} GB of tensor data")
    return 0


if __name__ == "__main__":
    sys.exit(main())
