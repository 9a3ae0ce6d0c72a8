#!/usr/bin/env python3
"""Cross-check `pagedllm tokenize` against Hugging Face `tokenizers`, id for id and text for text.

    python tests/pypi/check_tokenizer.py --pagedllm build/release/pagedllm [--gguf MODEL.gguf]

1. Trains byte-level BPE tokenizers with `tokenizers` itself (BpeTrainer on a generated corpus)
   in several layouts: Llama 3 (Split pattern + ByteLevel without regex, BOS template,
   ignore_merges), GPT-2 (ByteLevel with its regex), SmolLM2 (Digits + ByteLevel) with added
   tokens that use lstrip / rstrip / single_word / normalized, ByteLevel with add_prefix_space,
   Qwen2 (NFC + its pattern) and a mix of Split behaviors. Each is saved as tokenizer.json and
   `pagedllm tokenize --input-jsonl` must give the library's ids for every text of a varied
   corpus (prose, code, numbers, whitespace runs, emoji, CJK, mixed scripts, special tokens in
   the text) and ~1,500 random strings: with special tokens parsed and the template applied,
   with special tokens as text (--no-special), and without the template (--no-add-special).
   Random id sequences (many of them broken UTF-8) must decode to the library's text, with and
   without skip_special_tokens.
2. With --gguf: the GGUF vocabulary, exported with --export-tokenizer-json and loaded by the
   library, and also rebuilt independently from gguf-py's reading of the file (tokens, merges,
   token types, and the pre-tokenizer HF's tokenizer.json uses for that tokenizer.ggml.pre),
   must give pagedllm's ids (read from the GGUF) over the same corpus; decoding is compared on
   sequences of tokens whose bytes are broken UTF-8.

Prints one line per tokenizer with counts; exits 1 at the first mismatch, showing the text and
both id lists.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, processors
    from tokenizers import pre_tokenizers as pt
    from tokenizers import trainers
except ImportError:  # pragma: no cover - the PyPI tier installs it
    sys.exit("check_tokenizer.py needs the `tokenizers` package (pip install tokenizers)")

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
         r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|endoftext|>", "<|begin_of_text|>", "<|im_start|>", "<|im_end|>", "<|caf\u00e9|>"]


class Mismatch(Exception):
    pass


# --- corpus --------------------------------------------------------------------------------------

CURATED = [
    "The quick brown fox jumps over the lazy dog.",
    "It's a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife. I'M SURE THEY'LL SAY IT'S FINE; we'd've known.",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "#include <vector>\nint main() { std::vector<int> v{1, 2, 3}; return v.size() > 2 ? 0 : 1; }\n",
    '{"name": "pagedllm", "blocks": [16, 32, 64], "ok": true, "ratio": 0.75}',
    "Numbers: 0 7 42 123 1234 12345 123456789 3.14159 -2.5e-10 1,000,000 0x1F 007",
    "Runs:   three spaces,\t\ttwo tabs,\n\n\ntwo blank lines,    \n  trailing   ",
    "  leading spaces", "trailing spaces   ", " ", "\n", "\t", "\r\n", "\r\r\n\n", "", "a",
    "Emoji: \U0001F600\U0001F44D\U0001F3FD \U0001F468\u200d\U0001F469\u200d\U0001F467 \u2764\ufe0f flags \U0001F1EB\U0001F1F7!",
    "\u4e2d\u6587\u5b57\u7b26\u6d4b\u8bd5\uff0c\u597d\u7684\u3002\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3002\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8",
    "Mixed: \u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440, \u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645, \u05e9\u05dc\u05d5\u05dd, \u0928\u092e\u0938\u094d\u0924\u0947, \u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35, caf\u00e9 na\u00efve",
    "Combining: e\u0301 versus \u00e9, A\u030a versus \u00c5, \u1e9b\u0323",
    "Odd spaces: a\u00a0b\u2009c\u3000d\u2028e\u2029f\x85g\u180eh\u200bi\ufeffj",
    "Controls: \x00\x01\x1b[31mred\x1b[0m \x7f",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more<|begin_of_text|><|begin_of_text|> spaced <|im_end|>end",
    "<|im_start <|im_end| |im_start|> <<|endoftext|>> <|caf\u00e9|> <|cafe|>",
    "Added: a <tool>  b\n<tool>\tc pagedllm is pagedllms and (pagedllm) ok okay ok. zq zqx xzq zq\u00bd \u00e9zq zq_",
    "Punctuation!!! (really?) ... --- ;;; ::: \"quoted\" 'single' `tick` @user #tag $5 %d ^ & *",
    "URLs: https://example.com/path?q=1&r=two#frag, mail me@example.org",
    "Contractions: don't won't I've you're she'd we'll it's DON'T WON'T I'VE YOU'RE",
    "x" * 300, " " * 100 + "y", "\n" * 50, "ab" * 200, "1234567890" * 20,
]

FRAGMENTS = [
    "the", " the", "The", "a", " of", "and", "ing", "tion", "x", "Q", "7", "42", "123", "3.14",
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r", "\r\n", ".", ",", "!", "?", "'s", "'LL", "'", '"', "(",
    ")", "{", "}", "[", "]", "<", ">", "|", "-", "--", "_", "=", "+", "/", "\\", "#", "@", "$",
    "\u00e9", "e\u0301", "\u00c5", "\u00f1", "\u00df", "\u00a0", "\x85", "\u2028", "\u3000",
    "\u180e", "\u200b", "\ufeff", "\U0001F600", "\U0001F44D\U0001F3FD", "\u2764\ufe0f", "\u200d",
    "\u4e2d", "\u6587", "\u3002", "\uff0c", "\u65e5\u672c", "\ud55c", "\u0645\u0631\u062d\u0628\u0627",
    "\u05e9", "\u041f\u0440\u0438", "\u0928\u092e", "\u0e2a\u0e27", "\u0663\u0664", "\u00bd", "\u2167",
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|caf\u00e9|>", "<|im",
]
# The added tokens of some tokenizers below ("pagedllm" is also learned: an added token that is
# a vocabulary token too); the others stay out of the training text.
ADDED_FRAGMENTS = ["<tool>", "pagedllm", "zq", "ok"]


def random_texts(rng: random.Random, count: int, fragments: list[str] = FRAGMENTS + ADDED_FRAGMENTS) -> list[str]:
    texts = []
    for _ in range(count):
        texts.append("".join(rng.choice(fragments) for _ in range(rng.randint(0, 40))))
    return texts


def training_lines(rng: random.Random) -> list[str]:
    lines = [text for text in CURATED for _ in range(3)]
    words = ["paged", "attention", "block", "cache", "token", "the", "of", "and", "serving", "model",
             "prefix", "scheduler", "request", "sequence", "decode", "prompt", "GPU", "memory"]
    for _ in range(3000):
        lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 15))) +
                     rng.choice([".", "!", "?", ",", "\n", " 2024", " 3.5", ""]))
    lines += random_texts(rng, 500, FRAGMENTS + ["pagedllm"])
    return lines


# --- the two sides ---------------------------------------------------------------------------------

def run_pagedllm(pagedllm: str, tokenizer_path: str, requests: list[dict], flags: list[str]) -> list:
    payload = "".join(json.dumps(request) + "\n" for request in requests)
    result = subprocess.run([pagedllm, "tokenize", "--tokenizer", tokenizer_path, "--input-jsonl", "-", *flags],
                            input=payload.encode("utf-8"), capture_output=True)
    if result.returncode != 0:
        raise RuntimeError(f"pagedllm tokenize {' '.join(flags)} failed: {result.stderr.decode(errors='replace')}")
    # Split on "\n" only: the JSON may hold U+2028 or U+0085 unescaped, which splitlines() splits on.
    lines = result.stdout.decode("utf-8").split("\n")[:-1]
    if len(lines) != len(requests):
        raise RuntimeError(f"pagedllm tokenize printed {len(lines)} lines for {len(requests)} requests")
    return [json.loads(line) for line in lines]


def compare_encode(name: str, pagedllm: str, path: str, reference: Tokenizer, texts: list[str]) -> int:
    """Ids for every text in three modes; returns the number of comparisons."""
    requests = [{"text": text} for text in texts]
    compared = 0
    for flags, add_special, encode_special in (([], True, False), (["--no-special"], True, True),
                                               (["--no-add-special"], False, False)):
        reference.encode_special_tokens = encode_special
        expected = [encoding.ids for encoding in reference.encode_batch(texts, add_special_tokens=add_special)]
        reference.encode_special_tokens = False
        ours = [answer["ids"] for answer in run_pagedllm(pagedllm, path, requests, flags)]
        for text, mine, theirs in zip(texts, ours, expected):
            if mine != theirs:
                raise Mismatch(f"{name}: encode {flags or 'default'} differs for {text!r}\n"
                               f"  pagedllm:   {mine}\n  tokenizers: {theirs}")
        compared += len(texts)
    return compared


def compare_decode(name: str, pagedllm: str, path: str, reference: Tokenizer, id_lists: list[list[int]]) -> tuple[int, int]:
    """Text for every id list, with and without skipping special tokens; returns (count, lossy)."""
    requests = [{"ids": ids} for ids in id_lists]
    lossy = 0
    for flags, skip in (([], False), (["--no-special"], True)):
        expected = reference.decode_batch(id_lists, skip_special_tokens=skip)
        ours = [answer["text"] for answer in run_pagedllm(pagedllm, path, requests, ["--decode", *flags])]
        for ids, mine, theirs in zip(id_lists, ours, expected):
            if mine != theirs:
                raise Mismatch(f"{name}: decode (skip_special_tokens={skip}) differs for {ids}\n"
                               f"  pagedllm:   {mine!r}\n  tokenizers: {theirs!r}")
            lossy += "\ufffd" in theirs
    return 2 * len(id_lists), lossy


def byte_decoder() -> dict[str, int]:
    """GPT-2's bytes_to_unicode, inverted (written here, independently of pagedllm)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars = {byte: chr(byte) for byte in printable}
    extra = 0
    for byte in range(256):
        if byte not in chars:
            chars[byte] = chr(256 + extra)
            extra += 1
    return {char: byte for byte, char in chars.items()}


