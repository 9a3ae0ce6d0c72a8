#!/usr/bin/env python3
"""Hugging Face Transformers as an independent oracle for pagedllm's Llama forward pass.

What it does
    1. Builds a randomly initialised small Llama model with `transformers` (LlamaConfig: hidden 256,
       4 layers, 8 query heads, 2 KV heads (GQA), head_dim 32, intermediate 688, SiLU MLP,
       rope_theta 10000), fixed seed, in up to four variants: rope default | llama3 scaling
       ({"rope_type": "llama3", factor 8, low_freq_factor 1, high_freq_factor 4,
       original_max_position_embeddings 64}, so all three llama3 frequency bands are used and the
       prompts run past position 64) x tie_word_embeddings no | yes. The weights are drawn with a
       larger std than transformers' 0.02 (--init-std) and the RMSNorm weights are randomised, so
       that attention is far from uniform and a rope / norm / GQA mistake moves the logits a lot.
    2. Saves it with save_pretrained(dir, safe_serialization=True) in --dtype float32 or bfloat16,
       next to the tokenizer.json / tokenizer_config.json that `pagedllm make-model` writes for the
       same vocabulary (pagedllm's --model needs a tokenizer; the ids are scored directly, so the
       tokenizer only has to load). config.json keeps the rope keys the transformers version wrote
       (transformers 5: only "rope_parameters"); --legacy-rope-keys writes the older top-level
       rope_theta / rope_scaling instead, to check that reading path too.
    3. Runs random token-id prompts (--lengths, default 1 7 33 100 300) through the HF model in
       fp32 (model.float(), eval, no_grad, eager attention): logits for every position. For the
       bf16 checkpoint the HF model is the saved bf16 weights upcast to fp32, i.e. exactly the
       weights pagedllm sees.
    4. Runs `pagedllm score --model DIR --input-jsonl F --output-dir D [--extra-score-args]`
       (output: D/index.json + one [num_tokens, vocab] little-endian fp32 file per prompt) and
       compares per prompt:
           rel   = ||a - b||_F / ||b||_F over all positions and the vocabulary (a = pagedllm,
                   b = HF): the normalized error, the gate
           worst = max over positions of ||a[p] - b[p]|| / ||b[p]||  (informational)
           max|d| = max abs difference of any logit
           argmax = positions where both pick the same top token
       and, for the llama3 variant, "sens": the same HF model run with rope_scaling removed,
       compared to the scaled one (a sensitivity control: it must be far above the tolerance,
       otherwise the check could not see a missing scaling).

Tolerances (--max-rel-error)
    1e-4 (default): pagedllm's CPU reference engine computes in fp32 on the checkpoint's weights
    (bf16 weights upcast), as does HF here; two correct fp32 implementations differ only by
    summation order, ~1e-6..1e-5 normalized. Anything near 1e-3 or above is a real bug.
    2e-2: for an executor that computes in bf16 (e.g. a later `--extra-score-args "--executor
    cuda"`): bf16 has an 8-bit mantissa (~4e-3 relative per rounding), accumulated over layers.
    Argmax disagreements are reported; they fail the run only with --strict-argmax (random init
    gives near ties, which a bf16 executor may legitimately flip).
    --yardstick bfloat16|float16 (for a low-precision executor, instead of a guessed constant): HF
    also runs the same weights in that dtype (its rotary frequencies kept in fp32), and each
    prompt's gate is --max-ratio (default 2) x HF's own normalized error against its fp32 logits:
    a correct low-precision implementation lands near 1x, a real bug far above. The first H100
    run (2026-11-26) had pagedllm's CUDA bf16 at 1.4e-2..2.8e-2 and fp16 at 1.9e-3..3.4e-3: the
    8x of their mantissas, so rounding, which a fixed 2e-2 failed for bf16.

Usage
    python tools/validate/hf_oracle.py                        # fp32 weights, all 4 variants
    python tools/validate/hf_oracle.py --dtype bfloat16
    python tools/validate/hf_oracle.py --dtype all --rope llama3 --tie no
    python tools/validate/hf_oracle.py --extra-score-args "--executor cuda" --yardstick bfloat16
Options: --pagedllm BIN (default build/release/pagedllm), --lengths, --seed, --keep DIR (keep the
checkpoints and scores), --json PATH (results as JSON), --legacy-rope-keys (see 2.).
Exit status: 0 all within tolerance, 1 some prompt beyond it (or an argmax flip with
--strict-argmax), 2 a tool failed (pagedllm exited non-zero, bad output).

Requirements (a venv outside the repository; PyPI's Linux torch wheel is fine, CUDA not needed):
    python3 -m venv /tmp/hf-venv
    /tmp/hf-venv/bin/pip install torch transformers safetensors numpy
"""
from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, asdict
from pathlib import Path

