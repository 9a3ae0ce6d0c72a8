#!/usr/bin/env python3
"""Structured outputs side by side with llguidance (Microsoft's constrained-decoding engine, the
guidance backend of vLLM), in one run, on the same constraints, vocabulary and token paths:
compile time per constraint and the allowed-token mask per sequence per step (issue 23's target:
at most 50 us on SmolLM2's 49k vocabulary).

llguidance walks the token paths (random among its allowed tokens) and is timed filling a
preallocated bitmask (llguidance.numpy.fill_next_token_bitmask, from Python: about a microsecond of
call overhead is in its figure); bench_structured --paths times pagedllm's matcher on the same
paths in C++, first use of each state, then again over cached masks. llguidance computes every mask
anew, so its two walks cost the same. Constraints in json.dumps' layout, where the two engines'
languages are the same (tests/pypi/check_token_masks.py).

    tools/bench/structured_vs_llguidance.py BENCH_STRUCTURED PAGEDLLM MODEL.gguf [--paths N] [--json OUT]

Needs llguidance and numpy (tests/pypi/requirements.txt pins them; build/pypi-venv has them).
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import llguidance
import llguidance.numpy
import numpy
from llguidance.gbnf_to_lark import gbnf_to_lark

CONSTRAINTS = [
    ("pydantic_record", {"json_schema": {
        "$defs": {"Place": {"type": "object", "additionalProperties": False,
                            "properties": {"site": {"type": "string", "maxLength": 12},
                                           "floor": {"type": "integer", "minimum": 0, "maximum": 40}},
                            "required": ["site", "floor"]}},
        "type": "object", "additionalProperties": False,
        "properties": {"sensor": {"type": "string"}, "unit": {"enum": ["celsius", "kelvin"]},
                       "value": {"type": "integer", "minimum": -50, "maximum": 150}, "place": {"$ref": "#/$defs/Place"},
                       "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                       "flags": {"type": "array", "items": {"type": "boolean"}}},
        "required": ["sensor", "unit", "value", "place", "note", "flags"]}}),
    ("tool_arguments", {"json_schema": {
        "type": "object", "additionalProperties": False,
        "properties": {"city": {"type": "string"}, "country": {"type": "string", "minLength": 2, "maxLength": 2},
                       "days": {"type": "integer", "minimum": 1, "maximum": 14}, "units": {"enum": ["metric", "imperial"]},
                       "lat": {"type": "number"}, "lon": {"type": "number"}, "hourly": {"type": "boolean"},
                       "lang": {"type": "string"}},
        "required": ["city", "days"]}}),
    ("regex_date_time", {"regex": r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2})?(Z|[+-][0-9]{2}:[0-9]{2})"}),
    # Any JSON value in json.dumps' layout as a GBNF grammar (bench_structured's gbnf_json), given to
    # llguidance through its GBNF-to-Lark converter: nesting without bound, a pushdown automaton.
    ("gbnf_json", {"grammar": r"""root   ::= value
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" (member (", " member)*)? "}"
member ::= string ": " value
array  ::= "[" (value (", " value)*)? "]"
string ::= "\"" ([^"\\\x00-\x1f] | "\\" ["\\/bfnrt])* "\""
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
"""}),
]
LAYOUT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": ",
          "json_allow_general_unicode_escapes": True}


def grammar(constraint):
    if "regex" in constraint:
        return llguidance.LLMatcher.grammar_from_regex(constraint["regex"])
    if "grammar" in constraint:
        return llguidance.LLMatcher.grammar_from_lark(gbnf_to_lark(constraint["grammar"]))
    return llguidance.LLMatcher.grammar_from_json_schema(constraint["json_schema"], LAYOUT)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def walk_paths(tokenizer, constraint, num_paths, max_tokens, rng):
    """Token paths drawn uniformly among llguidance's allowed tokens (the stop token once allowed,
    with probability 0.3, ends a path; it is not part of the path)."""
    paths = []
    bitmask = llguidance.numpy.allocate_token_bitmask(1, tokenizer.vocab_size)
    for _ in range(num_paths):
        matcher = llguidance.LLMatcher(tokenizer, grammar(constraint), log_level=0)
        tokens = []
        for _ in range(max_tokens):
            llguidance.numpy.fill_next_token_bitmask(matcher, bitmask, 0)
            bits = numpy.unpackbits(bitmask[0].view(numpy.uint8), bitorder="little")[:tokenizer.vocab_size]
            allowed = numpy.flatnonzero(bits)
            others = [t for t in allowed.tolist() if t != tokenizer.eos_token]
            if not others or (len(others) < len(allowed) and rng.random() < 0.3):
                break
            token = rng.choice(others)
            matcher.consume_token(token)
            tokens.append(token)
        paths.append(tokens)
    return paths


def time_llguidance(tokenizer, constraint, paths):
    """Compile time (best of three) and the time of each mask along the paths."""
    compile_s = min(_timed(lambda: llguidance.LLMatcher(tokenizer, grammar(constraint), log_level=0))
                    for _ in range(3))
    bitmask = llguidance.numpy.allocate_token_bitmask(1, tokenizer.vocab_size)
    samples = []
    for tokens in paths:
        matcher = llguidance.LLMatcher(tokenizer, grammar(constraint), log_level=0)
        for token in tokens:
            start = time.perf_counter_ns()
            llguidance.numpy.fill_next_token_bitmask(matcher, bitmask, 0)
            samples.append((time.perf_counter_ns() - start) / 1e3)
            matcher.consume_token(token)
    return compile_s * 1e3, samples


def _timed(action):
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def export_tokenizer(pagedllm, model, scratch):
    """The model's tokenizer as tokenizer.json (pagedllm writes it; a GGUF holds none), and its
    end-of-sequence id."""
    path = os.path.join(scratch, "tokenizer.json")
    subprocess.run([pagedllm, "tokenize", "--tokenizer", model, "--export-tokenizer-json", path], check=True)
    eos = next(t["id"] for t in json.load(open(path, encoding="utf-8"))["added_tokens"] if t.get("special"))
    return path, eos


def time_ours(bench_structured, model, paths, scratch):
    """`bench_structured --paths` on each constraint's token paths ({name: paths}): its results by name."""
    paths_file = os.path.join(scratch, "paths.jsonl")
    with open(paths_file, "w") as out:
        for name, constraint in CONSTRAINTS:
            out.write(json.dumps(dict(constraint, name=name, any_whitespace=False, paths=paths[name])) + "\n")
    ours_file = os.path.join(scratch, "ours.json")
    subprocess.run([bench_structured, "--tokenizer", model, "--paths", paths_file, "--json", ours_file], check=True)
    return {r["constraint"]: r for r in json.load(open(ours_file))["results"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bench_structured")
    parser.add_argument("pagedllm")
    parser.add_argument("model", help="a .gguf (its tokenizer is exported as tokenizer.json for llguidance)")
    parser.add_argument("--paths", type=int, default=20, help="token paths per constraint")
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    rng = random.Random(5)
    with tempfile.TemporaryDirectory(prefix="structured_vs_llguidance_") as scratch:
        tokenizer_json, eos = export_tokenizer(args.pagedllm, args.model, scratch)
        tokenizer = llguidance.LLTokenizer(open(tokenizer_json, encoding="utf-8").read(), eos_token=eos)
        paths, theirs = {}, {}
        for name, constraint in CONSTRAINTS:
            paths[name] = walk_paths(tokenizer, constraint, args.paths, args.max_tokens, rng)
            theirs[name] = time_llguidance(tokenizer, constraint, paths[name])
        ours = time_ours(args.bench_structured, args.model, paths, scratch)
    print(f"vocabulary: {os.path.basename(args.model)}, {tokenizer.vocab_size} tokens; "
          f"{args.paths} paths of up to {args.max_tokens} tokens per constraint; llguidance {llguidance.__version__ if hasattr(llguidance, '__version__') else ''}")
    print(f"{'constraint':<16} {'steps':>6} {'compile ours':>13} {'llguidance':>11} {'mask p50 ours':>14} "
          f"{'cached':>7} {'llguidance':>11} {'p99 ours':>9} {'cached':>7} {'llguidance':>11} {'p50 llg/ours':>13}")
    results = []
    for name, _ in CONSTRAINTS:
        compile_ms, samples = theirs[name]
        mine = ours[name]
        if mine["steps"] != len(samples):
            sys.exit(f"{name}: {mine['steps']} steps timed by pagedllm, {len(samples)} by llguidance")
        row = {"constraint": name, "steps": len(samples), "compile_ms": mine["compile_ms"],
               "llguidance_compile_ms": compile_ms, "first_walk_us_p50": mine["first_walk_us_p50"],
               "cached_us_p50": mine["cached_us_p50"], "llguidance_us_p50": statistics.median(samples),
               "first_walk_us_p99": mine["first_walk_us_p99"], "cached_us_p99": mine["cached_us_p99"],
               "llguidance_us_p99": percentile(samples, 0.99)}
        row["llguidance_p50_over_cached_p50"] = row["llguidance_us_p50"] / row["cached_us_p50"]
        results.append(row)
        print(f"{name:<16} {row['steps']:>6} {row['compile_ms']:>11.1f}ms {compile_ms:>9.1f}ms "
              f"{row['first_walk_us_p50']:>12.2f}us {row['cached_us_p50']:>5.2f}us {row['llguidance_us_p50']:>9.2f}us "
              f"{row['first_walk_us_p99']:>7.1f}us {row['cached_us_p99']:>5.1f}us {row['llguidance_us_p99']:>9.1f}us "
              f"{row['llguidance_p50_over_cached_p50']:>12.1f}x")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"benchmark": "structured_vs_llguidance", "results": results}, out, indent=1)


if __name__ == "__main__":
    main()
