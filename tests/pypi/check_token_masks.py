#!/usr/bin/env python3
"""pagedllm's structured-outputs token masks against llguidance's (Microsoft's constrained-decoding
engine, an independent implementation, from PyPI): the same constraint over the same vocabulary
must allow the same tokens at every step.

For each constraint (hand-written regexes, JSON schemas and GBNF grammars, then randomly
generated schemas) the script walks random token paths with llguidance's masks, records
llguidance's mask before every token, asks `pagedllm token-masks` for its own along the same
paths, and compares them bit for bit (the end-of-sequence token included: both allow it exactly
where the text is a whole match).
Then accept/reject: JSON values generated for each schema, and mutations of them, tokenized, must
be accepted by both or refused by both at the same token.

JSON layout: pagedllm's disable_any_whitespace and llguidance's whitespace_flexible=false with
json.dumps' separators (", " and ": "), and llguidance's general \\uXXXX escapes on: the one layout
both engines define the same way. Regexes use ASCII classes ([0-9], not \\d, which is Unicode in
llguidance and ASCII in pagedllm and XGrammar).

Over the tiny model's vocabulary (`make-model`) with a few hundred constraints, and over the real
model's (SmolLM2's 49k tokens, given with --gguf) with fewer. Both engines read the same
tokenizer.json, which pagedllm exports from the model.

    check_token_masks.py --pagedllm BINARY [--gguf REAL_MODEL.gguf] [--random N] [--seed S]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

import llguidance
import numpy
from llguidance.gbnf_to_lark import gbnf_to_lark

FAILURES = []

REGEXES = [
    r"[0-9]{3}-[a-z]{2,4}",
    r"(yes|no|maybe)",
    r"[A-Z][a-z]+ [A-Z][a-z]+",
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}",
    r"(ab|a)*c",
    r"[^\n]{0,12}\n",
    r"(0|[1-9][0-9]*)(\.[0-9]{1,2})?",
    r"[a-f0-9]{8}(-[a-f0-9]{4}){3}-[a-f0-9]{12}",
    r"(The|A) (cat|dog) (sat|ran)\.",
    r"[ -~]{1,20}",
]

# GBNF grammars, recursive most of them, handed to llguidance through its own GBNF-to-Lark converter.
# llguidance lexes a Lark grammar's terminals before it parses, so each grammar here ends every
# multi-character terminal where the next one cannot continue it: then the lexed language is the
# context-free one that pagedllm's pushdown automaton matches.
GRAMMARS = [
    r"""root ::= expr
expr ::= term ([-+*] term)*
term ::= [0-9]{1,3} | "(" expr ")"
""",
    r"""root ::= value
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" (pair ("," pair)*)? "}"
pair ::= string ":" value
array ::= "[" (value ("," value)*)? "]"
string ::= "\"" [a-z ]* "\""
number ::= "-"? [0-9]+
""",
    r"""root ::= item+
item ::= "(" root? ")" | [a-z]
""",
    r"""root ::= sexp
sexp ::= atom | "(" sexp (" " sexp)* ")"
atom ::= [a-z]+ | [0-9]+
""",
    r"""root ::= greeting " " name "!"
greeting ::= "hello" | "hi"
name ::= [A-Z] [a-z]{1,8}
""",
    r"""root ::= "[" (root ("," root)*)? "]"
""",
    r"""root   ::= value
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" (member (", " member)*)? "}"
member ::= string ": " value
array  ::= "[" (value (", " value)*)? "]"
string ::= "\"" ([^"\\\x00-\x1f] | "\\" ["\\/bfnrt])* "\""
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
""",
    r"""root ::= "<" tag ">" (text | root)* "</" tag ">"
