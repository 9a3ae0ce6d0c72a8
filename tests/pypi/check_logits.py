#!/usr/bin/env python3
"""Cross-checks the logits of pagedllm's CPU forward pass against llama.cpp (llama-cpp-python).

    python tests/pypi/check_logits.py --pagedllm build/release/pagedllm [--model REAL.gguf]

1. Tiny model (`pagedllm make-model`, F32 GGUF): three fixed token sequences (20, 97 and 200
   ids, numpy seed 0) scored by `pagedllm score` and by llama.cpp with an F32 KV cache
   (type_k = type_v = GGML_TYPE_F32), flash attention off, all-position logits, each sequence
   from an empty cache and without BOS. Also against a float64 numpy Llama forward written here
   from model.safetensors (Hugging Face layout: a second source that shares no code with either).
   Error measure, per sequence:
       max relative error = max over positions p of  max_v |a[p, v] - b[p, v]| / max_v |b[p, v]|
   (a = pagedllm, b = the reference); each must be <= 1e-4.
   Negative control: llama.cpp on a model of another weights seed must differ by > 1e-2 (so the
   comparison is not vacuous).
2. With --model (the real SmolLM2-135M-Instruct Q4_1 GGUF): five texts of 449-547 tokens (2,487
   positions: English prose, Python, C++, release notes with numbers, a chat rendered with the
   model's own template by `pagedllm chat-template --gguf`), tokenized by `pagedllm tokenize`.
   pagedllm dequantizes the Q4_1 weights to fp32 at load and computes in fp32.
   a) Against llama.cpp on the same weights dequantized to an F32 GGUF by llama.cpp's own
      quantize tool (llama_model_quantize, ALL_F32): max relative error <= 1e-4 per text (as
      above) and top-1 (argmax) agreement >= 99% over all positions.
   b) Against llama.cpp on the Q4_1 file itself. llama.cpp multiplies Q4_1 weights with
      Q8-quantized activations, which moves logits by ~0.15 on average and flips the top token
      wherever the top two are close: llama.cpp's own F32 run agrees with its Q4_1 run on only
      ~96.5% of these positions, so a fixed 99% cannot be met by any exact implementation. The
      gate: pagedllm's top-1 agreement with the Q4_1 run is at least llama.cpp F32's minus 1
      point. Mean / max absolute logit differences are printed for information.

3. Sliding window (`pagedllm make-model --sliding-window W`: config.json of architecture mistral
   with "sliding_window": W, as Mistral-7B-v0.1 carries it; GGUF llama.attention.sliding_window):
   windows 16 and 37 over sequences of 100, 160 and 200 ids (several windows long, block size
   16), scored by `pagedllm score` from the Hugging Face directory and from the GGUF, against
   the float64 numpy forward with the window applied as Hugging Face Transformers' Mistral mask
   (query q sees key k iff q - W < k <= q): max relative error <= 1e-4 per sequence.
   The oracle here is the numpy forward alone: Transformers and torch are not installed in the
   PyPI tier (too heavy), and llama.cpp's loader reads the window key only for architectures
   with sliding-window layers (Gemma 2/3, ...), not for the llama architecture these GGUFs carry
   (from its source; not exercised by this check).
   Negative control: the same weights without the window (make-model without the flag) scored by
   pagedllm differ from the windowed reference by > 1e-2 at the positions past the window, and
   agree within 1e-4 before it (the window is the only difference).
   --only-sliding-window runs this part alone (it needs numpy and safetensors, not llama.cpp).

--perturb shows that the check can fail: llama.cpp gets the tiny model of another seed, and
pagedllm scores every real-model text without its first token (each position then misses one
token of context, at the same position), which (a) and (b) must both catch.
Exits 1 on any failure, naming the sequence and the figures.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

try:
    from safetensors.numpy import load_file
except ImportError as error:  # pragma: no cover - the PyPI tier installs it
    sys.exit(f"check_logits.py needs safetensors ({error})")
try:
    import llama_cpp
    from llama_cpp import Llama
except ImportError:  # only --only-sliding-window runs without it
    llama_cpp = None

MAX_RELATIVE_ERROR = 1e-4
NEGATIVE_CONTROL_MIN = 1e-2
REAL_MIN_AGREEMENT = 0.99
TINY_LENGTHS = (20, 97, 200)
REAL_Q4_SLACK = 0.01
WINDOWS = (16, 37)
WINDOW_LENGTHS = (100, 160, 200)
GGML_TYPE_F32 = 0
LLAMA_FTYPE_ALL_F32 = 0
THREADS = 2


if llama_cpp is not None:
    @llama_cpp.llama_log_callback
    def _quiet_log(level, text, user_data):  # llama.cpp's load messages and warnings off
        del level, text, user_data

    llama_cpp.llama_log_set(_quiet_log, ctypes.c_void_p(0))


# --- sources of logits ---------------------------------------------------------------------------

def pagedllm_logits(pagedllm: str, model: str, sequences: list[list[int]], scratch: Path) -> list[np.ndarray]:
    """`pagedllm score`: [len, vocab] fp32 per sequence."""
    scratch.mkdir(parents=True, exist_ok=True)
    input_path = scratch / "ids.jsonl"
    input_path.write_text("".join(json.dumps({"ids": ids}) + "\n" for ids in sequences))
    output_dir = scratch / "scores"
    subprocess.run([pagedllm, "score", "--model", model, "--input-jsonl", str(input_path),
                    "--output-dir", str(output_dir), "--threads", str(THREADS)],
                   check=True, capture_output=True, text=True)
    index = json.loads((output_dir / "index.json").read_text())
    result = []
    for entry, ids in zip(index, sequences, strict=True):
        logits = np.fromfile(output_dir / entry["file"], dtype="<f4")
        result.append(logits.reshape(len(ids), entry["vocab_size"]))
    return result


def llama_cpp_logits(model: str, sequences: list[list[int]]) -> list[np.ndarray]:
    """llama.cpp: all-position logits, F32 KV cache, no flash attention, fresh cache per sequence."""
    n_ctx = max(256, -(-max(len(ids) for ids in sequences) // 256) * 256)
    llm = Llama(model_path=model, n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx, n_threads=THREADS,
                n_threads_batch=THREADS, logits_all=True, type_k=GGML_TYPE_F32,
                type_v=GGML_TYPE_F32, flash_attn=False, seed=1234, verbose=False)
    result = []
    for ids in sequences:
        llm.reset()  # n_tokens = 0: eval() removes every cached position before it runs
        llm.eval(ids)  # the ids exactly as given: eval adds no BOS
        if llm.n_tokens != len(ids):
            raise RuntimeError(f"llama.cpp evaluated {llm.n_tokens} of {len(ids)} tokens")
        result.append(np.array(llm.scores[:len(ids)], dtype=np.float32, copy=True))
    llm.close()
    return result


def config_sliding_window(config: dict) -> int | None:
    """The window as Transformers reads it: Mistral's sliding_window; Qwen2's only with use_sliding_window."""
    if config.get("model_type") == "mistral":
        return config.get("sliding_window")
    if config.get("model_type") == "qwen2" and config.get("use_sliding_window"):
        return config.get("sliding_window")
    return None


def numpy_logits(directory: Path, sequences: list[list[int]]) -> list[np.ndarray]:
    """A float64 Llama forward from config.json + model.safetensors (Hugging Face semantics).

    A sliding window W (config.json) masks, as Transformers' Mistral mask, every key k with
    k <= q - W for the query at q: each query sees its W most recent positions, itself included.
    """
    config = json.loads((directory / "config.json").read_text())
    window = config_sliding_window(config)
    weights = {name: value.astype(np.float64) for name, value in load_file(str(directory / "model.safetensors")).items()}
    if config.get("rope_scaling") not in (None, {}):
        raise RuntimeError("numpy reference: rope scaling not supported")
    num_heads, num_kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // num_heads
    eps = config["rms_norm_eps"]
    inv_freq = 1.0 / (config["rope_theta"] ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    lm_head = weights["model.embed_tokens.weight"] if config.get("tie_word_embeddings") else weights["lm_head.weight"]

    def rms_norm(x, weight):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight

    def rotary(x, positions):  # x: [tokens, heads, head_dim], rotate-half as transformers
        angles = positions[:, None] * inv_freq[None, :]
        cos = np.concatenate([np.cos(angles)] * 2, axis=-1)[:, None, :]
        sin = np.concatenate([np.sin(angles)] * 2, axis=-1)[:, None, :]
        half = head_dim // 2
        rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
        return x * cos + rotated * sin

    result = []
    for ids in sequences:
        n = len(ids)
        positions = np.arange(n, dtype=np.float64)
        causal = np.triu(np.full((n, n), -np.inf), k=1)
        if window is not None:  # mask keys k <= q - window (the lower band below the window)
            causal += np.tril(np.full((n, n), -np.inf), k=-window)
        h = weights["model.embed_tokens.weight"][ids]
        for layer in range(config["num_hidden_layers"]):
            w = lambda name: weights[f"model.layers.{layer}.{name}.weight"]
            x = rms_norm(h, w("input_layernorm"))
            q = rotary((x @ w("self_attn.q_proj").T).reshape(n, num_heads, head_dim), positions)
            k = rotary((x @ w("self_attn.k_proj").T).reshape(n, num_kv_heads, head_dim), positions)
            v = (x @ w("self_attn.v_proj").T).reshape(n, num_kv_heads, head_dim)
            group = num_heads // num_kv_heads
            k = np.repeat(k, group, axis=1)
            v = np.repeat(v, group, axis=1)
            scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(head_dim) + causal
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probabilities = scores / scores.sum(axis=-1, keepdims=True)
            attended = np.einsum("hqk,khd->qhd", probabilities, v).reshape(n, num_heads * head_dim)
            h = h + attended @ w("self_attn.o_proj").T
            x = rms_norm(h, w("post_attention_layernorm"))
            gate = x @ w("mlp.gate_proj").T
            up = x @ w("mlp.up_proj").T
            h = h + (gate / (1.0 + np.exp(-gate)) * up) @ w("mlp.down_proj").T
        result.append(rms_norm(h, weights["model.norm.weight"]) @ lm_head.T)
    return result


def max_relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    """max over positions of max|a - b| / max|b| (per-position scale)."""
    ours = ours.astype(np.float64)
    reference = reference.astype(np.float64)
    scale = np.abs(reference).max(axis=1)
    return float((np.abs(ours - reference).max(axis=1) / scale).max())


# --- 3. sliding window ----------------------------------------------------------------------------

def check_sliding_window(pagedllm: str, scratch: Path, perturb: bool) -> bool:
    directories = {}
    for window in (None,) + WINDOWS:
        name = f"tiny_window{window}" if window else "tiny_no_window"
        command = [pagedllm, "make-model", "--out", str(scratch / name), "--seed", "0"]
        if window:
            command += ["--sliding-window", str(window)]
        subprocess.run(command, check=True, capture_output=True)
        directories[window] = scratch / name
    vocab = json.loads((directories[None] / "config.json").read_text())["vocab_size"]
    rng = np.random.default_rng(3)
    sequences = [rng.integers(0, vocab, size=length).tolist() for length in WINDOW_LENGTHS]
    unwindowed = pagedllm_logits(pagedllm, str(directories[None]), sequences, scratch / "window_none_pagedllm")

    ok = True
    print(f"sliding window (make-model seed 0, block size 16), against the float64 numpy forward with the "
          f"window mask; limit {MAX_RELATIVE_ERROR:g}, control past the window > {NEGATIVE_CONTROL_MIN:g}:")
    for window in WINDOWS:
        config = json.loads((directories[window] / "config.json").read_text())
        if config_sliding_window(config) != window:
            print(f"  FAIL config.json does not carry sliding_window {window}: {config.get('sliding_window')}")
            ok = False
            continue
        # --perturb: the reference is computed without the window; the check must then fail.
        reference = numpy_logits(directories[None] if perturb else directories[window], sequences)
        for source in ("hf", "gguf"):
            model = directories[window] if source == "hf" else directories[window] / "model.gguf"
            ours = pagedllm_logits(pagedllm, str(model), sequences, scratch / f"window{window}_{source}_pagedllm")
            for index, ids in enumerate(sequences):
                error = max_relative_error(ours[index], reference[index])
                good = error <= MAX_RELATIVE_ERROR
                ok &= good
                print(f"  {'ok  ' if good else 'FAIL'} window {window} {source:4} sequence {index} ({len(ids)} ids): "
                      f"{error:.3e}")
        for index, ids in enumerate(sequences):
            inside = max_relative_error(unwindowed[index][:window], reference[index][:window])
            past = max_relative_error(unwindowed[index][window:], reference[index][window:])
            good = inside <= MAX_RELATIVE_ERROR and past > NEGATIVE_CONTROL_MIN
            ok &= good
            print(f"  {'ok  ' if good else 'FAIL'} control: window {window} sequence {index} scored without the "
                  f"window: positions < {window} {inside:.3e}, positions >= {window} {past:.3e}")
    return ok


# --- 1. tiny model -------------------------------------------------------------------------------

def check_tiny(pagedllm: str, scratch: Path, perturb: bool) -> bool:
    models = {}
    for seed in (0, 1):
        directory = scratch / f"tiny_seed{seed}"
        subprocess.run([pagedllm, "make-model", "--out", str(directory), "--seed", str(seed)],
                       check=True, capture_output=True)
        models[seed] = directory
    vocab = json.loads((models[0] / "config.json").read_text())["vocab_size"]
    rng = np.random.default_rng(0)
    sequences = [rng.integers(0, vocab, size=length).tolist() for length in TINY_LENGTHS]

    ours = pagedllm_logits(pagedllm, str(models[0] / "model.gguf"), sequences, scratch / "tiny_pagedllm")
    llama_seed = 1 if perturb else 0
    theirs = llama_cpp_logits(str(models[llama_seed] / "model.gguf"), sequences)
    reference = numpy_logits(models[0], sequences)
    other_seed = llama_cpp_logits(str(models[1] / "model.gguf"), sequences)

    ok = True
    print(f"tiny model (make-model seed 0, F32 GGUF, vocab {vocab}); max relative error = max over positions "
          f"of max|a-b| / max|b|, a = pagedllm, limit {MAX_RELATIVE_ERROR:g}:")
    for index, ids in enumerate(sequences):
        vs_llama = max_relative_error(ours[index], theirs[index])
        vs_numpy = max_relative_error(ours[index], reference[index])
        llama_vs_numpy = max_relative_error(theirs[index], reference[index])
        control = max_relative_error(ours[index], other_seed[index])
        good = vs_llama <= MAX_RELATIVE_ERROR and vs_numpy <= MAX_RELATIVE_ERROR
        control_good = control > NEGATIVE_CONTROL_MIN
        ok &= good and control_good
        label = f"seed-{llama_seed} model" if perturb else "llama.cpp"
        print(f"  {'ok  ' if good and control_good else 'FAIL'} sequence {index} ({len(ids)} ids): "
              f"vs {label} {vs_llama:.3e}, vs numpy fp64 {vs_numpy:.3e} "
              f"(llama.cpp vs numpy {llama_vs_numpy:.3e}); negative control (llama.cpp, seed-1 model) "
              f"{control:.3e} {'> ' if control_good else 'NOT > '}{NEGATIVE_CONTROL_MIN:g}")
        if not good:
            worst = int(np.argmax(np.abs(ours[index] - theirs[index]).max(axis=1)))
            print(f"       worst position vs llama.cpp: {worst}; pagedllm {ours[index][worst][:4]}..., "
                  f"llama.cpp {theirs[index][worst][:4]}...")
    return ok


# --- 2. real model -------------------------------------------------------------------------------

PROSE = """\
The lighthouse at the end of the breakwater was built in 1868, when the harbour was still the busiest \
on that stretch of coast. Its first keeper, a former ship's carpenter named Thomas Avery, kept a log in \
which he wrote down the weather twice a day, the ships that passed, and, now and then, a line about his \
own life: a daughter born in the spring of 1871, a winter so cold that the oil thickened in the lamps, \
a storm in which the sea came over the gallery and put out the light for the only time in forty years.