import numpy as np

try:
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError as error:  # pragma: no cover
    sys.exit(f"hf_oracle.py needs torch and transformers ({error}); "
             "pip install torch transformers safetensors numpy")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hf_checkpoint import make_tokenizer, save_checkpoint, special_ids  # noqa: E402  (shared with tools/bench)

REPO = Path(__file__).resolve().parents[2]
LLAMA3_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 64}
TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class Row:
    dtype: str
    rope: str
    tied: bool
    length: int
    rel: float
    worst: float
    max_abs: float
    argmax_agree: int
    sens: float | None
    yardstick: float | None  # HF's own error in --yardstick's dtype
    gate: float
    ok: bool


def build_config(args, vocab: int, rope: str, tied: bool, token_config: dict) -> LlamaConfig:
    config = LlamaConfig(
        vocab_size=vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
        num_hidden_layers=args.layers, num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
        head_dim=args.hidden // args.heads, max_position_embeddings=args.max_positions, rms_norm_eps=1e-5,
        rope_theta=args.rope_theta, rope_scaling=dict(LLAMA3_SCALING) if rope == "llama3" else None,
        tie_word_embeddings=tied, hidden_act="silu", attention_bias=False, mlp_bias=False,
        initializer_range=args.init_std, **special_ids(token_config))
    config._attn_implementation = "eager"
    return config


def check_rope_config(model: LlamaForCausalLM, rope: str, theta: float) -> None:
    """Make sure the HF model really uses the rope we meant (transformers 4 vs 5 spell it differently)."""
    rotary = model.model.rotary_emb
    inv_freq = rotary.inv_freq.double()
    head_dim = model.config.head_dim
    base = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    scaled = not torch.allclose(inv_freq, base, rtol=1e-5)
    if scaled != (rope == "llama3"):
        raise SystemExit(f"hf_oracle: transformers {transformers.__version__} did not apply rope '{rope}' "
                         f"(inv_freq scaled: {scaled}); cannot use it as an oracle")


def new_model(config: LlamaConfig, seed: int, init_std: float) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):  # randomise RMSNorm gains: all-ones would hide a swap
                parameter.copy_(1.0 + 0.2 * torch.randn(parameter.shape, generator=generator))
            else:
                parameter.copy_(init_std * torch.randn(parameter.shape, generator=generator))
    return model.eval()


def low_precision_copy(config: LlamaConfig, weights: dict, dtype: str) -> LlamaForCausalLM:
    """The reference model in `dtype`, its rotary inv_freq kept in fp32 (as pagedllm keeps it)."""
    model = LlamaForCausalLM(config).eval()
    model.load_state_dict(weights)
    inv_freq = model.model.rotary_emb.inv_freq.clone()
    model.to(TORCH_DTYPES[dtype])
    model.model.rotary_emb.inv_freq = inv_freq
    return model


def legacy_rope_keys(rope: str, theta: float) -> dict:
    """The top-level rope_theta / rope_scaling that transformers < 5 writes (--legacy-rope-keys)."""
    return {"rope_theta": theta, "rope_scaling": dict(LLAMA3_SCALING) if rope == "llama3" else None}


def hf_logits(model: LlamaForCausalLM, prompts: list[list[int]]) -> list[np.ndarray]:
    out = []
    with torch.no_grad():
        for ids in prompts:
            logits = model(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False).logits
            out.append(logits[0].float().numpy().astype(np.float32))
    return out