tag ::= "a" | "b" | "em"
text ::= [^<>&]{1,5}
""",
]

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
                                      "age": {"type": "integer", "minimum": 0, "maximum": 120}},
     "required": ["name", "age"], "additionalProperties": False},
    {"type": "object", "properties": {"ok": {"type": "boolean"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]},
                                                                          "maxItems": 3}},
     "required": ["ok"], "additionalProperties": False},
    {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 4},
    {"enum": ["red", "green", 3, None, True]},
    {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}]},
    {"type": "object", "properties": {"point": {"type": "object", "properties": {"x": {"type": "integer"},
                                                                                 "y": {"type": "integer"}},
                                                "required": ["x", "y"], "additionalProperties": False},
                                      "label": {"const": "p"}},
     "required": ["point", "label"], "additionalProperties": False},
    {"type": "string", "pattern": "^[a-z]{2,5}$"},
    {"type": "number"},
]


def random_schema(rng, depth=0):
    """A schema of the common subset: objects (closed), arrays, strings, integers, booleans, null,
    enums, consts and anyOf, nested at most three deep."""
    kinds = ["string", "integer", "boolean", "null", "enum", "const"]
    if depth < 3:
        kinds += ["object", "object", "array", "anyOf"]
    kind = rng.choice(kinds)
    if kind == "string":
        schema = {"type": "string"}
        if rng.random() < 0.7:
            schema["maxLength"] = rng.randint(0, 8)
        if rng.random() < 0.3:
            schema["minLength"] = rng.randint(0, schema.get("maxLength", 3))
        return schema
    if kind == "integer":
        schema = {"type": "integer"}
        if rng.random() < 0.5:
            low = rng.randint(-50, 50)
            schema.update(minimum=low, maximum=low + rng.randint(0, 300))
        return schema
    if kind in ("boolean", "null"):
        return {"type": kind}
    if kind == "enum":
        return {"enum": rng.sample(["a", "bc", "d e", 1, 22, True, None, "x\"y"], rng.randint(1, 4))}
    if kind == "const":
        return {"const": rng.choice(["k", 7, False, "q r"])}
    if kind == "anyOf":
        return {"anyOf": [random_schema(rng, depth + 1) for _ in range(2)]}
    if kind == "array":
        schema = {"type": "array", "items": random_schema(rng, depth + 1), "maxItems": rng.randint(0, 3)}
        schema["minItems"] = rng.randint(0, schema["maxItems"])
        return schema
    names = rng.sample(["a", "b", "id", "name", "x_y", "value"], rng.randint(1, 4))
    return {"type": "object", "properties": {n: random_schema(rng, depth + 1) for n in names},
            "required": [n for n in names if rng.random() < 0.6], "additionalProperties": False}


def llguidance_matcher(tokenizer, case):
    if "regex" in case:
        grammar = llguidance.LLMatcher.grammar_from_regex(case["regex"])
    elif "grammar" in case:
        grammar = llguidance.LLMatcher.grammar_from_lark(gbnf_to_lark(case["grammar"]))
    else:
        grammar = llguidance.LLMatcher.grammar_from_json_schema(
            case["json_schema"], {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": ",
                                  "json_allow_general_unicode_escapes": True})
    return llguidance.LLMatcher(tokenizer, grammar, log_level=0)


def mask_hex(matcher):
    """llguidance's mask as pagedllm writes one: its 32-bit words, 8 hex digits each, in order."""
    return numpy.frombuffer(matcher.compute_bitmask(), dtype="<u4").astype(">u4").tobytes().hex()


def mask_bits(hex_mask):
    """The mask as one bool per token id."""
    words = numpy.frombuffer(bytes.fromhex(hex_mask), dtype=">u4").astype("<u4")
    return numpy.unpackbits(words.view(numpy.uint8), bitorder="little").astype(bool)


def allowed(hex_mask):
    return numpy.flatnonzero(mask_bits(hex_mask)).tolist()


def random_walk(tokenizer, token_bytes, case, rng, max_steps=48):
    """A token path through the constraint, with llguidance's mask before each token (none after
    the end-of-sequence token) and, per step, the tokens it may leave out because the next bytes
    are forced: llguidance then allows only the start of their canonical tokenization (its
    documented behaviour), where pagedllm, like XGrammar, allows every token whose bytes fit. Only
    those tokens (proper prefixes of the forced bytes) are left out of the comparison, and only
    at such steps."""
    matcher = llguidance_matcher(tokenizer, case)
    tokens, masks, forced_prefixes = [], [], []
    eos = tokenizer.eos_token
    for _ in range(max_steps + 1):
        mask = mask_hex(matcher)
        masks.append(mask)
        forced = bytes(matcher.compute_ff_bytes())
        forced_prefixes.append([t for t, b in enumerate(token_bytes) if b and len(b) < len(forced)
                                and forced.startswith(b)])
        choices = allowed(mask)
        if not choices or len(tokens) == max_steps:
            break
        if eos in choices and (len(choices) == 1 or rng.random() < 0.3):
            token = eos
        else:
            token = rng.choice([c for c in choices if c != eos])
        tokens.append(token)
        if not matcher.consume_token(token) or token == eos:
            break
    return tokens, masks, forced_prefixes


