#!/usr/bin/env python3
"""Random Llama checkpoints written by Hugging Face Transformers, loadable by pagedllm.

Shared by tools/validate/hf_oracle.py (small fp32/bf16 models for logit checks) and
tools/bench/cuda_vs_transformers.sh (full-size random models for throughput). A checkpoint is what
`save_pretrained(dir, safe_serialization=True)` writes (config.json + model.safetensors), with
config.json naming LlamaForCausalLM and head_dim explicitly, plus the tokenizer.json /
tokenizer_config.json that `pagedllm make-model` writes (pagedllm's --model needs a tokenizer).

make-model's BPE trainer stops where its built-in corpus runs out of merges (~943 tokens), so a
model whose vocab_size is larger (32000 for Llama-2, 128256 for Llama-3) carries a tokenizer that
covers only its first ids. pagedllm accepts that (the ids above the tokenizer are never produced
from text; random-id prompts and greedy outputs may use them, and detokenizing them is not needed
for a throughput run).

As a command (the benchmark's use):
    python tools/validate/hf_checkpoint.py --shape llama-2-7b --out DIR [--dtype bfloat16]
        [--device cuda] [--seed 0] [--pagedllm build/release/pagedllm]
Shapes: tiny (hidden 256, 2 layers, 4 heads of 64, vocab 1000), llama-2-7b, llama-3-8b.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError as error:  # pragma: no cover
    sys.exit(f"hf_checkpoint.py needs torch and transformers ({error}); "
             "pip install torch transformers safetensors numpy")

REPO = Path(__file__).resolve().parents[2]
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

# Model shapes (LlamaConfig keyword arguments) for the benchmark.
SHAPES: dict[str, dict] = {
    "tiny": dict(hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=4, head_dim=64, vocab_size=1000, max_position_embeddings=2048,
                 rope_theta=10000.0, rms_norm_eps=1e-5),
    "llama-2-7b": dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
                       num_key_value_heads=32, head_dim=128, vocab_size=32000, max_position_embeddings=4096,
                       rope_theta=10000.0, rms_norm_eps=1e-5),
    "llama-3-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                       num_key_value_heads=8, head_dim=128, vocab_size=128256, max_position_embeddings=8192,
                       rope_theta=500000.0, rms_norm_eps=1e-5),
}


def make_tokenizer(pagedllm: str, vocab_request: int, scratch: Path) -> tuple[Path, int, dict]:
    """A tokenizer directory from `pagedllm make-model`; returns it, its vocab size and its config."""
    directory = scratch / "make_model_tokenizer"
    subprocess.run([pagedllm, "make-model", "--out", str(directory), "--vocab-size", str(vocab_request)],
                   check=True, capture_output=True, text=True)
    config = json.loads((directory / "config.json").read_text())
    return directory, int(config["vocab_size"]), config


def special_ids(token_config: dict) -> dict:
    """bos / eos ids for a LlamaConfig from make-model's config.json (eos may be a list there)."""
    eos = token_config.get("eos_token_id")
    return {"bos_token_id": token_config.get("bos_token_id"),
            "eos_token_id": eos[0] if isinstance(eos, list) and eos else eos}


def patch_config_json(directory: Path, legacy_rope: dict | None = None) -> None:
    """Name the class and head_dim explicitly in directory/config.json; with legacy_rope (e.g.
    {"rope_theta": 1e4, "rope_scaling": None}), replace rope_parameters by those top-level keys, as
    transformers < 5 writes them."""
    path = directory / "config.json"
    config = json.loads(path.read_text())
    if legacy_rope is not None:
        config.pop("rope_parameters", None)
        config.update(legacy_rope)
    config.setdefault("head_dim", config["hidden_size"] // config["num_attention_heads"])
    config["architectures"] = ["LlamaForCausalLM"]
    path.write_text(json.dumps(config, indent=2) + "\n")


def copy_tokenizer(tokenizer_dir: Path, model_dir: Path) -> None:
    for file in TOKENIZER_FILES:
        shutil.copy(tokenizer_dir / file, model_dir / file)


def save_checkpoint(model: LlamaForCausalLM, model_dir: Path, tokenizer_dir: Path,
                    legacy_rope: dict | None = None) -> None:
    """save_pretrained (safetensors) + patch_config_json + the tokenizer files."""
    model.save_pretrained(str(model_dir), safe_serialization=True)
    patch_config_json(model_dir, legacy_rope)
    copy_tokenizer(tokenizer_dir, model_dir)


def random_model(shape: str, token_config: dict, dtype: torch.dtype, device: str, seed: int,
                 init_std: float = 0.02) -> LlamaForCausalLM:
    """A Llama of the named shape with transformers' own random init (normal(0, init_std)),
    built directly on `device` in `dtype` (a 7B model takes seconds on a GPU)."""
    config = LlamaConfig(**SHAPES[shape], hidden_act="silu", attention_bias=False, mlp_bias=False,
                         tie_word_embeddings=False, initializer_range=init_std, **special_ids(token_config))
    torch.manual_seed(seed)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    return model.to(dtype).eval()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="llama-2-7b")
    parser.add_argument("--out", type=Path, required=True, help="the checkpoint directory to write")
    parser.add_argument("--dtype", choices=sorted(TORCH_DTYPES), default="bfloat16")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                        help="where to build the model (cuda: fast for 7B shapes)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init-std", type=float, default=0.02)
    parser.add_argument("--pagedllm", default=str(REPO / "build/release/pagedllm"))
    parser.add_argument("--tokenizer-vocab", type=int, default=1024,
                        help="asked of make-model's BPE trainer (capped at the model's vocab_size)")
    args = parser.parse_args()
    transformers.utils.logging.disable_progress_bar()
    start = time.perf_counter()
    vocab = SHAPES[args.shape]["vocab_size"]
    with tempfile.TemporaryDirectory(prefix="hf_checkpoint_") as temp:
        tokenizer_dir, tokens, token_config = make_tokenizer(args.pagedllm, min(args.tokenizer_vocab, vocab),
                                                             Path(temp))
        model = random_model(args.shape, token_config, TORCH_DTYPES[args.dtype], args.device, args.seed,
                             args.init_std)
        args.out.mkdir(parents=True, exist_ok=True)
        save_checkpoint(model, args.out, tokenizer_dir)
    params = sum(p.numel() for p in model.parameters())
    print(f"hf_checkpoint: {args.shape} ({params / 1e9:.2f}B parameters, vocab {vocab}, tokenizer {tokens} tokens, "
          f"{args.dtype}) -> {args.out} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
