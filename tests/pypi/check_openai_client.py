#!/usr/bin/env python3
"""`pagedllm serve` driven by the official `openai` Python client: completions and chat, streaming,
n > 1, logprobs, stop sequences, usage (also in streams), the errors the client raises, the model
list, structured outputs through the client's `parse` with Pydantic models (every answer validated
by `jsonschema` against the schema the client sent), the tool-calling flow (tools, a forced call
parsed into a Pydantic model whole and through the client's stream accumulator, the result sent
back); then the real SmolLM2 model answers a question coherently, in plain text, as a Pydantic
model, and as a tool call.

    check_openai_client.py --pagedllm BINARY [--model REAL_MODEL]
"""
import argparse
import json
import os
import sys
from typing import List, Literal, Optional

import jsonschema
import openai
import pydantic

sys.dont_write_bytecode = True  # no __pycache__ left in tests/pypi by the import below
from serve_process import start_server  # noqa: E402 (tests/pypi is on sys.path: the script's folder)

FAILURES = []


def check(condition, what):
    print(("ok: " if condition else "FAILED: ") + what)
    if not condition:
        FAILURES.append(what)


class Reading(pydantic.BaseModel):
    """A Pydantic model of the kind `parse` users write: bounded strings and lists, an integer range,
    a Literal, an Optional and a nested model (which Pydantic puts under $defs)."""

    class Place(pydantic.BaseModel):
        site: str = pydantic.Field(max_length=6)
        floor: int = pydantic.Field(ge=0, le=40)

    sensor: str = pydantic.Field(max_length=8)
    unit: Literal["celsius", "kelvin"]
    value: int = pydantic.Field(ge=-50, le=150)
    place: Place
    note: Optional[str] = pydantic.Field(max_length=5)
    flags: List[bool] = pydantic.Field(max_length=3)


class Capital(pydantic.BaseModel):
    country: str
    capital: str


class GetWeather(pydantic.BaseModel):
    """A function tool as `openai.pydantic_function_tool` users write one."""
    city: str = pydantic.Field(max_length=12)
    unit: Literal["celsius", "fahrenheit"]


WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
                   "required": ["city"], "additionalProperties": False}}}


def parse_chat(client):
    """The structured-outputs `parse` of this openai version (beta.chat before 1.92, chat after)."""
    beta = getattr(client, "beta", None)
    chat = getattr(beta, "chat", None) if beta is not None else None
    return chat.completions.parse if chat is not None else client.chat.completions.parse


def structured_output_checks(client):
    """`parse` with a Pydantic model, greedy and sampled, n > 1: every choice that stopped parses into
    the model (the client validates it) and validates against the strict schema the client sent."""
    schema = openai.lib._pydantic.to_strict_json_schema(Reading)
    for temperature in (0.0, 1.0):
        try:
            completion = parse_chat(client)(model="tiny", messages=[{"role": "user", "content": "A reading, please"}],
                                            response_format=Reading, max_tokens=300, temperature=temperature, n=3,
                                            seed=5)
        except openai.LengthFinishReasonError as error:
            check(False, f"parse at temperature {temperature}: a choice ran out of tokens: {error}")
            continue
        for choice in completion.choices:
            parsed = choice.message.parsed
            check(isinstance(parsed, Reading), f"parse at temperature {temperature}: a Reading: {parsed!r}")
            try:
                jsonschema.validate(json.loads(choice.message.content), schema)
                check(True, "the content validates against the strict schema (jsonschema)")
            except jsonschema.ValidationError as error:
                check(False, f"the content {choice.message.content!r} fails the schema: {error.message}")
    # vLLM's extras through extra_body: a regex and a choice.
    regex = client.completions.create(model="tiny", prompt="Code:", max_tokens=20, n=2, temperature=1, seed=3,
                                      extra_body={"structured_outputs": {"regex": "[A-Z]{2}-[0-9]{2,3}"}})
    check(all(len(c.text) in (5, 6) and c.text[2] == "-" and c.finish_reason == "stop" for c in regex.choices),
          f"structured_outputs.regex: {[c.text for c in regex.choices]}")
    choice = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "Yes or no?"}],
                                            max_tokens=5, extra_body={"guided_choice": ["yes", "no"]})
    check(choice.choices[0].message.content in ("yes", "no"), f"guided_choice: {choice.choices[0].message.content!r}")
    try:
        client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x"}], max_tokens=5,
                                       response_format={"type": "json_schema", "json_schema": {
                                           "name": "n", "schema": {"type": "object", "patternProperties": {}}}})
        check(False, "an unsupported schema keyword raises BadRequestError")
    except openai.BadRequestError as error:
        check(error.status_code == 400 and "patternProperties" in str(error),
              "an unsupported schema keyword raises BadRequestError naming it")


