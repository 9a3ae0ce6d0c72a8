#!/usr/bin/env python3
"""Cross-check `pagedllm dequantize` against gguf-py (llama.cpp's Python package), bit for bit.

    python tests/pypi/check_dequant.py --pagedllm build/release/pagedllm [--model REAL.gguf]

1. Writes a GGUF (with gguf.GGUFWriter) holding random tensors of every type pagedllm
   dequantizes: random block bytes whose fp16 (Q8_K: fp32) scale fields are overwritten with
   random finite values (subnormals, zeros and the largest values included), and random finite
   F32 / F16 / BF16 values. Several shapes, including 1-D and 3-D tensors.
2. Runs `pagedllm dequantize FILE --out DIR` and compares every DIR/<tensor>.f32 with
   `gguf.quants.dequantize` on the uint32 views (np.array_equal), reporting the first mismatch.
   gguf-py has no Q8_K dequantizer; Q8_K is compared with ggml's definition (x = d * q) in numpy.
3. With --model, does the same for every tensor of a real GGUF model.

Prints one line per type with element counts; exits 0 only if every value is identical.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

try:
    import gguf
    from gguf import GGMLQuantizationType as Q
except ImportError:  # pragma: no cover - the PyPI tier installs it
    sys.exit("check_dequant.py needs the `gguf` package (pip install gguf numpy)")

QK_K = 256

# Byte ranges of the fp16 scale fields inside one block of each quantized type.
FP16_SCALE_FIELDS: dict[Q, list[tuple[int, int]]] = {
    Q.Q4_0: [(0, 2)],
    Q.Q4_1: [(0, 2), (2, 4)],
    Q.Q5_0: [(0, 2)],
    Q.Q5_1: [(0, 2), (2, 4)],
    Q.Q8_0: [(0, 2)],
    Q.Q2_K: [(80, 82), (82, 84)],
    Q.Q3_K: [(108, 110)],
    Q.Q4_K: [(0, 2), (2, 4)],
    Q.Q5_K: [(0, 2), (2, 4)],
    Q.Q6_K: [(208, 210)],
}
QUANTIZED = [*FP16_SCALE_FIELDS, Q.Q8_K]
# Shapes, outermost first (numpy order), in units of the row length's blocks: (rows..., blocks).
SHAPES = [(1, 1), (7, 3), (2, 3, 2), (300,)]


def random_finite_fp16_bits(rng: np.random.Generator, count: int) -> np.ndarray:
    bits = rng.integers(0, 1 << 16, size=count, dtype=np.uint16)
    inf_or_nan = (bits & 0x7C00) == 0x7C00
    bits[inf_or_nan] &= np.uint16(0xBFFF)  # clear the exponent's top bit: finite
    # Make sure zeros, negative zero, the smallest subnormal and the largest value occur.
    specials = np.array([0x0000, 0x8000, 0x0001, 0x7BFF, 0xFBFF, 0x3C00], dtype=np.uint16)
    bits[: min(count, len(specials))] = specials[: min(count, len(specials))]
    return bits


def random_finite_fp32(rng: np.random.Generator, count: int) -> np.ndarray:
    bits = rng.integers(0, 1 << 32, size=count, dtype=np.uint32)
    inf_or_nan = (bits & 0x7F800000) == 0x7F800000
    bits[inf_or_nan] &= np.uint32(0xBFFFFFFF)
    return bits.view(np.float32)


def random_blocks(rng: np.random.Generator, qtype: Q, num_blocks: int) -> np.ndarray:
    _, type_size = gguf.GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, size=(num_blocks, type_size), dtype=np.uint8)
    if qtype == Q.Q8_K:
        # fp32 d, kept to a range where d * 127 stays finite most of the time, plus extremes.
        d = (rng.standard_normal(num_blocks) * 10.0 ** rng.integers(-40, 38, num_blocks)).astype(np.float32)
        d[0] = np.float32(3.0e38)
        blocks[:, 0:4] = d.view(np.uint8).reshape(num_blocks, 4)
        return blocks
    for begin, end in FP16_SCALE_FIELDS[qtype]:
        blocks[:, begin:end] = random_finite_fp16_bits(rng, num_blocks).view(np.uint8).reshape(num_blocks, 2)
    return blocks


def write_random_gguf(path: Path, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), arch="pagedllm-check")
    names = []
    for qtype in QUANTIZED:
        block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
        for shape_index, shape in enumerate(SHAPES):
            rows, blocks_per_row = shape[:-1], shape[-1]
            num_blocks = int(np.prod(rows, dtype=np.int64)) * blocks_per_row
            raw = random_blocks(rng, qtype, num_blocks).reshape(*rows, blocks_per_row * type_size)
            name = f"{qtype.name.lower()}.{shape_index}"
            writer.add_tensor(name, raw, raw_dtype=qtype)
            names.append(name)
    for qtype, count_per_row in [(Q.F32, 96), (Q.F16, 96), (Q.BF16, 96)]:
        for shape_index, rows in enumerate([(1,), (5,), (2, 3)]):
            count = int(np.prod(rows)) * count_per_row
            if qtype == Q.F32:
                data = random_finite_fp32(rng, count).reshape(*rows, count_per_row)
                writer.add_tensor(f"f32.{shape_index}", data)
            elif qtype == Q.F16:
                data = random_finite_fp16_bits(rng, count).view(np.float16).reshape(*rows, count_per_row)
                writer.add_tensor(f"f16.{shape_index}", data)
            else:
                high = random_finite_fp32(rng, count).view(np.uint32) >> 16
                data = high.astype(np.uint16).view(np.uint8).reshape(*rows, count_per_row * 2)
                writer.add_tensor(f"bf16.{shape_index}", data, raw_dtype=Q.BF16)
            names.append(f"{qtype.name.lower()}.{shape_index}")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return names


def reference_dequantize(tensor) -> np.ndarray:
    """What gguf-py makes of a tensor, flattened in file order; Q8_K by ggml's definition."""
    if tensor.tensor_type == Q.Q8_K:
        _, type_size = gguf.GGML_QUANT_SIZES[Q.Q8_K]
        blocks = np.asarray(tensor.data, dtype=np.uint8).reshape(-1, type_size)
        d = blocks[:, 0:4].copy().view(np.float32)  # (n, 1)
        q = blocks[:, 4 : 4 + QK_K].copy().view(np.int8).astype(np.float32)
        with np.errstate(over="ignore"):  # huge d: both sides give inf
            return (d * q).reshape(-1)
    return np.asarray(gguf.quants.dequantize(tensor.data, tensor.tensor_type), dtype=np.float32).reshape(-1)