def broken_utf8_ids(tokenizer: Tokenizer) -> list[int]:
    """Ids whose bytes are not valid UTF-8 by themselves (parts of multi-byte characters)."""
    decoder = byte_decoder()
    broken = []
    for token, token_id in tokenizer.get_vocab(with_added_tokens=False).items():
        if all(char in decoder for char in token):
            try:
                bytes(decoder[char] for char in token).decode("utf-8")
            except UnicodeDecodeError:
                broken.append(token_id)
    return sorted(broken)


def random_id_lists(rng: random.Random, tokenizer: Tokenizer, count: int) -> list[list[int]]:
    broken = broken_utf8_ids(tokenizer)
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    special = sorted(token_id for token_id, token in tokenizer.get_added_tokens_decoder().items())
    lists = []
    for _ in range(count):
        ids = []
        for _ in range(rng.randint(0, 12)):
            pool = rng.random()
            if pool < 0.45 and broken:
                ids.append(rng.choice(broken))
            elif pool < 0.55 and special:
                ids.append(rng.choice(special))
            else:
                ids.append(rng.randrange(size))
        lists.append(ids)
    return lists


# --- part 1: tokenizers trained by the library -------------------------------------------------------

def train(lines: list[str], pre_tokenizer, *, vocab_size: int = 1200, normalizer=None, post_processor=None,
          added: tuple = (), ignore_merges: bool = False) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pt.ByteLevel.alphabet())
    tokenizer.train_from_iterator(lines, trainer)
    if added:
        tokenizer.add_tokens(list(added))
    if post_processor is not None:
        tokenizer.post_processor = post_processor
    if ignore_merges:
        document = json.loads(tokenizer.to_str())
        document["model"]["ignore_merges"] = True
        tokenizer = Tokenizer.from_str(json.dumps(document))
    return tokenizer