def pagedllm_logits(pagedllm: str, model_dir: Path, prompts: list[list[int]], work: Path,
                    extra: list[str]) -> list[np.ndarray]:
    input_path = work / "ids.jsonl"
    input_path.write_text("".join(json.dumps({"ids": ids}) + "\n" for ids in prompts))
    output_dir = work / "scores"
    shutil.rmtree(output_dir, ignore_errors=True)
    command = [pagedllm, "score", "--model", str(model_dir), "--input-jsonl", str(input_path),
               "--output-dir", str(output_dir), *extra]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        print(f"hf_oracle: {shlex.join(command)} exited {result.returncode}:\n{result.stderr}", file=sys.stderr)
        raise SystemExit(2)
    index = json.loads((output_dir / "index.json").read_text())
    if len(index) != len(prompts):
        print(f"hf_oracle: {len(index)} scores for {len(prompts)} prompts", file=sys.stderr)
        raise SystemExit(2)
    out = []
    for entry, ids in zip(index, prompts):
        data = np.fromfile(output_dir / entry["file"], dtype="<f4")
        if entry["num_tokens"] != len(ids) or data.size != len(ids) * entry["vocab_size"]:
            print(f"hf_oracle: {entry}: unexpected size {data.size} for {len(ids)} ids", file=sys.stderr)
            raise SystemExit(2)
        out.append(data.reshape(len(ids), entry["vocab_size"]))
    return out


def normalized(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm((a - b).astype(np.float64)) / max(np.linalg.norm(b.astype(np.float64)), 1e-30))


def run_variant(args, scratch: Path, tokenizer_dir: Path, vocab: int, token_config: dict, dtype: str,
                rope: str, tied: bool, prompts: list[list[int]], extra: list[str]) -> list[Row]:
    name = f"{dtype}-{rope}-{'tied' if tied else 'untied'}"
    model_dir = scratch / name
    config = build_config(args, vocab, rope, tied, token_config)
    model = new_model(config, args.seed, args.init_std)
    check_rope_config(model, rope, args.rope_theta)
    # config.json names the class and head_dim; the tokenizer files come from make-model.
    save_checkpoint(model.to(TORCH_DTYPES[dtype]), model_dir, tokenizer_dir,
                    legacy_rope_keys(rope, args.rope_theta) if args.legacy_rope_keys else None)
    # The reference: a fresh fp32 model holding the saved weights (bf16 ones upcast exactly). Not
    # model.float(): .to(bfloat16) also rounded the rotary inv_freq buffer, which .float() keeps.
    weights = {key: value.float() for key, value in model.state_dict().items()}
    model = LlamaForCausalLM(config).eval()
    model.load_state_dict(weights)
    check_rope_config(model, rope, args.rope_theta)
    reference = hf_logits(model, prompts)
    sens = None
    if rope == "llama3":  # sensitivity control: same weights, scaling dropped
        plain = LlamaForCausalLM(build_config(args, vocab, "default", tied, token_config)).eval()
        plain.load_state_dict(weights)
        sens = hf_logits(plain, prompts)
    yardstick = hf_logits(low_precision_copy(config, weights, args.yardstick), prompts) if args.yardstick else None
    ours = pagedllm_logits(args.pagedllm, model_dir, prompts, model_dir, extra)
    rows = []
    for i, (a, b) in enumerate(zip(ours, reference)):
        if a.shape != b.shape:
            print(f"hf_oracle: {name} prompt {i}: pagedllm shape {a.shape}, HF {b.shape}", file=sys.stderr)
            raise SystemExit(2)
        rel = normalized(a, b)
        worst = max(normalized(a[p], b[p]) for p in range(a.shape[0]))
        agree = int(np.sum(a.argmax(-1) == b.argmax(-1)))
        yard = normalized(yardstick[i], b) if yardstick is not None else None
        gate = args.max_ratio * yard if yard is not None else args.max_rel_error
        ok = rel <= gate and (not args.strict_argmax or agree == a.shape[0])
        rows.append(Row(dtype, rope, tied, a.shape[0], rel, worst, float(np.abs(a - b).max()), agree,
                        normalized(sens[i], b) if sens is not None else None, yard, gate, ok))
    return rows