def compare_file(pagedllm: str, gguf_path: Path, out_dir: Path) -> bool:
    result = subprocess.run([pagedllm, "dequantize", str(gguf_path), "--out", str(out_dir)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        print(f"FAIL: pagedllm dequantize exited {result.returncode}:\n{result.stderr}")
        return False
    print("  " + result.stdout.strip())
    index = {entry["name"]: entry for entry in json.loads((out_dir / "index.json").read_text())}
    reader = gguf.GGUFReader(str(gguf_path))
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # type -> [tensors, values]
    failures: dict[str, str] = {}
    all_equal = True
    for tensor in reader.tensors:
        type_name = tensor.tensor_type.name
        entry = index.get(tensor.name)
        if entry is None:
            failures.setdefault(type_name, f"{tensor.name}: missing from index.json")
            all_equal = False
            continue
        if entry["dims"] != [int(d) for d in tensor.shape] or entry["type"] != type_name:
            failures.setdefault(type_name, f"{tensor.name}: index.json says dims {entry['dims']} type "
                                           f"{entry['type']}, gguf-py {list(map(int, tensor.shape))} {type_name}")
            all_equal = False
        ours = np.fromfile(out_dir / entry["file"], dtype=np.float32)
        theirs = reference_dequantize(tensor)
        counts[type_name][0] += 1
        counts[type_name][1] += theirs.size
        if ours.size != theirs.size:
            failures.setdefault(type_name, f"{tensor.name}: {ours.size} values, gguf-py {theirs.size}")
            all_equal = False
        elif not np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)):
            bad = np.flatnonzero(ours.view(np.uint32) != theirs.view(np.uint32))
            i = int(bad[0])
            failures.setdefault(type_name, f"{tensor.name}: {bad.size} values differ, first at {i}: "
                                           f"pagedllm {float(ours[i])!r} (0x{ours.view(np.uint32)[i]:08x}), "
                                           f"gguf-py {float(theirs[i])!r} (0x{theirs.view(np.uint32)[i]:08x})")
            all_equal = False
    for type_name in sorted(counts):
        tensors, values = counts[type_name]
        verdict = "MISMATCH: " + failures[type_name] if type_name in failures else "bit-identical"
        oracle = " (numpy, ggml's d*q: gguf-py has no Q8_K)" if type_name == "Q8_K" else ""
        print(f"  {type_name:5s} {tensors:4d} tensors {values:10d} values  {verdict}{oracle}")
    for type_name, failure in failures.items():
        if type_name not in counts:
            print(f"  {type_name:5s} MISMATCH: {failure}")
    return all_equal


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pagedllm", required=True, help="the pagedllm binary")
    parser.add_argument("--model", help="also check every tensor of this GGUF model")
    parser.add_argument("--seed", type=int, default=20240607, help="seed of the random tensors")
    parser.add_argument("--keep", help="keep the generated GGUF and outputs in this directory")
    args = parser.parse_args()

    ok = True
    with tempfile.TemporaryDirectory(prefix="check_dequant_") as scratch:
        work = Path(args.keep) if args.keep else Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        random_path = work / "random_tensors.gguf"
        names = write_random_gguf(random_path, args.seed)
        print(f"generated tensors ({len(names)} tensors, seed {args.seed}; gguf "
              f"{importlib.metadata.version('gguf')}, numpy {np.__version__}):")
        ok &= compare_file(args.pagedllm, random_path, work / "random_out")
        if args.model:
            print(f"model {args.model}:")
            ok &= compare_file(args.pagedllm, Path(args.model), work / "model_out")
    print("OK: every value bit-identical" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