Reading the log today, one is struck less by the drama than by the routine. The lamp had to be lit at \
sunset and put out at sunrise; the wicks had to be trimmed every four hours; the lens, a great beehive \
of glass prisms made in Paris, had to be polished every morning so that the salt and the soot would not \
dim it. None of this was difficult, but all of it had to be done every day, whatever the weather and \
whatever the keeper's mood, because a ship that could not see the light could not find the channel.

When electricity came to the harbour in 1923, the lamp was replaced by a bulb and the clockwork that \
turned the lens by a small motor. The keepers stayed for another thirty years, but their work changed. \
They no longer fought the dark with oil and patience; they watched a machine and called an engineer when \
it failed. The last keeper left in 1954, and the light has run on its own ever since, checked twice a \
year by a technician who drives out from the city.

What was lost is hard to name. Nobody misses trimming wicks at three in the morning. Yet the old log \
records a kind of attention that no sensor provides: the keeper noticed that the gulls came inland before \
a gale, that the fishing boats stayed in when the swell ran from the south-west, that a certain schooner \
always passed on Tuesdays. That knowledge lived in one person and left with him. The lighthouse still \
works perfectly. It simply no longer knows anything about the sea it stands beside, and perhaps it \
never needed to.
"""

PYTHON = '''\
"""A small least-recently-used cache with per-entry expiry, and its tests."""
from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Generic, Hashable, Optional, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass
class Entry(Generic[V]):
    value: V
    expires_at: float


@dataclass
class LruCache(Generic[K, V]):
    capacity: int
    ttl_seconds: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _entries: "OrderedDict[K, Entry[V]]" = field(default_factory=OrderedDict)
    hits: int = 0
    misses: int = 0

    def get(self, key: K) -> Optional[V]:
        entry = self._entries.get(key)
        if entry is None or entry.expires_at <= self.clock():
            if entry is not None:
                del self._entries[key]
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry.value

    def put(self, key: K, value: V) -> None:
        if key in self._entries:
            self._entries.move_to_end(key)
        self._entries[key] = Entry(value, self.clock() + self.ttl_seconds)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)


def test_evicts_least_recently_used():
    cache = LruCache[str, int](capacity=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recent
    cache.put("c", 3)
    assert cache.get("b") is None
    assert cache.get("a") == 1 and cache.get("c") == 3

'''

CPP = """\
// A fixed-capacity ring buffer for one producer and one consumer thread.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <optional>
#include <utility>