def pagedllm_masks(binary, tokenizer_path, cases, eos):
    lines = []
    for case in cases:
        line = {k: v for k, v in case.items() if k in ("regex", "json_schema", "grammar", "tokens")}
        line["stop_tokens"] = [eos]
        if "json_schema" in case:
            line["any_whitespace"] = False
        lines.append(json.dumps(line))
    result = subprocess.run([binary, "token-masks", "--tokenizer", tokenizer_path], input="\n".join(lines) + "\n",
                            capture_output=True, text=True, check=True)
    return [json.loads(line) for line in result.stdout.splitlines()]


def padded(a, b):
    """Two masks' bits at one length: llguidance rounds its mask up to 32 tokens past a
    vocabulary whose size is a multiple of 32 (the extra tokens are never allowed)."""
    n = max(len(a), len(b))
    return numpy.pad(a, (0, n - len(a))), numpy.pad(b, (0, n - len(b)))


def differs_only_in_forced_prefixes(ours, theirs, forced_prefixes):
    """pagedllm allows every token llguidance allows, and more only among the proper prefixes of
    the bytes the constraint forces next."""
    mine, other = padded(mask_bits(ours), mask_bits(theirs))
    return not (other & ~mine).any() and set(numpy.flatnonzero(mine & ~other).tolist()) <= set(forced_prefixes)


def describe_difference(tokenizer, ours, theirs):
    mine, other = set(allowed(ours)), set(allowed(theirs))
    show = lambda ids: [(i, tokenizer.decode_bytes([i])) for i in sorted(ids)[:6]]
    return f"only pagedllm allows {show(mine - other)}; only llguidance allows {show(other - mine)}"