def stream_chat(client):
    """The stream helper of this openai version (beta.chat before 1.92, chat after)."""
    beta = getattr(client, "beta", None)
    chat = getattr(beta, "chat", None) if beta is not None else None
    return chat.completions.stream if chat is not None else client.chat.completions.stream


def tool_call_checks(client):
    """The client's tool-calling flow: a required call whose arguments validate against the tool's
    schema (jsonschema); a Pydantic tool forced by name, parsed by the client whole and from the
    stream; the call and its result sent back for the next turn."""
    messages = [{"role": "user", "content": "What is the weather in Oslo?"}]
    for temperature in (0.0, 1.0):
        required = client.chat.completions.create(model="tiny", messages=messages, tools=[WEATHER_TOOL],
                                                  tool_choice="required", parallel_tool_calls=False, max_tokens=60,
                                                  temperature=temperature, seed=2, n=2)
        for choice in required.choices:
            calls = choice.message.tool_calls or []
            check(choice.finish_reason == "tool_calls" and len(calls) == 1 and calls[0].function.name == "get_weather",
                  f"tool_choice required at temperature {temperature}: one get_weather call: {choice.message}")
            try:
                jsonschema.validate(json.loads(calls[0].function.arguments), WEATHER_TOOL["function"]["parameters"])
                check(True, "the call's arguments validate against the tool's schema (jsonschema)")
            except (ValueError, IndexError, jsonschema.ValidationError) as error:
                check(False, f"the arguments of {calls} fail the tool's schema: {error}")

    tool = openai.pydantic_function_tool(GetWeather)
    named = {"type": "function", "function": {"name": "GetWeather"}}
    parsed = parse_chat(client)(model="tiny", messages=messages, tools=[tool], tool_choice=named, max_tokens=60,
                                temperature=0)
    call = parsed.choices[0].message.tool_calls[0]
    check(isinstance(call.function.parsed_arguments, GetWeather),
          f"a named Pydantic tool: the client parses the arguments: {call.function}")
    with stream_chat(client)(model="tiny", messages=messages, tools=[tool], tool_choice=named, max_tokens=60,
                             temperature=0) as stream:
        kinds = {event.type for event in stream}
        final = stream.get_final_completion()
    streamed = final.choices[0].message.tool_calls[0]
    check("tool_calls.function.arguments.done" in kinds and streamed.function.arguments == call.function.arguments
          and isinstance(streamed.function.parsed_arguments, GetWeather),
          f"streamed: the client's accumulator rebuilds the same call: {sorted(kinds)}")

    answer = client.chat.completions.create(model="tiny", tools=[tool], tool_choice="none", max_tokens=5, messages=[
        *messages, {"role": "assistant", "tool_calls": [{"id": call.id, "type": "function", "function": {
            "name": call.function.name, "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "4 degrees, snow"}])
    check(answer.choices[0].message.content is not None and not answer.choices[0].message.tool_calls,
          "the call and its result sent back: the next turn answers in text (tool_choice none)")


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
        structured_output_checks(client)
        tool_call_checks(client)
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
        structured = parse_chat(client)(model=name, messages=[{"role": "user", "content":
                                                                "What is the capital of France? Answer in JSON."}],
                                        response_format=Capital, max_tokens=60, temperature=0)
        parsed = structured.choices[0].message.parsed
        check(parsed is not None and "Paris" in parsed.capital,
              f"SmolLM2 answers as a Pydantic model: {structured.choices[0].message.content!r}")
        called = client.chat.completions.create(
            model=name, messages=[{"role": "user", "content": "What is the weather like in Paris today?"}],
            tools=[WEATHER_TOOL], tool_choice={"type": "function", "function": {"name": "get_weather"}},
            max_tokens=30, temperature=0)
        arguments = called.choices[0].message.tool_calls[0].function.arguments
        check("Paris" in json.loads(arguments).get("city", ""), f"SmolLM2 calls get_weather for Paris: {arguments}")
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