namespace demo {

template <typename T, std::size_t Capacity>
class SpscRing {
  static_assert(Capacity >= 2 && (Capacity & (Capacity - 1)) == 0, "Capacity must be a power of two");

 public:
  // Producer side: false when the ring is full.
  bool push(T value) {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_cache_ == Capacity) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head - tail_cache_ == Capacity) return false;
    }
    items_[head & (Capacity - 1)] = std::move(value);
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Consumer side: nothing when the ring is empty.
  std::optional<T> pop() {
    const std::size_t tail = tail_.load(std::memory_order_relaxed);
    if (tail == head_cache_) {
      head_cache_ = head_.load(std::memory_order_acquire);
      if (tail == head_cache_) return std::nullopt;
    }
    std::optional<T> result(std::move(items_[tail & (Capacity - 1)]));
    tail_.store(tail + 1, std::memory_order_release);
    return result;
  }

 private:
  static constexpr std::size_t kLine = 64;  // keep the two sides on separate cache lines
  alignas(kLine) std::atomic<std::size_t> head_{0};
  alignas(kLine) std::size_t tail_cache_ = 0;   // producer's view of tail_
  alignas(kLine) std::atomic<std::size_t> tail_{0};
  alignas(kLine) std::size_t head_cache_ = 0;   // consumer's view of head_
  std::array<T, Capacity> items_{};
};

}  // namespace demo
"""

NOTE = """\
# Release notes, version 2.4.0 (2026-03-14)

