#!/usr/bin/env python3
"""Cross-check `pagedllm chat-template` against Jinja2 rendering as Hugging Face does it.

    python tests/pypi/check_chat_template.py --pagedllm build/release/pagedllm [--gguf MODEL.gguf]

pagedllm runs a model's Jinja chat template with its own interpreter (core/chat/jinja). For the
chat templates of 18 model families kept as data in chat_template_texts.py (Llama 2, 3, 3.1,
3.2; Mistral v0.1, v0.3, Nemo; Qwen2, 2.5, 3; Gemma 2, 3; Phi-3, Phi-4; SmolLM2; DeepSeek-R1
distill; Command R and its tool-use template; Granite; and one of no known family), and with
--gguf the template inside that GGUF (e.g. SmolLM2's), this renders a set of conversations
(system messages, multi-turn, tools offered, tool calls and their results, continued answers)
with jinja2 as transformers' apply_chat_template does (ImmutableSandboxedEnvironment,
trim_blocks, lstrip_blocks, loop controls, {% generation %}, raise_exception, strftime_now,
transformers' tojson; messages, tools, documents=None, add_generation_prompt, bos_token,
eos_token) and with pagedllm, and compares the texts byte for byte. A conversation the template
rejects must be rejected by pagedllm too, with raise_exception's message. For the families
pagedllm also recognises (ChatML, Llama 3, Mistral) the format `--describe` prints, read back as
a JSON user format, must render the plain conversations identically too. Then 300 random
templates check that whitespace control (trim_blocks, lstrip_blocks, "-" and "+") composes as
in jinja2, and a template that does not parse must be refused naming the file and the line.

Prints one line per template; exits 0 only when every comparison matches.
"""
from __future__ import annotations

import argparse
import datetime
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import jinja2
    import jinja2.ext
    from jinja2 import nodes
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:  # pragma: no cover - the PyPI tier installs it
    sys.exit("check_chat_template.py needs jinja2 (pip install jinja2)")

from chat_template_texts import TEMPLATES  # noqa: E402 (after the jinja2 check)


def message(role: str, content: str) -> dict:
    return {"role": role, "content": content}


PLAIN_CONVERSATIONS = {
    "one user turn": [message("user", "Hello!")],
    "system + user": [message("system", "You are terse."), message("user", "Hi")],
    "multi-turn": [
        message("user", "What is 2+2?"),
        message("assistant", "4."),
        message("user", "And 3+3?"),
    ],
    "system + multi-turn": [
        message("system", "Answer in French."),
        message("user", "Hello"),
        message("assistant", "Bonjour"),
        message("user", "Thanks"),
    ],
    "ends with assistant": [message("user", "Q"), message("assistant", "A")],
    "system + ends with assistant": [
        message("system", "S"),
        message("user", "Q"),
        message("assistant", "A"),
    ],
    # Trimmed by Llama 3 and Mistral v0.3 answers (Python whitespace, Unicode included).
    "surrounding whitespace": [
        message("system", "  \n sys \t"),
        message("user", "\u3000 padded question\u00a0\n"),
        message("assistant", "\n answer with\ttabs \u2003"),
        message("user", "x"),
    ],
    # Continued (continue_final_message) with its spacing kept or trimmed by the template.
    "prefilled answer": [message("user", "Name a colour."), message("assistant", " The colour is \n")],
    "unicode and braces": [message("user", "héllo {{ not jinja }} {% raw %} 😀 \\n")],
    "empty content": [message("user", ""), message("assistant", ""), message("user", " ")],
    # Rejected by the Mistral templates (roles must alternate), rendered by the others.
    "two users in a row": [message("user", "a"), message("user", "b")],
    "system in the middle": [message("user", "a"), message("assistant", "b"), message("system", "c"),
                             message("user", "d")],
    "starts with assistant": [message("assistant", "a"), message("user", "b")],
    "system only": [message("system", "only a system prompt")],
}



WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web. Returns snippets in order, \u00e9t\u00e9 included.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}
TOOLS = [WEATHER_TOOL, SEARCH_TOOL]


