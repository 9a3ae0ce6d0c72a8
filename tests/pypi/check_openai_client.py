#!/usr/bin/env python3
"""`pagedllm serve` driven by the official `openai` Python client: completions and chat, streaming,
n > 1, logprobs, stop sequences, usage (also in streams), the errors the client raises, the model
list; then the real SmolLM2 model answers a question coherently.

    check_openai_client.py --pagedllm BINARY [--model REAL_MODEL]
"""
import argparse
import os
import sys

import openai

sys.dont_write_bytecode = True  # no __pycache__ left in tests/pypi by the import below
from serve_process import start_server  # noqa: E402 (tests/pypi is on sys.path: the script's folder)

FAILURES = []


def check(condition, what):
    print(("ok: " if condition else "FAILED: ") + what)
    if not condition:
        FAILURES.append(what)


def tiny_model_checks(binary):
    process, port = start_server(binary, "tiny", "--api-key", "k-123", "--threads", "1")
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k-123", max_retries=0)
    try:
        models = client.models.list()
        check([m.id for m in models.data] == ["tiny"], "models.list(): the served model")

        completion = client.completions.create(model="tiny", prompt="Once upon a time", max_tokens=10, temperature=0)
        check(completion.usage.completion_tokens == 10 and completion.choices[0].finish_reason == "length",
              "completions.create: 10 tokens, finish_reason length, usage")
        text = completion.choices[0].text

        pieces = []
        usage = None
        for chunk in client.completions.create(model="tiny", prompt="Once upon a time", max_tokens=10, temperature=0,
                                               stream=True, stream_options={"include_usage": True}):
            if chunk.choices:
                pieces.append(chunk.choices[0].text)
            if chunk.usage:
                usage = chunk.usage
        check("".join(pieces) == text, "a streamed completion has the same text as the whole one (greedy)")
        check(usage is not None and usage.completion_tokens == 10, "stream_options.include_usage: usage at the end")

        stop = next((text[i:i + 2] for i in range(3, len(text) - 2) if text[i:i + 2].strip() and text[i:i + 2].isprintable()), None)
        if stop:
            stopped = client.completions.create(model="tiny", prompt="Once upon a time", max_tokens=10, temperature=0,
                                                stop=[stop])
            check(stopped.choices[0].text == text[:text.find(stop)] and stopped.choices[0].finish_reason == "stop",
                  f"stop={stop!r}: the text ends before it")

        many = client.completions.create(model="tiny", prompt="a", max_tokens=4, n=3, seed=1, logprobs=2,
                                      extra_body={"ignore_eos": True})
        check(len(many.choices) == 3 and all(len(c.logprobs.tokens) == 4 for c in many.choices),
              "n=3 with logprobs=2: three choices of four tokens")
        check(all(len(top) == 2 for c in many.choices for top in c.logprobs.top_logprobs), "two alternatives per token")

        chat = client.chat.completions.create(model="tiny", messages=[{"role": "system", "content": "Be brief."},
                                                                      {"role": "user", "content": "Hello"}],
                                              max_tokens=8, logprobs=True, top_logprobs=3)
        check(chat.choices[0].message.role == "assistant" and chat.usage.completion_tokens <= 8,
              "chat.completions.create: an assistant message, usage")
        check(len(chat.choices[0].logprobs.content) == chat.usage.completion_tokens and
              all(len(entry.top_logprobs) == 3 for entry in chat.choices[0].logprobs.content),
              "chat logprobs: one entry per token, three alternatives")

        deltas = []
        finish = None
        for chunk in client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "Hi"}],
                                                    max_tokens=6, stream=True, temperature=0, extra_body={"ignore_eos": True}):
            if chunk.choices:
                deltas.append(chunk.choices[0].delta.content or "")
                finish = chunk.choices[0].finish_reason or finish
        check(finish == "length" and len(deltas) >= 2, "a streamed chat ends with finish_reason length")

        try:
            client.completions.create(model="tiny", prompt="x", max_tokens=-3)
            check(False, "max_tokens=-3 raises BadRequestError")
        except openai.BadRequestError as error:
            check(error.status_code == 400 and "max_tokens" in str(error), "max_tokens=-3 raises BadRequestError")
        try:
            client.completions.create(model="no-such-model", prompt="x")
            check(False, "an unknown model raises NotFoundError")
        except openai.NotFoundError:
            check(True, "an unknown model raises NotFoundError")
        try:
            client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x " * 5000}])
            check(False, "a prompt beyond the context raises BadRequestError")
        except openai.BadRequestError as error:
            check("maximum context length" in str(error), "a prompt beyond the context raises BadRequestError")
        wrong_key = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="nope", max_retries=0)
        try:
            wrong_key.models.list()
            check(False, "a wrong key raises AuthenticationError")
        except openai.AuthenticationError:
            check(True, "a wrong key raises AuthenticationError")
    finally:
        process.terminate()
        process.wait(timeout=30)


def real_model_checks(binary, model):
    process, port = start_server(binary, model)
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0)
    try:
        name = client.models.list().data[0].id
        answer = client.chat.completions.create(model=name, messages=[{"role": "user",
                                                                       "content": "What is the capital of France?"}],
                                                max_tokens=40, temperature=0)
        text = answer.choices[0].message.content
        check("Paris" in text and answer.choices[0].finish_reason == "stop",
              f"SmolLM2 answers the capital of France: {text!r}")
    finally:
        process.terminate()
        process.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pagedllm", required=True)
    parser.add_argument("--model", help="the real model (a fetched name or a path)")
    args = parser.parse_args()
    os.environ.pop("OPENAI_BASE_URL", None)
    tiny_model_checks(args.pagedllm)
    if args.model:
        real_model_checks(args.pagedllm, args.model)
    if FAILURES:
        sys.exit(f"{len(FAILURES)} check(s) failed")
    print("openai client: all checks passed")


if __name__ == "__main__":
    main()