## Performance
- Cold start of the ingestion service fell from 3.8 s to 1.2 s (p50) and from 9.1 s to 2.7 s (p99) \
on the reference machine (8 vCPUs, 32 GiB), mostly by loading the schema registry lazily.
- Batch writes now group rows by partition before compression: 41% fewer bytes on disk for the \
nightly export (1.92 TB instead of 3.26 TB) and 27% less time spent in zstd level 6.
- The query planner estimates join sizes from HyperLogLog sketches with 2^14 registers \
(relative error about 0.8%) instead of sampling 10,000 rows.

## Fixes
1. Timestamps before 1970-01-01 were rounded towards zero instead of down, so -1.5 s became -1 s; \
they now round down, as ISO 8601 and the SQL standard require.
2. A retry after HTTP 429 ignored the Retry-After header when it held a date rather than seconds \
(e.g. "Wed, 21 Oct 2026 07:28:00 GMT").
3. The CSV reader accepted a quote inside an unquoted field ("12"x,34); it now reports line and column.
4. Memory limits given as "1.5GiB" were parsed as 1 GiB; fractional sizes are now exact to the byte \
(1.5 GiB = 1,610,612,736 bytes).

## Upgrade
Run `migrate --from 2.3 --to 2.4 --dry-run` first: it lists the 3 tables whose indexes are rebuilt \
(about 12 minutes per 100 million rows at 4 workers). Configuration keys `cache.size_mb` and \
`cache.ttl` are deprecated in favour of `cache.size` (with units: 512MiB, 2GiB) and `cache.ttl` in \
ISO 8601 durations (PT30S, PT5M). The old keys still work and print a warning; they will be removed \
in 3.0.