def sample_value(schema, rng):
    """A JSON value that fits the schema (for the accept/reject comparison)."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "anyOf" in schema:
        return sample_value(rng.choice(schema["anyOf"]), rng)
    kind = schema.get("type")
    if kind == "string":
        low, high = schema.get("minLength", 0), schema.get("maxLength", 6)
        return "".join(rng.choice("ab Z\"\\é") for _ in range(rng.randint(low, high)))
    if kind == "integer":
        return rng.randint(schema.get("minimum", -1000), schema.get("maximum", 1000))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "array":
        return [sample_value(schema["items"], rng)
                for _ in range(rng.randint(schema.get("minItems", 0), schema.get("maxItems", 3)))]
    if kind == "object":
        return {name: sample_value(sub, rng) for name, sub in schema["properties"].items()
                if name in schema.get("required", []) or rng.random() < 0.5}
    return 0


def constraint_of(case):
    return case.get("regex") or case.get("grammar") or case["json_schema"]


def compare(binary, tokenizer_path, num_random, num_walks, seed):
    """Masks along token paths and accept/reject of texts, over one vocabulary."""
    rng = random.Random(seed)
    text = open(tokenizer_path, encoding="utf-8").read()
    eos = next(t["id"] for t in json.loads(text)["added_tokens"] if t.get("special"))
    tokenizer = llguidance.LLTokenizer(text, eos_token=eos)
    token_bytes = [tokenizer.decode_bytes([t]) if not tokenizer.is_special_token(t) else b""
                   for t in range(tokenizer.vocab_size)]

    constraints = [{"regex": r} for r in REGEXES] + [{"json_schema": s} for s in SCHEMAS]
    constraints += [{"grammar": g} for g in GRAMMARS]
    constraints += [{"json_schema": random_schema(rng)} for _ in range(num_random)]
    cases = []
    for constraint in constraints:
        for _ in range(num_walks * (4 if "grammar" in constraint else 1)):  # few grammars: more paths each
            tokens, masks, forced_prefixes = random_walk(tokenizer, token_bytes, constraint, rng)
            cases.append(dict(constraint, tokens=tokens, expected=masks, forced_prefixes=forced_prefixes))
    answers = pagedllm_masks(binary, tokenizer_path, cases, eos)
    num_steps = 0
    num_forced_steps = 0  # steps that differ only in prefixes of forced bytes
    mismatched = []
    for case, answer in zip(cases, answers):
        if "error" in answer:
            mismatched.append(f"{json.dumps(constraint_of(case))}: pagedllm refused it: "
                              f"{answer['error']}")
            continue
        for step, (ours, theirs) in enumerate(zip(answer["masks"], case["expected"])):
            num_steps += 1
            if ours == theirs or numpy.array_equal(*padded(mask_bits(ours), mask_bits(theirs))):
                continue
            if differs_only_in_forced_prefixes(ours, theirs, case["forced_prefixes"][step]):
                num_forced_steps += 1
                continue
            prefix = tokenizer.decode_bytes(case["tokens"][:step])
            mismatched.append(f"{json.dumps(constraint_of(case))[:200]} after {prefix!r}: "
                              + describe_difference(tokenizer, ours, theirs))
            break
    print(f"masks: {len(constraints)} constraints, {len(cases)} token paths, {num_steps} steps compared "
          f"({num_forced_steps} where pagedllm also allows prefixes of bytes the constraint forces)")
    for problem in mismatched[:20]:
        print("MISMATCH:", problem)
    if mismatched:
        FAILURES.append(f"{len(mismatched)} of {len(cases)} token paths differ")

    # Accept / reject of whole texts: values that fit, and the same with one character changed.
    texts = []
    for constraint in constraints:
        if "json_schema" not in constraint:
            continue
        for _ in range(2):
            good = json.dumps(sample_value(constraint["json_schema"], rng), ensure_ascii=False)
            position = rng.randrange(len(good) + 1)
            bad = good[:position] + rng.choice(['"', "1", " ", "}", "x"]) + good[position:]
            texts += [(constraint, good), (constraint, bad)]
    cases = []
    for constraint, value_text in texts:
        tokens = tokenizer.tokenize_str(value_text) + [tokenizer.eos_token]
        matcher = llguidance_matcher(tokenizer, constraint)
        accepted = next((k for k, t in enumerate(tokens) if not matcher.consume_token(t)), None)
        cases.append(dict(constraint, tokens=tokens, llguidance_refused_at=accepted, text=value_text))
    answers = pagedllm_masks(binary, tokenizer_path, cases, eos)
    disagreements = [f"{c['text']!r} under {json.dumps(c['json_schema'])[:120]}: llguidance refuses at "
                     f"{c['llguidance_refused_at']}, pagedllm at {a.get('refused_at')}"
                     for c, a in zip(cases, answers) if a.get("refused_at") != c["llguidance_refused_at"]]
    num_accepted = sum(1 for c in cases if c["llguidance_refused_at"] is None)
    print(f"accept/reject: {len(cases)} texts ({num_accepted} accepted by llguidance), {len(disagreements)} disagree")
    for problem in disagreements[:20]:
        print("DISAGREE:", problem)
    if disagreements:
        FAILURES.append(f"{len(disagreements)} texts judged differently")


def export_tokenizer(binary, model, directory):
    """The model's tokenizer as tokenizer.json, written by pagedllm (a GGUF holds none)."""
    path = os.path.join(directory, "tokenizer.json")
    subprocess.run([binary, "tokenize", "--tokenizer", model, "--export-tokenizer-json", path], check=True)
    return path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pagedllm", required=True)
    parser.add_argument("--gguf", help="the real model: its vocabulary too")
    parser.add_argument("--random", type=int, default=300, help="randomly generated schemas (tiny vocabulary)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pagedllm_masks_") as scratch:
        tiny = os.path.join(scratch, "tiny")
        subprocess.run([args.pagedllm, "make-model", "--out", tiny], check=True, stdout=subprocess.DEVNULL)
        print("=== the tiny model's vocabulary")
        compare(args.pagedllm, os.path.join(tiny, "tokenizer.json"), args.random, 3, args.seed)
        if args.gguf:
            print(f"=== {os.path.basename(args.gguf)}'s vocabulary")
            compare(args.pagedllm, export_tokenizer(args.pagedllm, args.gguf, scratch), args.random // 6, 1,
                    args.seed + 1)
    if FAILURES:
        sys.exit("token masks: " + "; ".join(FAILURES))
    print("token masks: identical to llguidance's")


if __name__ == "__main__":
    main()