def print_table(rows: list[Row], args) -> None:
    gate = (f"rel <= {args.max_ratio:g} x HF's own error in {args.yardstick} (yard)" if args.yardstick
            else f"rel <= {args.max_rel_error:g}")
    print(f"\npagedllm score vs HF transformers {transformers.__version__} (torch {torch.__version__}), "
          f"fp32 compute; gate: {gate}")
    header = f"{'weights':<9} {'rope':<8} {'tied':<5} {'len':>5} {'rel':>10} {'worst pos':>10} {'max|d|':>10} " \
             f"{'argmax':>9} {'sens':>9} {'yard':>9}  result"
    print(header)
    print("-" * len(header))
    for r in rows:
        sens = f"{r.sens:9.2e}" if r.sens is not None else f"{'-':>9}"
        yard = f"{r.yardstick:9.2e}" if r.yardstick is not None else f"{'-':>9}"
        print(f"{r.dtype:<9} {r.rope:<8} {'yes' if r.tied else 'no':<5} {r.length:>5} {r.rel:10.2e} "
              f"{r.worst:10.2e} {r.max_abs:10.2e} {f'{r.argmax_agree}/{r.length}':>9} {sens} {yard}  "
              f"{'ok' if r.ok else 'FAIL'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pagedllm", default=str(REPO / "build/release/pagedllm"))
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "all"], default="float32",
                        help="checkpoint dtype (all = both)")
    parser.add_argument("--rope", choices=["default", "llama3", "all"], default="all")
    parser.add_argument("--tie", choices=["no", "yes", "all"], default="all", help="tie_word_embeddings")
    parser.add_argument("--lengths", type=int, nargs="+", default=[1, 7, 33, 100, 300])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocab-size", type=int, default=1024,
                        help="asked of make-model's BPE trainer; the model gets the size it reaches")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--intermediate", type=int, default=688)
    parser.add_argument("--max-positions", type=int, default=2048)
    parser.add_argument("--rope-theta", type=float, default=10000.0)
    parser.add_argument("--init-std", type=float, default=0.08,
                        help="weight std (transformers' 0.02 makes attention nearly uniform)")
    parser.add_argument("--max-rel-error", type=float, default=1e-4)
    parser.add_argument("--yardstick", choices=["bfloat16", "float16"],
                        help="gate each prompt at --max-ratio x HF's own error in this dtype (for a low-precision executor)")
    parser.add_argument("--max-ratio", type=float, default=2.0, help="with --yardstick (see the module's doc)")
    parser.add_argument("--strict-argmax", action="store_true", help="an argmax flip fails the run")
    parser.add_argument("--extra-score-args", default="", help="appended to `pagedllm score` (shell-split)")
    parser.add_argument("--legacy-rope-keys", action="store_true",
                        help="write the top-level rope_theta / rope_scaling of transformers < 5 instead of rope_parameters")
    parser.add_argument("--keep", type=Path, help="keep checkpoints and scores in this directory")
    parser.add_argument("--json", type=Path, help="write the rows as JSON here")
    args = parser.parse_args()
    if not Path(args.pagedllm).exists():
        print(f"hf_oracle: {args.pagedllm}: no such binary (build it, or pass --pagedllm)", file=sys.stderr)
        return 2
    if max(args.lengths) > args.max_positions or min(args.lengths) < 1:
        parser.error("--lengths must be within 1..--max-positions")
    torch.set_num_threads(max(1, torch.get_num_threads()))
    extra = shlex.split(args.extra_score_args)
    dtypes = ["float32", "bfloat16"] if args.dtype == "all" else [args.dtype]
    ropes = ["default", "llama3"] if args.rope == "all" else [args.rope]
    ties = [False, True] if args.tie == "all" else [args.tie == "yes"]

    with tempfile.TemporaryDirectory(prefix="hf_oracle_") as temp:
        scratch = args.keep if args.keep else Path(temp)
        scratch.mkdir(parents=True, exist_ok=True)
        tokenizer_dir, vocab, token_config = make_tokenizer(args.pagedllm, args.vocab_size, scratch)
        rng = np.random.default_rng(args.seed)
        prompts = [rng.integers(0, vocab, size=n).tolist() for n in args.lengths]
        print(f"model: hidden {args.hidden}, {args.layers} layers, {args.heads}/{args.kv_heads} heads, "
              f"intermediate {args.intermediate}, vocab {vocab}; prompts of {args.lengths} ids (seed {args.seed})")
        rows: list[Row] = []
        for dtype in dtypes:
            for rope in ropes:
                for tied in ties:
                    rows += run_variant(args, scratch, tokenizer_dir, vocab, token_config, dtype, rope, tied,
                                        prompts, extra)
    print_table(rows, args)
    # The rope-scaling control must stand far above the gate: 100x a fixed fp32 gate, 10x a
    # yardstick's (which is already tens of times larger).
    margin = 10 if args.yardstick else 100
    bad_sens = [r for r in rows if r.sens is not None and r.length > 1 and r.sens < margin * r.gate]
    for r in bad_sens:
        print(f"warning: {r.dtype} {r.rope} len {r.length}: dropping the rope scaling moves HF's logits by only "
              f"{r.sens:.1e}; this prompt cannot see a scaling bug", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    failed = [r for r in rows if not r.ok]
    print(f"\n{len(rows) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