"""

CHAT = [
    {"role": "system", "content": "You are a patient tutor who explains things step by step."},
    {"role": "user", "content": "Can you explain why the sky is blue? I have read something about "
                                 "scattering but I do not really understand it."},
    {"role": "assistant", "content": "Sure. Sunlight looks white, but it is a mixture of all the "
     "colours, from red (long waves, about 700 nanometres) to violet (short waves, about 400 "
     "nanometres). When this light crosses the atmosphere it meets molecules of nitrogen and oxygen "
     "that are much smaller than its wavelength. Such small particles scatter light in all "
     "directions, and they scatter short waves far more than long ones: the strength goes as one over "
     "the wavelength to the fourth power. Blue light is therefore scattered about five times more than "
     "red light. When you look at any part of the sky away from the Sun, what reaches your eyes is "
     "this scattered light, and it is dominated by blue. That is Rayleigh scattering."},
    {"role": "user", "content": "Then why is it not violet, if violet has an even shorter wavelength?"},
    {"role": "assistant", "content": "Good question. There are three reasons. First, the Sun emits "
     "less violet than blue. Second, some violet is absorbed high in the atmosphere. Third, and most "
     "important, our eyes are much less sensitive to violet: the cones that respond to short "
     "wavelengths peak in the blue, and the mixture of scattered colours that reaches us excites our "
     "three kinds of cones in a way the brain reads as sky blue."},
    {"role": "user", "content": "So at sunset the light simply travels through more air?"},
    {"role": "assistant", "content": "Exactly. Near the horizon, sunlight crosses up to forty times "
     "more atmosphere than at noon. Along that long path most of the blue is scattered away to the "
     "sides, towards other people, and what is left in the direct beam is the yellow, orange and red "
     "part of the spectrum. Dust, smoke and droplets make the effect stronger, which is why sunsets "
     "after a volcanic eruption or a forest fire can be especially vivid."},
    {"role": "user", "content": "Please also say why clouds are white, and whether the sky on Mars "
     "is a different colour, in a short list."},
]


def real_sequences(pagedllm: str, model: str, scratch: Path) -> list[tuple[str, list[int]]]:
    messages_path = scratch / "chat.json"
    messages_path.write_text(json.dumps(CHAT))
    chat_text = subprocess.run([pagedllm, "chat-template", "--gguf", model, "--messages-json", str(messages_path)],
                               check=True, capture_output=True, text=True).stdout
    texts = [("prose", PROSE), ("python", PYTHON), ("c++", CPP), ("notes", NOTE), ("chat", chat_text)]
    lines = "".join(json.dumps({"text": text}) + "\n" for _, text in texts)
    result = subprocess.run([pagedllm, "tokenize", "--tokenizer", model, "--input-jsonl", "-"],
                            input=lines, check=True, capture_output=True, text=True)
    ids = [json.loads(line)["ids"] for line in result.stdout.splitlines()]
    return [(name, sequence) for (name, _), sequence in zip(texts, ids, strict=True)]


def llama_cpp_dequantize_to_f32(model: str, output: Path) -> None:
    """llama.cpp's own quantize tool, target ALL_F32: every tensor dequantized by ggml."""
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = LLAMA_FTYPE_ALL_F32
    params.allow_requantize = True
    params.nthread = THREADS
    status = llama_cpp.llama_model_quantize(model.encode(), str(output).encode(), ctypes.byref(params))
    if status != 0:
        raise RuntimeError(f"llama_model_quantize({model} -> F32) returned {status}")


