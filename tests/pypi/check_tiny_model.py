#!/usr/bin/env python3
"""Cross-checks what `pagedllm make-model` writes with readers no one here wrote.

    python tests/pypi/check_tiny_model.py --pagedllm build/release/pagedllm

For the default tiny model and a Q8_0 variant:
1. safetensors (the `safetensors` package) and GGUF (gguf-py's GGUFReader and dequantizer) hold
   the same weights: every GGUF tensor, dequantized by gguf-py and brought back to Hugging Face
   row order (llama.cpp's converter interleaves the rotary rows of q/k, undone here in numpy),
   equals the safetensors tensor bit for bit (F32 GGUF) or within Q8_0's step (Q8_0 GGUF).
2. The GGUF metadata says what config.json says (layers, sizes, heads, rope, eps, vocabulary).
3. `tokenizers` loads the tokenizer.json and gives pagedllm's ids on a varied corpus.
4. Jinja2 renders tokenizer_config.json's chat template as `pagedllm chat-template` does.
Exits 1 at the first difference, naming it.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import gguf
import jinja2
import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

CORPUS = [
    "The scheduler decides, at every step, which requests run.",
    "def f(x):\n    return x * 2  # doubled\n",
    "Numbers 1234567 and 3.14159, dates 2026-11-22.",
    "  leading spaces,\ttabs\t\tand\n\n\nnewlines  ",
    "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
    "naïve café, 東京タワー, emoji 🙂🚀, Ελληνικά, русский",
    "It's, they're, we've, I'M: contractions.",
    "",
]


def fail(message):
    sys.exit(f"check_tiny_model: MISMATCH: {message}")


def hf_rows_from_gguf(rows, num_heads):
    """Undoes llama.cpp's q/k permutation: GGUF row (h, j, half) holds HF row (h, half, j)."""
    out_rows, width = rows.shape
    head_dim = out_rows // num_heads
    return (rows.reshape(num_heads, head_dim // 2, 2, width).swapaxes(1, 2).reshape(out_rows, width))


def internal_name(gguf_name):
    globals_ = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
                "output.weight": "lm_head.weight"}
    if gguf_name in globals_:
        return globals_[gguf_name]
    layers = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
              "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
              "ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
              "ffn_down": "mlp.down_proj"}
    _, layer, part, kind = gguf_name.split(".")
    return f"model.layers.{layer}.{layers[part]}.{kind}"


def check_weights(directory, exact):
    config = json.loads((directory / "config.json").read_text())
    hf = load_file(str(directory / "model.safetensors"))
    reader = gguf.GGUFReader(str(directory / "model.gguf"))
    names = set()
    worst = 0.0
    for tensor in reader.tensors:
        name = internal_name(tensor.name)
        names.add(name)
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        values = values.reshape(hf[name].shape)
        if name.endswith("q_proj.weight"):
            values = hf_rows_from_gguf(values, config["num_attention_heads"])
        elif name.endswith("k_proj.weight"):
            values = hf_rows_from_gguf(values, config["num_key_value_heads"])
        if exact:
            if not np.array_equal(values.view(np.uint32), hf[name].view(np.uint32)):
                fail(f"{directory}: tensor {tensor.name} differs from {name} in model.safetensors")
        else:
            step = np.abs(hf[name]).max() / 127.0
            error = np.abs(values - hf[name]).max()
            worst = max(worst, error / step)
            if error > step:
                fail(f"{directory}: tensor {tensor.name}: error {error} beyond the Q8_0 step {step}")
    if names != set(hf):
        fail(f"{directory}: tensor sets differ: {sorted(names ^ set(hf))}")
    field = lambda key: reader.fields[key].contents()
    expected = {
        "llama.block_count": config["num_hidden_layers"],
        "llama.embedding_length": config["hidden_size"],
        "llama.feed_forward_length": config["intermediate_size"],
        "llama.attention.head_count": config["num_attention_heads"],
        "llama.attention.head_count_kv": config["num_key_value_heads"],
        "llama.context_length": config["max_position_embeddings"],
        "llama.vocab_size": config["vocab_size"],
    }
    for key, value in expected.items():
        if field(key) != value:
            fail(f"{directory}: GGUF {key} = {field(key)}, config.json says {value}")
    if np.float32(field("llama.rope.freq_base")) != np.float32(config["rope_theta"]):
        fail(f"{directory}: rope theta differs")
    if np.float32(field("llama.attention.layer_norm_rms_epsilon")) != np.float32(config["rms_norm_eps"]):
        fail(f"{directory}: rms norm eps differs")
    if len(field("tokenizer.ggml.tokens")) != config["vocab_size"]:
        fail(f"{directory}: GGUF vocabulary size differs")
    detail = "bit-identical" if exact else f"within Q8_0's step (worst {worst:.2f} of a step)"
    print(f"ok  {directory.name}: {len(names)} tensors, GGUF (gguf-py) and safetensors {detail}; metadata agrees")


def check_tokenizer(pagedllm, directory):
    library = Tokenizer.from_file(str(directory / "tokenizer.json"))
    lines = "".join(json.dumps({"text": text}) + "\n" for text in CORPUS)
    result = subprocess.run([pagedllm, "tokenize", "--tokenizer", str(directory), "--input-jsonl", "-"],
                            input=lines, capture_output=True, text=True, check=True)
    ours = [json.loads(line)["ids"] for line in result.stdout.splitlines()]
    for text, ids in zip(CORPUS, ours):
        theirs = library.encode(text).ids
        if ids != theirs:
            fail(f"{directory}: tokenizer ids for {text!r}: pagedllm {ids}, tokenizers {theirs}")
    print(f"ok  {directory.name}: tokenizers gives pagedllm's ids on {len(CORPUS)} texts")


def check_chat_template(pagedllm, directory, scratch):
    template_text = json.loads((directory / "tokenizer_config.json").read_text())["chat_template"]
    template_path = scratch / "tiny.jinja"
    template_path.write_text(template_text)
    environment = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    conversations = [
        [{"role": "user", "content": "Hi"}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"},
         {"role": "assistant", "content": "Because."}, {"role": "user", "content": "Thanks"}],
    ]
    for messages in conversations:
        for generation_prompt in (True, False):
            expected = environment.from_string(template_text).render(
                messages=messages, add_generation_prompt=generation_prompt)
            messages_path = scratch / "messages.json"
            messages_path.write_text(json.dumps(messages))
            command = [pagedllm, "chat-template", "--template-file", str(template_path),
                       "--messages-json", str(messages_path)]
            if not generation_prompt:
                command.append("--no-generation-prompt")
            rendered = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            if rendered != expected:
                fail(f"{directory}: chat template render differs:\n{rendered!r}\n{expected!r}")
    print(f"ok  {directory.name}: Jinja2 renders the shipped chat template as pagedllm does")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pagedllm", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        for variant, options, exact in (("tiny_f32", [], True), ("tiny_q8_0", ["--gguf-type", "q8_0"], False)):
            directory = scratch / variant
            subprocess.run([args.pagedllm, "make-model", "--out", str(directory), *options], check=True,
                           capture_output=True)
            check_weights(directory, exact)
        check_tokenizer(args.pagedllm, scratch / "tiny_f32")
        check_chat_template(args.pagedllm, scratch / "tiny_f32", scratch)
    print("check_tiny_model: all checks passed")


if __name__ == "__main__":
    main()