def library_tokenizers(lines: list[str]) -> dict[str, Tokenizer]:
    bos = processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|>:1 $B:1",
                                        special_tokens=[("<|begin_of_text|>", SPECIALS.index("<|begin_of_text|>"))])
    added = (AddedToken("<tool>", lstrip=True, rstrip=True, normalized=False),
             AddedToken("pagedllm", single_word=True, normalized=False),
             AddedToken("zq", single_word=True, normalized=False),
             AddedToken("ok", normalized=True))
    return {
        "llama3 layout (Split + ByteLevel, BOS template, ignore_merges)": train(
            lines, pt.Sequence([pt.Split(Regex(LLAMA3), behavior="isolated"),
                                pt.ByteLevel(add_prefix_space=False, use_regex=False)]),
            post_processor=processors.Sequence([processors.ByteLevel(trim_offsets=False), bos]), ignore_merges=True),
        "gpt2 layout (ByteLevel with its regex)": train(
            lines, pt.ByteLevel(add_prefix_space=False), post_processor=processors.ByteLevel(trim_offsets=False)),
        "smollm layout (Digits + ByteLevel, added tokens with flags)": train(
            lines, pt.Sequence([pt.Digits(individual_digits=True), pt.ByteLevel(add_prefix_space=False)]), added=added),
        "ByteLevel add_prefix_space after Digits runs": train(
            lines, pt.Sequence([pt.Digits(individual_digits=False), pt.ByteLevel(add_prefix_space=True)])),
        "qwen2 layout (NFC + Split + ByteLevel)": train(
            lines, pt.Sequence([pt.Split(Regex(QWEN2), behavior="isolated"),
                                pt.ByteLevel(add_prefix_space=False, use_regex=False)]), normalizer=normalizers.NFC(),
            added=added),
        "Split behaviors (merged_with_next, removed, contiguous, invert)": train(
            lines, pt.Sequence([pt.Split(Regex(r"\s+"), behavior="merged_with_next"),
                                pt.Split("--", behavior="removed"),
                                pt.Split(Regex(r"[,;.]+"), behavior="contiguous"),
                                pt.Split(Regex(r"\p{L}+"), behavior="merged_with_previous", invert=True),
                                pt.ByteLevel(add_prefix_space=False, use_regex=True)])),
    }