def tool_call(arguments) -> dict:
    # Mistral's templates want 9-character ids; OpenAI sends arguments as a JSON string,
    # transformers' examples as a dict: both appear below.
    return {"id": "call12345", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}


# (messages, tools): the tools are passed as `tools` (--tools-json).
TOOL_CONVERSATIONS = {
    "tools offered": ([message("system", "Be brief."), message("user", "Weather in Paris?")], TOOLS),
    "tools offered, no system": ([message("user", "Weather in Paris?")], TOOLS),
    "tool call and result (string arguments)": ([
        message("user", "Weather in Paris?"),
        {"role": "assistant", "content": None, "tool_calls": [tool_call('{"city": "Paris"}')]},
        {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "22 C, sunny"},
    ], TOOLS),
    "tool call and result (dict arguments)": ([
        message("system", "S"),
        message("user", "Weather in Paris?"),
        {"role": "assistant", "content": "", "tool_calls": [tool_call({"city": "Paris", "days": 2})]},
        {"role": "tool", "tool_call_id": "call12345", "content": "22 C, sunny"},
        message("assistant", "It is 22 C and sunny."),
        message("user", "Thanks"),
    ], TOOLS),
    "reasoning in an earlier answer": ([
        message("user", "2+2?"),
        message("assistant", "<think>\nsimple\n</think>\n\n4"),
        message("user", "3+3?"),
    ], None),
}

# name -> (messages, tools, plain): plain conversations have no tools and no tool messages, so
# the formats --describe prints can render them too.
CONVERSATIONS = {name: (messages, None, True) for name, messages in PLAIN_CONVERSATIONS.items()}
CONVERSATIONS.update({name: (messages, tools, False) for name, (messages, tools) in TOOL_CONVERSATIONS.items()})


class RaisedByTemplate(Exception):
    pass


def hf_continue_final_message(rendered: str, final: str) -> str:
    """What transformers' apply_chat_template(continue_final_message=True) makes of a render
    without the generation prompt: the text cut right after the final message's content."""
    if final.strip() not in rendered:
        raise RaisedByTemplate("the final message is not in the rendered chat")
    at = rendered.rindex(final.strip())
    if rendered[at:at + len(final.lstrip())] == final:
        return rendered[:at + len(final.lstrip())]
    return rendered[:at + len(final.strip())]