def top1_agreement(a: np.ndarray, b: np.ndarray) -> int:
    return int((a.argmax(axis=1) == b.argmax(axis=1)).sum())


def check_real(pagedllm: str, model: str, scratch: Path, perturb: bool) -> bool:
    named = real_sequences(pagedllm, model, scratch)
    sequences = [ids for _, ids in named]
    seconds = {}
    start = time.monotonic()
    if perturb:  # drop the first token: position p then sees ids[1:p + 1] (row 0 stays as is)
        ours = [np.concatenate([logits[:1], logits]) for logits in
                pagedllm_logits(pagedllm, model, [ids[1:] for ids in sequences], scratch / "real_pagedllm")]
    else:
        ours = pagedllm_logits(pagedllm, model, sequences, scratch / "real_pagedllm")
    seconds["pagedllm"] = time.monotonic() - start
    start = time.monotonic()
    f32_model = scratch / "real_f32.gguf"
    llama_cpp_dequantize_to_f32(model, f32_model)
    exact = llama_cpp_logits(str(f32_model), sequences)
    f32_model.unlink()
    seconds["llama.cpp F32"] = time.monotonic() - start
    start = time.monotonic()
    quantized = llama_cpp_logits(model, sequences)
    seconds["llama.cpp Q4_1"] = time.monotonic() - start

    print(f"real model {Path(model).name}, {len(sequences)} texts:")
    print(f"  a) vs llama.cpp on the same weights dequantized to F32 by llama.cpp (llama_model_quantize, "
          f"ALL_F32): max relative error limit {MAX_RELATIVE_ERROR:g}, top-1 agreement limit {REAL_MIN_AGREEMENT:.0%}")
    ok = True
    total = sum(len(ids) for ids in sequences)
    agree_exact = 0
    for (name, ids), a, b in zip(named, ours, exact, strict=True):
        error = max_relative_error(a, b)
        agree = top1_agreement(a, b)
        agree_exact += agree
        good = error <= MAX_RELATIVE_ERROR and len(ids) >= 100
        ok &= good
        print(f"     {'ok  ' if good else 'FAIL'} {name:7s} {len(ids):4d} positions: max relative error "
              f"{error:.3e}, top-1 agreement {agree / len(ids):7.2%}, max |logit difference| "
              f"{np.abs(a - b).max():.2e}")
    good = agree_exact / total >= REAL_MIN_AGREEMENT
    ok &= good
    print(f"     {'ok  ' if good else 'FAIL'} all: {agree_exact}/{total} positions agree "
          f"({agree_exact / total:.2%}, limit {REAL_MIN_AGREEMENT:.0%})")

    # b) The Q4_1 file as llama.cpp runs it: Q4_1 weights times Q8_1-quantized activations, which
    # moves logits by ~0.15 on average and flips the top token where the top two are close.
    # llama.cpp's own F32 run is the yardstick: pagedllm must agree with the quantized run as often
    # as llama.cpp's exact run does (within REAL_Q4_SLACK).
    agree_ours = sum(top1_agreement(a, q) for a, q in zip(ours, quantized))
    agree_theirs = sum(top1_agreement(b, q) for b, q in zip(exact, quantized))
    difference = np.concatenate([np.abs(a.astype(np.float64) - q).ravel() for a, q in zip(ours, quantized)])
    good = agree_ours / total >= agree_theirs / total - REAL_Q4_SLACK
    ok &= good
    print(f"  b) vs llama.cpp on the Q4_1 file (Q8 activations): top-1 agreement {agree_ours}/{total} "
          f"({agree_ours / total:.2%}); llama.cpp F32 vs llama.cpp Q4_1: {agree_theirs}/{total} "
          f"({agree_theirs / total:.2%})")
    print(f"     {'ok  ' if good else 'FAIL'} pagedllm's agreement >= llama.cpp F32's - {REAL_Q4_SLACK * 100:.0f} point; "
          f"|logit difference| mean {difference.mean():.4f}, max {difference.max():.3f} (for information)")
    print("  time: " + ", ".join(f"{key} {value:.1f} s" for key, value in seconds.items()))
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pagedllm", required=True, help="the pagedllm binary")
    parser.add_argument("--model", help="also check top-1 agreement on this real GGUF model")
    parser.add_argument("--perturb", action="store_true", help="compare against wrong inputs: must FAIL")
    parser.add_argument("--keep", help="keep models, ids and scores in this directory")
    parser.add_argument("--only-sliding-window", action="store_true",
                        help="run only the sliding-window check (numpy reference; no llama.cpp needed)")
    args = parser.parse_args()
    if llama_cpp is None and not args.only_sliding_window:
        sys.exit("check_logits.py needs llama-cpp-python (or --only-sliding-window)")
    versions = f"llama-cpp-python {llama_cpp.__version__}, " if llama_cpp is not None else ""
    print(f"{versions}numpy {np.__version__}, {THREADS} threads")
    with tempfile.TemporaryDirectory(prefix="check_logits_") as scratch_name:
        scratch = Path(args.keep) if args.keep else Path(scratch_name)
        scratch.mkdir(parents=True, exist_ok=True)
        ok = True
        if not args.only_sliding_window:
            ok &= check_tiny(args.pagedllm, scratch, args.perturb)
            if args.model:
                ok &= check_real(args.pagedllm, args.model, scratch, args.perturb)
        ok &= check_sliding_window(args.pagedllm, scratch, args.perturb)
    print("check_logits: all checks passed" if ok else "check_logits: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