def check_library_tokenizers(pagedllm: str, texts: list[str], rng: random.Random, workdir: Path) -> None:
    for index, (name, reference) in enumerate(library_tokenizers(training_lines(rng)).items()):
        path = workdir / f"trained_{index}.json"
        reference.save(str(path))
        try:
            encoded = compare_encode(name, pagedllm, str(path), reference, texts)
        except RuntimeError as error:
            if "NFC" in str(error) and "ICU" in str(error):
                print(f"SKIPPED {name}: this pagedllm build has no NFC (built without ICU)")
                continue
            raise
        decoded, lossy = compare_decode(name, pagedllm, str(path), reference, random_id_lists(rng, reference, 400))
        print(f"ok  {name}: {reference.get_vocab_size()} tokens; {encoded} encodes and {decoded} decodes "
              f"({lossy} with U+FFFD) identical")


# --- part 2: a GGUF vocabulary -----------------------------------------------------------------------

# The pre-tokenizers of HF's tokenizer.json for the tokenizer.ggml.pre names pagedllm knows.
GGUF_PRE = {
    "gpt2": lambda: pt.ByteLevel(add_prefix_space=False),
    "smollm": lambda: pt.Sequence([pt.Digits(individual_digits=True), pt.ByteLevel(add_prefix_space=False)]),
    "llama-bpe": lambda: pt.Sequence([pt.Split(Regex(LLAMA3), behavior="isolated"),
                                      pt.ByteLevel(add_prefix_space=False, use_regex=False)]),
    "qwen2": lambda: pt.Sequence([pt.Split(Regex(QWEN2), behavior="isolated"),
                                  pt.ByteLevel(add_prefix_space=False, use_regex=False)]),
}