class GenerationTag(Extension):
    """transformers' {% generation %} tag (AssistantTracker) without its mask bookkeeping:
    renders the body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def transformers_tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers replaces Jinja's tojson (which escapes HTML and sorts keys) with this.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def jinja_render(template: str, messages: list[dict], tools: list | None, generation_prompt: bool, bos: str,
                 eos: str) -> str:
    def raise_exception(text: str):
        raise RaisedByTemplate(text)

    def strftime_now(fmt: str) -> str:
        return datetime.datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = transformers_tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(template).render(messages=messages, tools=tools, documents=None,
                                            add_generation_prompt=generation_prompt, bos_token=bos, eos_token=eos)


class Checker:
    def __init__(self, pagedllm: str, work: Path):
        self.pagedllm = pagedllm
        self.work = work
        self.failures = 0
        self.comparisons = 0

    def run(self, args: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run([self.pagedllm, "chat-template", *args], capture_output=True)

    def check_source(self, label: str, source_args: list[str], template: str, bos: str, eos: str,
                     pass_tokens: bool = True, plain_only: bool = False) -> None:
        matched = rejected = 0
        for name, (messages, tools, plain) in CONVERSATIONS.items():
            if plain_only and not plain:
                continue
            messages_file = self.work / "messages.json"
            messages_file.write_text(json.dumps(messages, ensure_ascii=False), encoding="utf-8")
            tool_args = []
            if tools is not None:
                tools_file = self.work / "tools.json"
                tools_file.write_text(json.dumps(tools, ensure_ascii=False), encoding="utf-8")
                tool_args = ["--tools-json", str(tools_file)]
            # (generation prompt, continue the final message): the latter only after an answer.
            modes = [(True, False), (False, False)]
            final = messages[-1]
            if final["role"] == "assistant" and isinstance(final.get("content"), str) and final["content"].strip():
                modes.append((False, True))
            for generation_prompt, continue_final in modes:
                self.comparisons += 1
                raised = None
                try:
                    expected: str | None = jinja_render(template, messages, tools, generation_prompt, bos, eos)
                    if continue_final:
                        expected = hf_continue_final_message(expected, final["content"])
                except RaisedByTemplate as error:
                    expected, raised = None, str(error)
                except (TypeError, jinja2.exceptions.UndefinedError) as error:  # the template fails
                    expected, raised = None, ""
                args = [*source_args, "--messages-json", str(messages_file), *tool_args]
                if pass_tokens:
                    args += ["--bos", bos, "--eos", eos]
                mode = "continue_final_message" if continue_final else f"add_generation_prompt={generation_prompt}"
                if continue_final:
                    args.append("--continue-final-message")
                elif not generation_prompt:
                    args.append("--no-generation-prompt")
                result = self.run(args)
                if expected is None:
                    error = result.stderr.decode("utf-8", "replace")
                    if result.returncode == 0:
                        self.fail(label, name, mode, "Jinja raised, pagedllm rendered:\n"
                                  + repr(result.stdout.decode("utf-8", "replace")))
                    elif raised and not plain_only and raised not in error:
                        self.fail(label, name, mode, f"raise_exception({raised!r}), pagedllm said: {error!r}")
                    else:
                        rejected += 1
                    continue
                if result.returncode != 0:
                    self.fail(label, name, mode, "pagedllm failed: " + result.stderr.decode())
                    continue
                actual = result.stdout.decode("utf-8")
                if actual != expected:
                    self.fail(label, name, mode,
                              f"\n  jinja2:   {expected!r}\n  pagedllm: {actual!r}")
                else:
                    matched += 1
        print(f"{label:34s} {matched} renders identical, {rejected} rejected by both")

    def fail(self, label: str, conversation: str, mode: str, detail: str) -> None:
        self.failures += 1
        print(f"MISMATCH {label} / {conversation} / {mode}: {detail}")

    def check_template(self, label: str, template: str, bos: str, eos: str, describable: bool) -> None:
        template_file = self.work / f"{label}.jinja"
        template_file.write_text(template, encoding="utf-8")
        self.check_source(label, ["--template-file", str(template_file)], template, bos, eos)
        if describable:
            self.check_described(label, ["--template-file", str(template_file)], template, bos, eos)

    # The recognised format, written as a JSON user format and read back, renders the plain
    # conversations the same.
    def check_described(self, label: str, source_args: list[str], template: str, bos: str, eos: str) -> None:
        described = self.run([*source_args, "--describe"])
        if described.returncode != 0:
            self.failures += 1
            print(f"MISMATCH {label}: --describe failed: {described.stderr.decode()}")
            return
        format_file = self.work / f"{label}.format.json"
        format_file.write_bytes(described.stdout)
        self.check_source(f"{label} (as JSON format)", ["--template-file", str(format_file)], template, bos, eos,
                          plain_only=True)

    # Random templates of nested if / for blocks, set, comments, outputs and text made of spaces,
    # tabs and newlines, with every whitespace-control sign ("-", "+", none) on both sides of
    # every tag: trim_blocks, lstrip_blocks and "-" / "+" must compose exactly as in jinja2.
    def check_whitespace_control(self, count: int = 300, seed: int = 1) -> None:
        rng = random.Random(seed)
        texts = ["", " ", "  ", "\n", " \n", "\n  ", "a", " a ", "\t", "\n\n", "x\n  ", "  \n\t"]

        def tag(body: str) -> str:
            return "{%" + rng.choice(["", "", "-", "+"]) + f" {body} " + rng.choice(["", "", "-", "+"]) + "%}"

        def piece(depth: int) -> str:
            r = rng.random()
            if r < 0.3 or depth >= 3:
                return rng.choice(texts)
            if r < 0.45:
                return "{{" + rng.choice(["", "-"]) + " 'v' " + rng.choice(["", "-"]) + "}}"
            if r < 0.55:
                return "{#" + rng.choice(["", "-"]) + " c " + rng.choice(["", "-"]) + "#}"
            if r < 0.65:
                return tag("set q = 1")
            body = "".join(piece(depth + 1) for _ in range(rng.randint(0, 4)))
            if rng.random() < 0.5:
                return tag("for i in [1, 2]") + body + tag("endfor")
            otherwise = ""
            if rng.random() < 0.4:
                otherwise = tag("else") + "".join(piece(depth + 1) for _ in range(rng.randint(0, 3)))
            return tag("if " + rng.choice(["true", "false"])) + body + otherwise + tag("endif")

        messages = [message("user", "x")]
        messages_file = self.work / "messages.json"
        messages_file.write_text(json.dumps(messages))
        template_file = self.work / "whitespace.jinja"
        matched = 0
        for _ in range(count):
            template = "".join(piece(0) for _ in range(rng.randint(1, 6))) + rng.choice(["", "", "\n"])
            template_file.write_text(template)
            expected = jinja_render(template, messages, None, True, "", "")
            result = self.run(["--template-file", str(template_file), "--messages-json", str(messages_file)])
            self.comparisons += 1
            if result.returncode != 0 or result.stdout.decode() != expected:
                self.fail("whitespace control", repr(template), "", f"\n  jinja2:   {expected!r}\n  pagedllm: "
                          f"{result.stdout.decode()!r} {result.stderr.decode()!r}")
            else:
                matched += 1
        print(f"{'whitespace control':34s} {matched} of {count} random templates identical")

    # A template that does not parse is refused naming the file and the line, as jinja2 words it.
    def check_syntax_error(self) -> None:
        broken = self.work / "broken.jinja"
        broken.write_text("{% for m in messages %}\n{{ m.content }}\n{% endif %}")
        messages_file = self.work / "messages.json"
        messages_file.write_text(json.dumps(PLAIN_CONVERSATIONS["one user turn"]))
        result = self.run(["--template-file", str(broken), "--messages-json", str(messages_file)])
        error = result.stderr.decode()
        try:
            jinja2.Environment().from_string(broken.read_text())
            expected = "(jinja2 parsed it)"
        except jinja2.TemplateSyntaxError as syntax:
            expected = f"{broken}, line {syntax.lineno}: {syntax.message}"
        self.comparisons += 1
        if result.returncode == 0 or expected not in error:
            self.failures += 1
            print(f"MISMATCH syntax error: expected {expected!r}, got rc {result.returncode}: {error!r}")
        else:
            print(f"{'syntax error':34s} refused: {error.strip()[:110]}...")


def gguf_template(path: str) -> tuple[str, str, str]:
    import gguf  # only needed with --gguf

    reader = gguf.GGUFReader(path)
    template = reader.fields["tokenizer.chat_template"].contents()
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()

    def token(key: str) -> str:
        field = reader.fields.get(key)
        return tokens[int(field.contents())] if field is not None else ""

    return template, token("tokenizer.ggml.bos_token_id"), token("tokenizer.ggml.eos_token_id")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pagedllm", required=True, help="the pagedllm binary")
    parser.add_argument("--gguf", help="also check the chat template inside this GGUF file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pagedllm_chat_") as work_dir:
        checker = Checker(args.pagedllm, Path(work_dir))
        for label, (template, bos, eos, describable) in TEMPLATES.items():
            checker.check_template(label, template, bos, eos, describable)
        if args.gguf:
            template, bos, eos = gguf_template(args.gguf)
            name = Path(args.gguf).name
            # The GGUF's own BOS / EOS texts are pagedllm's defaults: pass none.
            checker.check_source(name, ["--gguf", args.gguf], template, bos, eos, pass_tokens=False)
            checker.check_described(name, ["--gguf", args.gguf], template, bos, eos)
        checker.check_whitespace_control()
        checker.check_syntax_error()
    if checker.failures:
        print(f"chat templates: {checker.failures} of {checker.comparisons} comparisons FAILED")
        return 1
    print(f"chat templates: all {checker.comparisons} comparisons identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
