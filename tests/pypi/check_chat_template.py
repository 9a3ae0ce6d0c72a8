#!/usr/bin/env python3
"""Cross-check `pagedllm chat-template` against Jinja2 rendering as Hugging Face does it.

    python tests/pypi/check_chat_template.py --pagedllm build/release/pagedllm [--gguf MODEL.gguf]

For each chat template below (the published templates of Qwen2, Qwen2.5, Llama 3, Llama 3.1,
a Llama 3.2-style date, Mistral v0.3 and v0.1, kept here as data; with --gguf also the template
inside that GGUF, e.g. SmolLM2's), renders a set of conversations with jinja2 under
transformers' settings (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
raise_exception, strftime_now; bos_token / eos_token / tools=None passed) and with pagedllm
(the template file is recognised by `--template-file`; the GGUF through `--gguf`; and the format
pagedllm recognised, saved with `--describe`, read back as a JSON user format), and compares
the texts exactly. A conversation the Jinja template rejects (raise_exception) must be rejected
by pagedllm too. Finally, a template of no known family must be refused with a message naming
the file.

Prints one line per template; exits 0 only when every comparison matches.
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:  # pragma: no cover - the PyPI tier installs it
    sys.exit("check_chat_template.py needs jinja2 (pip install jinja2)")

# --- the templates, as their models publish them (tokenizer_config.json "chat_template") ------

QWEN2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

QWEN25 = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

LLAMA3 = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% endif %}"
)

LLAMA31 = """{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\\n\\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\\n" }}
{{- "Today Date: " + date_string + "\\n\\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\\n\\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\\n\\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\\n\\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\\n\\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\\n\\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\\n\\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
            {{- "<|python_tag|>" + tool_call.name + ".call(" }}
            {%- for arg_name, arg_val in tool_call.arguments | items %}
                {{- arg_name + '="' + arg_val + '"' }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- endif %}
                {%- endfor %}
            {{- ")" }}
        {%- else  %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
            {{- '{"name": "' + tool_call.name + '", ' }}
            {{- '"parameters": ' }}
            {{- tool_call.arguments | tojson }}
            {{- "}" }}
        {%- endif %}
        {%- if builtin_tools is defined %}
            {#- This means we're in ipython mode #}
            {{- "<|eom_id|>" }}
        {%- else %}
            {{- "<|eot_id|>" }}
        {%- endif %}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

# Llama 3.2 takes today's date from strftime_now when the renderer provides it.
LLAMA32_DATE = LLAMA31.replace(
    """{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}""",
    """{%- if not date_string is defined %}
    {%- if strftime_now is defined %}
        {%- set date_string = strftime_now("%d %b %Y") %}
    {%- else %}
        {%- set date_string = "26 Jul 2024" %}
    {%- endif %}
{%- endif %}""",
)
assert LLAMA32_DATE != LLAMA31

MISTRAL_V03 = """{%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}

{#- This block checks for alternating user/assistant messages, skipping tool calling messages #}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS] [" }}
            {%- for tool in tools %}
                {%- set tool = tool.function %}
                {{- '{"type": "function", "function": {' }}
                {%- for key, val in tool.items() if key != "return" %}
                    {%- if val is string %}
                        {{- '"' + key + '": "' + val + '"' }}
                    {%- else %}
                        {{- '"' + key + '": ' + val|tojson }}
                    {%- endif %}
                    {%- if not loop.last %}
                        {{- ", " }}
                    {%- endif %}
                {%- endfor %}
                {{- "}}" }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- else %}
                    {{- "]" }}
                {%- endif %}
            {%- endfor %}
            {{- "[/AVAILABLE_TOOLS]" }}
            {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\\n\\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message.tool_calls is defined and message.tool_calls is not none %}
        {{- "[TOOL_CALLS] [" }}
        {%- for tool_call in message.tool_calls %}
            {%- set out = tool_call.function|tojson %}
            {{- out[:-1] }}
            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
            {{- ', "id": "' + tool_call.id + '"}' }}
            {%- if not loop.last %}
                {{- ", " }}
            {%- else %}
                {{- "]" + eos_token }}
            {%- endif %}
        {%- endfor %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}
        {%- if message.content is defined and message.content.content is defined %}
            {%- set content = message.content.content %}
        {%- else %}
            {%- set content = message.content %}
        {%- endif %}
        {{- '[TOOL_RESULTS] {"content": ' + content|string + ", " }}
        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}
            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
        {%- endif %}
        {{- '"call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
"""

# Mistral-7B-Instruct-v0.1 (as updated on the Hub): the system prompt joins the first user turn.
MISTRAL_V01 = """{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.first and system_message is defined %}
            {{- ' [INST] ' + system_message + '\\n\\n' + message['content'] + ' [/INST]' }}
        {%- else %}
            {{- ' [INST] ' + message['content'] + ' [/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'] + eos_token}}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') }}
    {%- endif %}
{%- endfor %}
"""

# The original v0.1 template (mistral-common's V1 string), which refuses system messages.
MISTRAL_V01_NO_SYSTEM = (
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != "
    "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}"
    "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
    "{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant "
    "roles are supported!') }}{% endif %}{% endfor %}"
)

TEMPLATES = {
    "qwen2": (QWEN2, "<|endoftext|>", "<|im_end|>"),
    "qwen2.5": (QWEN25, "<|endoftext|>", "<|im_end|>"),
    "llama3": (LLAMA3, "<|begin_of_text|>", "<|eot_id|>"),
    "llama3.1": (LLAMA31, "<|begin_of_text|>", "<|eot_id|>"),
    "llama3.2-date": (LLAMA32_DATE, "<|begin_of_text|>", "<|eot_id|>"),
    "mistral-v0.3": (MISTRAL_V03, "<s>", "</s>"),
    "mistral-v0.1": (MISTRAL_V01, "<s>", "</s>"),
    "mistral-v0.1-no-system": (MISTRAL_V01_NO_SYSTEM, "<s>", "</s>"),
}


def message(role: str, content: str) -> dict:
    return {"role": role, "content": content}


CONVERSATIONS = {
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


def jinja_render(template: str, messages: list[dict], generation_prompt: bool, bos: str, eos: str) -> str:
    def raise_exception(text: str):
        raise RaisedByTemplate(text)

    def strftime_now(fmt: str) -> str:
        return datetime.datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(template).render(messages=messages, add_generation_prompt=generation_prompt,
                                            bos_token=bos, eos_token=eos, tools=None)


class Checker:
    def __init__(self, pagedllm: str, work: Path):
        self.pagedllm = pagedllm
        self.work = work
        self.failures = 0
        self.comparisons = 0

    def run(self, args: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run([self.pagedllm, "chat-template", *args], capture_output=True)

    def check_source(self, label: str, source_args: list[str], template: str, bos: str, eos: str,
                     pass_tokens: bool = True) -> None:
        matched = rejected = 0
        for name, messages in CONVERSATIONS.items():
            messages_file = self.work / "messages.json"
            messages_file.write_text(json.dumps(messages, ensure_ascii=False), encoding="utf-8")
            # (generation prompt, continue the final message): the latter only after an answer.
            modes = [(True, False), (False, False)]
            if messages[-1]["role"] == "assistant" and messages[-1]["content"].strip():
                modes.append((False, True))
            for generation_prompt, continue_final in modes:
                self.comparisons += 1
                try:
                    expected: str | None = jinja_render(template, messages, generation_prompt, bos, eos)
                    if continue_final:
                        expected = hf_continue_final_message(expected, messages[-1]["content"])
                except RaisedByTemplate:
                    expected = None
                args = [*source_args, "--messages-json", str(messages_file)]
                if pass_tokens:
                    args += ["--bos", bos, "--eos", eos]
                mode = "continue_final_message" if continue_final else f"add_generation_prompt={generation_prompt}"
                if continue_final:
                    args.append("--continue-final-message")
                elif not generation_prompt:
                    args.append("--no-generation-prompt")
                result = self.run(args)
                if expected is None:
                    if result.returncode == 0:
                        self.fail(label, name, mode, "Jinja raised, pagedllm rendered:\n"
                                  + repr(result.stdout.decode("utf-8", "replace")))
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

    def check_template(self, label: str, template: str, bos: str, eos: str) -> None:
        template_file = self.work / f"{label}.jinja"
        template_file.write_text(template, encoding="utf-8")
        self.check_source(label, ["--template-file", str(template_file)], template, bos, eos)
        self.check_described(label, ["--template-file", str(template_file)], template, bos, eos)

    # The recognised format, written as a JSON user format and read back, renders the same.
    def check_described(self, label: str, source_args: list[str], template: str, bos: str, eos: str) -> None:
        described = self.run([*source_args, "--describe"])
        if described.returncode != 0:
            self.failures += 1
            print(f"MISMATCH {label}: --describe failed: {described.stderr.decode()}")
            return
        format_file = self.work / f"{label}.format.json"
        format_file.write_bytes(described.stdout)
        self.check_source(f"{label} (as JSON format)", ["--template-file", str(format_file)], template, bos, eos)

    def check_unknown_template(self) -> None:
        unknown = self.work / "unknown.jinja"
        unknown.write_text("{% for m in messages %}### {{ m['role'] }}: {{ m['content'] }}\n{% endfor %}")
        messages_file = self.work / "messages.json"
        messages_file.write_text(json.dumps(CONVERSATIONS["one user turn"]))
        result = self.run(["--template-file", str(unknown), "--messages-json", str(messages_file)])
        error = result.stderr.decode()
        ok = result.returncode != 0 and str(unknown) in error and "unrecognised chat template" in error \
            and "{% for m in messages %}### " in error
        self.comparisons += 1
        if not ok:
            self.failures += 1
            print(f"MISMATCH unknown template: expected a refusal naming the file, got rc "
                  f"{result.returncode}: {error!r}")
        else:
            print(f"{'unknown template':34s} refused: {error.strip()[:110]}...")


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
        for label, (template, bos, eos) in TEMPLATES.items():
            checker.check_template(label, template, bos, eos)
        if args.gguf:
            template, bos, eos = gguf_template(args.gguf)
            name = Path(args.gguf).name
            # The GGUF's own BOS / EOS texts are pagedllm's defaults: pass none.
            checker.check_source(name, ["--gguf", args.gguf], template, bos, eos, pass_tokens=False)
            checker.check_described(name, ["--gguf", args.gguf], template, bos, eos)
        checker.check_unknown_template()
    if checker.failures:
        print(f"chat templates: {checker.failures} of {checker.comparisons} comparisons FAILED")
        return 1
    print(f"chat templates: all {checker.comparisons} comparisons identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