def gguf_reference(path: str) -> Tokenizer:
    """The GGUF's vocabulary as a HF tokenizer, built from gguf-py's reading of the file."""
    try:
        import gguf
    except ImportError:
        sys.exit("check_tokenizer.py --gguf needs the `gguf` package (pip install gguf)")
    reader = gguf.GGUFReader(path)

    def field(key: str):
        value = reader.get_field(key)
        return None if value is None else value.contents()

    if field("tokenizer.ggml.model") != "gpt2":
        raise RuntimeError(f"{path}: not a byte-level BPE vocabulary")
    pre = field("tokenizer.ggml.pre") or "default"
    if pre not in GGUF_PRE:
        raise RuntimeError(f"{path}: no reference pre-tokenizer for tokenizer.ggml.pre '{pre}'")
    tokens = field("tokenizer.ggml.tokens")
    types = field("tokenizer.ggml.token_type") or [1] * len(tokens)
    merges = [tuple(merge.split(" ")) for merge in field("tokenizer.ggml.merges")]
    tokenizer = Tokenizer(models.BPE(vocab={token: i for i, token in enumerate(tokens)}, merges=merges,
                                     ignore_merges=pre == "llama-bpe"))
    tokenizer.pre_tokenizer = GGUF_PRE[pre]()
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False)
                                  for i, kind in enumerate(types) if kind in (2, 3)])
    tokenizer.add_tokens([AddedToken(tokens[i], normalized=False) for i, kind in enumerate(types) if kind == 4])
    if field("tokenizer.ggml.add_bos_token") if field("tokenizer.ggml.add_bos_token") is not None else pre == "llama-bpe":
        bos = tokens[field("tokenizer.ggml.bos_token_id")]
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", special_tokens=[(bos, field("tokenizer.ggml.bos_token_id"))])
    return tokenizer


def check_gguf(pagedllm: str, gguf_path: str, texts: list[str], rng: random.Random, workdir: Path) -> None:
    exported_path = workdir / "exported_tokenizer.json"
    result = subprocess.run([pagedllm, "tokenize", "--tokenizer", gguf_path, "--export-tokenizer-json",
                             str(exported_path)], capture_output=True)
    if result.returncode != 0:
        raise RuntimeError(f"pagedllm tokenize --export-tokenizer-json failed: {result.stderr.decode(errors='replace')}")
    references = {
        "GGUF exported by pagedllm, loaded by tokenizers": Tokenizer.from_file(str(exported_path)),
        "GGUF rebuilt from gguf-py's reading": gguf_reference(gguf_path),
    }
    id_lists = random_id_lists(rng, references["GGUF rebuilt from gguf-py's reading"], 1500)
    for name, reference in references.items():
        encoded = compare_encode(name, pagedllm, gguf_path, reference, texts)
        decoded, lossy = compare_decode(name, pagedllm, gguf_path, reference, id_lists)
        print(f"ok  {name}: {reference.get_vocab_size()} tokens; {encoded} encodes and {decoded} decodes "
              f"({lossy} with U+FFFD) identical")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pagedllm", required=True, help="the pagedllm binary")
    parser.add_argument("--gguf", help="a GGUF model whose vocabulary to check as well")
    parser.add_argument("--seed", type=int, default=20240611)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    texts = CURATED + random_texts(rng, 1500)
    try:
        with tempfile.TemporaryDirectory(prefix="check_tokenizer_") as workdir:
            check_library_tokenizers(args.pagedllm, texts, rng, Path(workdir))
            if args.gguf:
                check_gguf(args.pagedllm, args.gguf, texts, rng, Path(workdir))
    except Mismatch as mismatch:
        print(f"MISMATCH {mismatch}")
        return 1
    print(f"check_tokenizer: all identical ({len(texts)} texts per tokenizer and mode)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
