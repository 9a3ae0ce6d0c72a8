#!/usr/bin/env python3
"""Structured-outputs cost side by side with XGrammar (vLLM's default backend), as issue 23's
targets ask: compile time per constraint and the allowed-token mask of one sequence per step, over
SmolLM2's vocabulary, on the constraints and token paths of structured_vs_llguidance.py (drawn with
llguidance's masks, which the PyPI tier holds equal to ours).

    structured_vs_xgrammar.py BENCH_STRUCTURED PAGEDLLM MODEL.gguf [--paths N] [--max-tokens N] [--json OUT]

Not part of CI: XGrammar's wheel requires PyTorch, Transformers and Triton (several GB), so it runs
from a separate virtual environment: `python3 -m venv VENV && VENV/bin/pip install xgrammar
llguidance==1.9.1 numpy` (PyTorch comes from the package index pip is set up with).

XGrammar is timed from Python filling a preallocated bitmask (`GrammarMatcher.fill_next_token_bitmask`,
its call overhead included, as vLLM calls it), compiled with its cache off, JSON in json.dumps'
layout (`any_whitespace=False`, separators ", " and ": ", strict mode). A path token XGrammar refuses
ends that path for XGrammar (counted and printed: the languages then differ there).
"""
import argparse
import importlib.metadata
import json
import os
import random
import statistics
import sys
import tempfile
import time

import llguidance
import xgrammar

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import structured_vs_llguidance as common  # noqa: E402  (the constraints and the path drawing)


def xgrammar_compile(compiler, constraint):
    if "regex" in constraint:
        return compiler.compile_regex(constraint["regex"])
    if "grammar" in constraint:
        return compiler.compile_grammar(constraint["grammar"])
    return compiler.compile_json_schema(json.dumps(constraint["json_schema"]), any_whitespace=False,
                                        separators=(", ", ": "), strict_mode=True)


def time_xgrammar(tokenizer_info, constraint, paths):
    """Compile time (best of three, cache off), each mask's time along the paths, and the number of
    path tokens XGrammar refused."""
    compiler = xgrammar.GrammarCompiler(tokenizer_info, cache_enabled=False)
    compile_s = []
    for _ in range(3):
        start = time.perf_counter()
        compiled = xgrammar_compile(compiler, constraint)
        compile_s.append(time.perf_counter() - start)
    bitmask = xgrammar.allocate_token_bitmask(1, tokenizer_info.vocab_size)
    samples, refused = [], 0
    for tokens in paths:
        matcher = xgrammar.GrammarMatcher(compiled)
        for token in tokens:
            start = time.perf_counter_ns()
            matcher.fill_next_token_bitmask(bitmask)
            samples.append((time.perf_counter_ns() - start) / 1e3)
            if not matcher.accept_token(token):
                refused += 1
                break
    return min(compile_s) * 1e3, samples, refused


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bench_structured")
    parser.add_argument("pagedllm")
    parser.add_argument("model", help="a .gguf (its tokenizer is exported as tokenizer.json)")
    parser.add_argument("--paths", type=int, default=20, help="token paths per constraint")
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    import transformers  # XGrammar reads the vocabulary through a Transformers tokenizer

    rng = random.Random(5)
    with tempfile.TemporaryDirectory(prefix="structured_vs_xgrammar_") as scratch:
        tokenizer_json, eos = common.export_tokenizer(args.pagedllm, args.model, scratch)
        ll_tokenizer = llguidance.LLTokenizer(open(tokenizer_json, encoding="utf-8").read(), eos_token=eos)
        hf_tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_file=tokenizer_json)
        tokenizer_info = xgrammar.TokenizerInfo.from_huggingface(hf_tokenizer, vocab_size=ll_tokenizer.vocab_size,
                                                                 stop_token_ids=[eos])
        paths, theirs = {}, {}
        for name, constraint in common.CONSTRAINTS:
            paths[name] = common.walk_paths(ll_tokenizer, constraint, args.paths, args.max_tokens, rng)
            theirs[name] = time_xgrammar(tokenizer_info, constraint, paths[name])
        ours = common.time_ours(args.bench_structured, args.model, paths, scratch)
    print(f"vocabulary: {os.path.basename(args.model)}, {ll_tokenizer.vocab_size} tokens; {args.paths} paths of up to "
          f"{args.max_tokens} tokens per constraint; xgrammar {importlib.metadata.version('xgrammar')}")
    print(f"{'constraint':<16} {'steps':>6} {'compile ours':>13} {'xgrammar':>9} {'mask p50 ours':>14} {'cached':>7} "
          f"{'xgrammar':>9} {'p99 ours':>9} {'cached':>7} {'xgrammar':>9} {'p50 xgr/ours':>13} {'refused':>8}")
    results = []
    for name, _ in common.CONSTRAINTS:
        compile_ms, samples, refused = theirs[name]
        mine = ours[name]
        row = {"constraint": name, "steps_ours": mine["steps"], "steps_xgrammar": len(samples),
               "xgrammar_refused_paths": refused, "compile_ms": mine["compile_ms"], "xgrammar_compile_ms": compile_ms,
               "first_walk_us_p50": mine["first_walk_us_p50"], "cached_us_p50": mine["cached_us_p50"],
               "xgrammar_us_p50": statistics.median(samples), "first_walk_us_p99": mine["first_walk_us_p99"],
               "cached_us_p99": mine["cached_us_p99"], "xgrammar_us_p99": common.percentile(samples, 0.99)}
        row["xgrammar_p50_over_cached_p50"] = row["xgrammar_us_p50"] / row["cached_us_p50"]
        results.append(row)
        print(f"{name:<16} {mine['steps']:>6} {row['compile_ms']:>11.1f}ms {compile_ms:>7.1f}ms "
              f"{row['first_walk_us_p50']:>12.2f}us {row['cached_us_p50']:>5.2f}us {row['xgrammar_us_p50']:>7.2f}us "
              f"{row['first_walk_us_p99']:>7.1f}us {row['cached_us_p99']:>5.1f}us {row['xgrammar_us_p99']:>7.1f}us "
              f"{row['xgrammar_p50_over_cached_p50']:>12.1f}x {refused:>8}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"benchmark": "structured_vs_xgrammar", "results": results}, out, indent=1)


if __name__ == "__main__":
    main()
