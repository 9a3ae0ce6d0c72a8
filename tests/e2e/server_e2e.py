#!/usr/bin/env python3
"""End to end through `pagedllm serve` over raw HTTP (standard library only): every endpoint, the
OpenAI response shapes, streaming, stop strings, logprobs, n > 1, structured outputs (regex,
choice, JSON schema, JSON object; bad constraints refused), tool calling (required and named
constrained to the tools' schemas; auto read back with a Hermes template), a bad-input suite of hostile
requests (each with its status and error body, the server serving on), clients that disconnect
mid-stream (their blocks freed, everyone else answered in full), `pagedllm bench` against it,
the API key, a Jinja chat template's errors, and a graceful shutdown (drain, timeout, second
signal).

    tests/e2e/server_e2e.py PAGEDLLM_BINARY
"""
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

BINARY = sys.argv[1]
FAILURES = []


def check(condition, what):
    if condition:
        print(f"ok: {what}")
    else:
        print(f"FAILED: {what}")
        FAILURES.append(what)


class Server:
    """The real binary on an ephemeral port, with the tiny model in a private cache."""

    def __init__(self, *extra, threads=1):
        self.cache = tempfile.mkdtemp(prefix="pagedllm_e2e_")
        env = dict(os.environ, PAGEDLLM_CACHE=self.cache)
        # Append mode (O_APPEND): the child shares this file description, and our seek to read
        # the log must not move where the child writes.
        self.log = open(os.path.join(self.cache, "serve.log"), "a+")
        self.process = subprocess.Popen([BINARY, "serve", "--port", "0", "--threads", str(threads), *extra],
                                        stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.port = None
        deadline = time.time() + 120
        while time.time() < deadline:
            self.log.seek(0)
            text = self.log.read()
            match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
            if match and "ready:" in text:
                self.port = int(match.group(1))
                break
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {text}")
            time.sleep(0.1)
        if self.port is None:
            raise RuntimeError("the server did not become ready in 120 s")

    def request(self, method, path, body=None, headers=None, timeout=60):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        connection.request(method, path, body=data, headers=headers or {"Content-Type": "application/json"})
        response = connection.getresponse()
        payload = response.read()
        connection.close()
        return response.status, payload

    def post(self, path, body, **kwargs):
        status, payload = self.request("POST", path, body, **kwargs)
        try:
            return status, json.loads(payload)
        except ValueError:
            return status, payload

    def stream(self, path, body):
        """The SSE events of a streaming request, parsed; the last one is [DONE]."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        connection.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        events = []
        for line in response.read().decode("utf-8", "replace").split("\n"):
            if line.startswith("data: "):
                events.append(line[6:] if line[6:] == "[DONE]" else json.loads(line[6:]))
        connection.close()
        return response.status, response.getheader("Content-Type"), events

    def metrics(self):
        status, payload = self.request("GET", "/metrics")
        values = {}
        for line in payload.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)

    def num_threads(self):
        return len(os.listdir(f"/proc/{self.process.pid}/task"))


def features(server):
    status, body = server.request("GET", "/health")
    check(status == 200, "/health is 200 once loaded")
    status, body = server.request("GET", "/version")
    check(status == 200 and json.loads(body)["version"].count(".") == 2, f"/version: {body!r}")
    status, body = server.request("GET", "/v1/models")
    models = json.loads(body)
    check(status == 200 and models["data"][0]["id"] == "tiny", "/v1/models lists the served model")

    status, body = server.post("/v1/completions", {"model": "tiny", "prompt": "Once upon a time", "max_tokens": 12,
                                                   "temperature": 0})
    check(status == 200 and body["object"] == "text_completion", "completion: 200, text_completion")
    check(body["usage"]["completion_tokens"] == 12 and body["choices"][0]["finish_reason"] == "length",
          "completion: 12 tokens, finish_reason length")
    check(body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + 12, "completion: usage totals")
    greedy_text = body["choices"][0]["text"]

    # A stop string cut from the greedy output: the text ends before it, finish_reason stop.
    cut = next((i for i in range(3, len(greedy_text) - 2) if greedy_text[i] != " " and greedy_text[i].isprintable()), None)
    if cut is not None:
        stop = greedy_text[cut:cut + 2]
        status, body = server.post("/v1/completions", {"model": "tiny", "prompt": "Once upon a time", "max_tokens": 12,
                                                       "temperature": 0, "stop": [stop]})
        expected = greedy_text[:greedy_text.find(stop)]
        check(status == 200 and body["choices"][0]["text"] == expected and body["choices"][0]["finish_reason"] == "stop",
              f"stop string {stop!r}: text {body['choices'][0]['text']!r} == {expected!r}, finish_reason stop")
        status, body = server.post("/v1/completions", {"model": "tiny", "prompt": "Once upon a time", "max_tokens": 12,
                                                       "temperature": 0, "stop": [stop],
                                                       "include_stop_str_in_output": True})
        check(status == 200 and body["choices"][0]["text"] == expected + stop,
              f"include_stop_str_in_output: the text ends with {stop!r}")
        _, _, events = server.stream("/v1/completions", {"model": "tiny", "prompt": "Once upon a time", "max_tokens": 12,
                                                         "temperature": 0, "stop": [stop], "stream": True})
        streamed = "".join(e["choices"][0]["text"] for e in events[:-1] if e["choices"])
        check(streamed == expected, f"stop string while streaming: {streamed!r} == {expected!r} (never sent, then cut)")

    status, body = server.post("/v1/completions", {"model": "tiny", "prompt": ["a b c", "d e f"], "n": 2,
                                                   "max_tokens": 5, "seed": 7})
    check(status == 200 and sorted(c["index"] for c in body["choices"]) == [0, 1, 2, 3],
          "two prompts x n=2: four choices indexed 0..3")
    check(body["usage"]["completion_tokens"] == 20, "two prompts x n=2: 20 completion tokens")

    # vLLM's beam search extra: n beams, best first; the greedy continuation is among the beams'
    # starts (the first step keeps the top tokens), and a stream sends the ranked beams at the end.
    beam_body = {"model": "tiny", "prompt": "Once upon a time", "max_tokens": 6, "n": 3, "use_beam_search": True,
                 "ignore_eos": True}
    status, body = server.post("/v1/completions", beam_body)
    check(status == 200 and sorted(c["index"] for c in body["choices"]) == [0, 1, 2]
          and body["usage"]["completion_tokens"] == 18, "beam search: n=3 beams, 18 completion tokens")
    beams = [c["text"] for c in sorted(body["choices"], key=lambda c: c["index"])]
    check(len(set(beams)) == 3, f"beam search: three distinct beams {beams!r}")
    _, _, events = server.stream("/v1/completions", dict(beam_body, stream=True))
    streamed = {}
    for event in events[:-1]:
        for choice in event["choices"]:
            streamed[choice["index"]] = streamed.get(choice["index"], "") + choice["text"]
    check([streamed.get(i) for i in range(3)] == beams, "beam search streamed: the same ranked beams")

    # Greedy, so that the tokens do not depend on the request's place in this run: the legacy
    # format's top_logprobs are maps by text, and two alternatives that decode alike would merge.
    status, body = server.post("/v1/completions", {"model": "tiny", "prompt": [5, 6, 7, 8], "max_tokens": 4,
                                                   "logprobs": 3, "temperature": 0})
    logprobs = body["choices"][0]["logprobs"] if status == 200 else None
    check(status == 200 and len(logprobs["tokens"]) == 4 and all(len(t) == 3 for t in logprobs["top_logprobs"]),
          "completion logprobs: 4 tokens, 3 alternatives each")
    check(all(lp <= 0 for lp in logprobs["token_logprobs"]), "completion logprobs are log-probabilities")
    # Fields this server does not act on are refused, not ignored: echo with logprobs (OpenAI then
    # scores the prompt too), vLLM's structural tags and prompt logprobs, and unknown fields.
    for route, extra, param in [
            ("/v1/completions", {"logprobs": 3, "echo": True}, "echo"),
            ("/v1/completions", {"structural_tag": '{}'}, "structural_tag"),
            ("/v1/chat/completions", {"prompt_logprobs": 1}, "prompt_logprobs"),
            ("/v1/chat/completions", {"structured_outputs": {"structural_tag": '{}'}}, "structured_outputs.structural_tag"),
            ("/v1/chat/completions", {"temprature": 0.5}, "temprature")]:
        body = dict({"model": "tiny", "max_tokens": 2}, **extra)
        body.update({"prompt": "Hi"} if route == "/v1/completions" else {"messages": [{"role": "user", "content": "Hi"}]})
        status, reply = server.post(route, body)
        check(status == 400 and reply["error"]["param"] == param, f"{route} refuses {param}: {status} {reply}")

    status, body = server.post("/v1/chat/completions", {"model": "tiny", "messages": [{"role": "user", "content": "Hi"}],
                                                        "max_tokens": 6, "logprobs": True, "top_logprobs": 2})
    check(status == 200 and body["object"] == "chat.completion" and body["choices"][0]["message"]["role"] == "assistant",
          "chat: 200, chat.completion, assistant message")
    content = body["choices"][0]["logprobs"]["content"]
    check(len(content) == 6 and all(len(entry["top_logprobs"]) == 2 and "bytes" in entry for entry in content),
          "chat logprobs: 6 entries with 2 alternatives and bytes")

    status, content_type, events = server.stream("/v1/chat/completions", {
        "model": "tiny", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 7, "stream": True,
        "stream_options": {"include_usage": True}})
    check(status == 200 and content_type.startswith("text/event-stream"), "chat stream: text/event-stream")
    check(events[-1] == "[DONE]" and events[0]["choices"][0]["delta"].get("role") == "assistant",
          "chat stream: starts with the role, ends with [DONE]")
    check(events[-2]["choices"] == [] and events[-2]["usage"]["completion_tokens"] == 7,
          "chat stream: the usage chunk before [DONE]")
    finishes = [e["choices"][0]["finish_reason"] for e in events[1:-2]]
    check(finishes[-1] == "length" and all(f is None for f in finishes[:-1]), "chat stream: finish_reason on the last")

    # logit_bias (+100 forces a token even greedily) and vLLM's allowed_token_ids (one id allowed:
    # every draw is it): the text is that token four times over.
    status, body = server.post("/tokenize", {"prompt": " dragon"})
    forced = body["tokens"][-1]
    status, detok = server.post("/detokenize", {"tokens": [forced] * 4})
    for extra in ({"temperature": 0, "logit_bias": {str(forced): 100}},
                  {"temperature": 1, "seed": 3, "allowed_token_ids": [forced]}):
        status, body = server.post("/v1/completions", dict({"model": "tiny", "prompt": "Once upon a time",
                                                            "max_tokens": 4, "ignore_eos": True}, **extra))
        check(status == 200 and body["choices"][0]["text"] == detok["prompt"],
              f"{list(extra)[-1]}: the text is token {forced} four times ({body['choices'][0]['text']!r})")

    # vLLM's bad_words beat a +100 bias: the forced token never comes.
    forced_text = detok["prompt"][:len(detok["prompt"]) // 4]
    status, body = server.post("/v1/completions", {"model": "tiny", "prompt": "Once upon a time", "max_tokens": 4,
                                                   "ignore_eos": True, "temperature": 0, "logprobs": 0,
                                                   "logit_bias": {str(forced): 100}, "bad_words": [forced_text]})
    tokens = body["choices"][0]["logprobs"]["tokens"] if status == 200 else None
    check(status == 200 and forced_text not in tokens,
          f"bad_words [{forced_text!r}] with logit_bias +100 on it: never sampled ({tokens!r})")

    # vLLM's continue_final_message: the prompt ends inside the assistant's message, so it is
    # shorter than the closed turn plus a fresh generation prompt; /tokenize takes the same fields.
    prefilled = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Once upon"}]
    _, closed = server.post("/tokenize", {"messages": prefilled})
    _, open_turn = server.post("/tokenize", {"messages": prefilled, "add_generation_prompt": False,
                                             "continue_final_message": True})
    status, body = server.post("/v1/chat/completions", {"model": "tiny", "messages": prefilled, "max_tokens": 3,
                                                        "add_generation_prompt": False, "continue_final_message": True})
    check(status == 200 and body["usage"]["prompt_tokens"] == open_turn["count"] < closed["count"],
          f"continue_final_message: {open_turn['count']} prompt tokens, fewer than {closed['count']} with the turn closed")
    status, body = server.post("/v1/chat/completions", {"model": "tiny", "messages": [{"role": "user", "content": "Hi"}],
                                                        "add_generation_prompt": False, "continue_final_message": True})
    check(status == 400 and body["error"]["param"] == "messages",
          "continue_final_message after a user message: 400 naming messages")

    # vLLM's truncate_prompt_tokens keeps the prompt's last tokens: the same greedy text as the
    # tail given alone.
    long_prompt = list(range(300, 400)) * 3  # 300 token ids
    tail = {"model": "tiny", "prompt": long_prompt[-20:], "max_tokens": 5, "temperature": 0}
    status, alone = server.post("/v1/completions", tail)
    status, body = server.post("/v1/completions", dict(tail, prompt=long_prompt, truncate_prompt_tokens=20))
    check(status == 200 and body["usage"]["prompt_tokens"] == 20 and body["choices"][0]["text"] == alone["choices"][0]["text"],
          "truncate_prompt_tokens=20: 20 prompt tokens, the text of the tail alone")

    status, body = server.post("/tokenize", {"prompt": "Hello world"})
    check(status == 200 and body["count"] == len(body["tokens"]) > 0, "/tokenize counts its tokens")
    status, detok = server.post("/detokenize", {"tokens": body["tokens"]})
    check(status == 200 and "Hello world" in detok["prompt"], "/detokenize gives the text back")

    metrics = server.metrics()
    check(metrics.get('pagedllm:request_success_total{model_name="tiny",finished_reason="length"}', 0) >= 3,
          "/metrics counts finished requests")
    check(any(name.startswith("pagedllm:time_to_first_token_seconds_bucket") for name in metrics),
          "/metrics has the TTFT histogram")


def read_until_closed(sock):
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def stream_raw(port, version, body):
    """A streaming completion over a raw socket in HTTP/`version`: (head, body) once the server closes."""
    payload = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(f"POST /v1/completions HTTP/{version}\r\nHost: x\r\nContent-Type: application/json\r\n"
                 f"Connection: close\r\nContent-Length: {len(payload)}\r\n\r\n".encode() + payload)
    data = read_until_closed(sock)
    sock.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    return head.decode("latin-1"), rest


def protocol(server):
    """HTTP/1.0 streaming, OPTIONS, /v1/models/{id}, 405 with Allow, and --threads honoured."""
    # --threads 1: the main thread, one HTTP I/O thread and the engine loop; no OpenMP helper,
    # although OpenMP alone would start one per core on the engine thread.
    check(server.num_threads() == 3, f"--threads 1: 3 threads in the server after serving ({server.num_threads()})")

    request = {"model": "tiny", "prompt": "Once upon a time", "max_tokens": 5, "temperature": 0, "stream": True}
    head, body = stream_raw(server.port, "1.0", request)
    check("200 OK" in head and "Transfer-Encoding" not in head and "Connection: close" in head,
          "HTTP/1.0 stream: 200, no chunked coding (RFC 9112), Connection: close")
    events = [line[6:] for line in body.decode().split("\n") if line.startswith("data: ")]
    check(len(events) >= 2 and events[-1] == "[DONE]" and json.loads(events[0])["object"] == "text_completion",
          "HTTP/1.0 stream: the events as sent, ended by [DONE] and the close")
    head, body = stream_raw(server.port, "1.1", request)
    check("Transfer-Encoding: chunked" in head and body.endswith(b"0\r\n\r\n"), "HTTP/1.1 stream: still chunked")

    status, body = server.request("GET", "/v1/models/tiny")
    model = json.loads(body)
    check(status == 200 and model["id"] == "tiny" and model["object"] == "model", "GET /v1/models/tiny: the model")
    status, body = server.request("GET", "/v1/models/gpt-5")
    check(status == 404 and json.loads(body)["error"]["code"] == "model_not_found", "GET /v1/models/gpt-5: 404")

    # vLLM's prompt_tokens_total counts whole prompts, prefix-cache hits included; the computed
    # count has its own name.
    prompt = list(range(300, 380))  # 80 token ids: whole blocks the second request finds cached
    before = server.metrics()
    for _ in range(2):
        server.post("/v1/completions", {"model": "tiny", "prompt": prompt, "max_tokens": 2, "temperature": 0})
    after = server.metrics()
    key = 'pagedllm:prompt_tokens_total{model_name="tiny"}'
    computed = 'pagedllm:prompt_tokens_computed_total{model_name="tiny"}'
    check(after[key] - before[key] == 160, f"prompt_tokens_total: +160 for two 80-token prompts ({after[key] - before[key]})")
    check(after[computed] - before[computed] < 160,
          f"prompt_tokens_computed_total: fewer, the second prompt hit the cache ({after[computed] - before[computed]})")

    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("OPTIONS", "/v1/chat/completions")
    response = connection.getresponse()
    response.read()
    check(response.status == 200 and response.getheader("Allow") == "POST, OPTIONS",
          f"OPTIONS /v1/chat/completions: 200, Allow: POST, OPTIONS ({response.status})")
    connection.request("OPTIONS", "/v1/chat/completions", headers={
        "Origin": "https://a.example", "Access-Control-Request-Method": "POST"})
    response = connection.getresponse()
    response.read()
    check(response.status == 200 and response.getheader("Access-Control-Allow-Origin") is None,
          "a preflight without --allowed-origins: no cross-origin access granted")
    connection.request("DELETE", "/v1/models")
    response = connection.getresponse()
    response.read()
    check(response.status == 405 and response.getheader("Allow") == "GET, HEAD, OPTIONS",
          "DELETE /v1/models: 405 with Allow")
    connection.close()


def cors_and_full_queue():
    """--allowed-origins (vLLM's CORS flags), Retry-After on a full queue, and --threads 2."""
    server = Server("--allowed-origins", '["https://a.example"]', "--max-pending-requests", "1", threads=2)
    try:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        for origin, status, allowed in (("https://a.example", 200, "https://a.example"),
                                        ("https://evil.example", 400, None)):
            connection.request("OPTIONS", "/v1/completions", headers={
                "Origin": origin, "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type, authorization"})
            response = connection.getresponse()
            response.read()
            check(response.status == status and response.getheader("Access-Control-Allow-Origin") == allowed,
                  f"preflight from {origin}: {response.status}, Access-Control-Allow-Origin "
                  f"{response.getheader('Access-Control-Allow-Origin')}")
        connection.request("POST", "/v1/completions", body=json.dumps({"model": "tiny", "prompt": "hi", "max_tokens": 2}),
                           headers={"Content-Type": "application/json", "Origin": "https://a.example"})
        response = connection.getresponse()
        response.read()
        check(response.status == 200 and response.getheader("Access-Control-Allow-Origin") == "https://a.example",
              "a request from an allowed origin: its answer names the origin")
        connection.close()
        # --threads 2: one OpenMP helper beside the engine thread, now that a step has run.
        check(server.num_threads() == 4, f"--threads 2: 4 threads in the server ({server.num_threads()})")

        # One request pending at most: a long stream holds the place, the next one gets 503 + Retry-After.
        sock, _ = open_stream(server.port,
                              {"model": "tiny", "prompt": "Tell me", "max_tokens": 1500, "ignore_eos": True})
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        connection.request("POST", "/v1/completions", body=json.dumps({"model": "tiny", "prompt": "hi", "max_tokens": 2}),
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        error = json.loads(response.read())
        check(response.status == 503 and response.getheader("Retry-After") == "1" and "queue is full" in
              error["error"]["message"], f"a full queue: 503 with Retry-After: 1 ({response.status})")
        connection.close()
        sock.close()
    finally:
        server.stop()


def raw_exchange(port, payload, delay=0.0):
    """Sends raw bytes (byte by byte with `delay`), returns (status, body)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    if delay:
        for byte in payload:
            sock.sendall(bytes([byte]))
            time.sleep(delay)
    else:
        sock.sendall(payload)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            break
        data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        match = re.search(rb"Content-Length: (\d+)", head)
        if match and len(rest) >= int(match.group(1)):
            break
    sock.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/1.1") else 0
    return status, rest


def bad_input(server):
    base = {"model": "tiny", "prompt": "hi", "max_tokens": 4}
    cases = [  # (description, path, body, status, param)
        ("broken JSON", "/v1/completions", b'{"model": "tiny", "prompt": ', 400, None),
        ("top level not an object", "/v1/completions", b"[1, 2]", 400, None),
        ("invalid UTF-8", "/v1/completions", b'{"model": "tiny", "prompt": "\xff\xfe"}', 400, None),
        ("no model", "/v1/completions", {"prompt": "hi"}, 400, "model"),
        ("unknown model", "/v1/completions", dict(base, model="gpt-5"), 404, None),
        ("max_tokens a string", "/v1/completions", dict(base, max_tokens="ten"), 400, "max_tokens"),
        ("negative max_tokens", "/v1/completions", dict(base, max_tokens=-5), 400, "max_tokens"),
        ("huge n", "/v1/completions", dict(base, n=100000), 400, "n"),
        ("temperature out of range", "/v1/completions", dict(base, temperature=7), 400, "temperature"),
        ("top_p zero", "/v1/completions", dict(base, top_p=0), 400, "top_p"),
        ("presence_penalty out of range", "/v1/completions", dict(base, presence_penalty=3), 400, "presence_penalty"),
        ("stop an integer", "/v1/completions", dict(base, stop=5), 400, "stop"),
        ("empty stop string", "/v1/completions", dict(base, stop=[""]), 400, "stop"),
        ("empty prompt list", "/v1/completions", dict(base, prompt=[]), 400, "prompt"),
        ("token id outside the vocabulary", "/v1/completions", dict(base, prompt=[10 ** 9]), 400, "prompt"),
        ("logit_bias outside the vocabulary", "/v1/completions", dict(base, logit_bias={"1000000": 5}), 400,
         "logit_bias"),
        ("logit_bias key not a token id", "/v1/chat/completions",
         {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "logit_bias": {"hello": 1}}, 400,
         "logit_bias"),
        ("empty allowed_token_ids", "/v1/completions", dict(base, allowed_token_ids=[]), 400, "allowed_token_ids"),
        ("logprobs above 5", "/v1/completions", dict(base, logprobs=9), 400, "logprobs"),
        ("stream_options without stream", "/v1/completions", dict(base, stream_options={"include_usage": True}), 400,
         "stream_options"),
        ("prompt too long", "/v1/completions", dict(base, prompt="word " * 3000), 400, "prompt"),
        ("max_tokens beyond the context", "/v1/completions", dict(base, max_tokens=100000), 400, "prompt"),
        ("chat without messages", "/v1/chat/completions", {"model": "tiny"}, 400, "messages"),
        ("chat with a bad role", "/v1/chat/completions",
         {"model": "tiny", "messages": [{"role": "wizard", "content": "hi"}]}, 400, None),
        ("chat top_logprobs without logprobs", "/v1/chat/completions",
         {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2}, 400, "top_logprobs"),
        ("chat with tools", "/v1/chat/completions",
         {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]}, 400,
         "tools"),
        ("detokenize a string", "/detokenize", {"tokens": "abc"}, 400, "tokens"),
    ]
    for description, path, body, status, param in cases:
        got_status, got = server.post(path, body)
        error = got.get("error", {}) if isinstance(got, dict) else {}
        shaped = all(key in error for key in ("message", "type", "param", "code"))
        check(got_status == status and shaped and (param is None or str(error.get("param")).startswith(param)),
              f"bad input: {description}: {got_status} (expected {status}), param {error.get('param')!r}, "
              f"message {error.get('message', '')[:100]!r}")
    status, body = server.request("GET", "/v1/nowhere")
    check(status == 404 and "error" in json.loads(body), "unknown route: 404 with an error body")
    status, body = server.request("GET", "/v1/completions")
    check(status == 405, "GET on a POST route: 405")
    status, body = server.post("/v1/completions", dict(base, priority=1))
    check(status == 400 and body["error"]["param"] == "priority",
          "a priority under --scheduling-policy fcfs: 400 naming priority")
    for path in (b"/health", b"/v1/models"):
        status, body = raw_exchange(server.port, b"HEAD " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        check(status == 200 and body == b"", f"HEAD {path.decode()}: 200, headers only")
    status, body = raw_exchange(server.port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 10485760\r\n\r\n")
    check(status == 413 and b"exceeds" in body, "a 10 MB body: 413 before it is read")
    status, body = raw_exchange(server.port, b"GARBAGE\r\n\r\n")
    check(status == 400, "a malformed request line: 400")
    request = json.dumps({"model": "tiny", "prompt": "hi", "max_tokens": 2}).encode()
    payload = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
               + str(len(request)).encode() + b"\r\n\r\n" + request)
    status, body = raw_exchange(server.port, payload, delay=0.002)
    check(status == 200 and json.loads(body)["usage"]["completion_tokens"] == 2,
          "headers and body sent byte by byte: served")
    status, _ = server.request("GET", "/health")
    check(status == 200, "after the hostile requests the server is healthy")


def disconnects(server, num_clients=200, num_dropping=20):
    """num_clients stream at once; num_dropping of them hang up after their first chunk."""
    results = [None] * num_clients

    def client(index):
        drop = index % (num_clients // num_dropping) == 0
        # Those that hang up ask for far more than they will read: only an abort ends them early.
        body = json.dumps({"model": "tiny", "prompt": "Tell me a story", "max_tokens": 1500 if drop else 48,
                           "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}}).encode()
        try:
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=120)
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            data = b""
            while b"data: [DONE]" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
                if drop and b'"text"' in data:
                    sock.close()  # mid-stream
                    results[index] = "dropped"
                    return
            sock.close()
            usage = re.findall(rb'"completion_tokens":(\d+)', data)
            results[index] = ("done", int(usage[-1]) if usage else -1, b"data: [DONE]" in data)
        except OSError as error:
            results[index] = ("error", str(error))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(num_clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    completed = [r for r in results if isinstance(r, tuple) and r[0] == "done"]
    dropped = [r for r in results if r == "dropped"]
    check(len(dropped) == num_dropping, f"disconnects: {len(dropped)} clients dropped mid-stream")
    short = [r for r in completed if not (r[1] == 48 and r[2])]
    check(len(completed) == num_clients - num_dropping and not short,
          f"disconnects: every other client ({len(completed)}) got all 48 tokens and [DONE] (short: {short[:3]})")
    deadline = time.time() + 10
    metrics = server.metrics()
    while time.time() < deadline and metrics['pagedllm:num_requests_running{model_name="tiny"}'] > 0:
        time.sleep(0.1)
        metrics = server.metrics()
    check(metrics['pagedllm:kv_cache_usage_perc{model_name="tiny"}'] == 0.0 and
          metrics['pagedllm:num_requests_running{model_name="tiny"}'] == 0,
          "disconnects: KV usage back to 0 and nothing running (no leaked block)")
    check(metrics['pagedllm:request_success_total{model_name="tiny",finished_reason="abort"}'] >= num_dropping,
          "disconnects: the dropped requests were aborted")


def bench(server):
    """`pagedllm bench` against the server: every request answered, the report as replay's."""
    out = os.path.join(server.cache, "bench.json")
    result = subprocess.run([BINARY, "bench", "--base-url", f"http://127.0.0.1:{server.port}", "--dataset", "random",
                             "--num-prompts", "60", "--input-len", "16", "--output-len", "8", "--request-rate", "200",
                             "--max-concurrency", "16", "--goodput", "ttft:60000", "-q", "-o", out],
                            capture_output=True, text=True, timeout=300)
    ran = result.returncode == 0 and "Serving Benchmark Result" in result.stdout
    check(ran, "bench ran and printed the report" + ("" if ran else f" (exit {result.returncode}: {result.stderr[-300:]})"))
    with open(out) as file:
        report = json.load(file)
    metrics = report["metrics"]
    check(metrics["completed"] == 60 and metrics["failed"] == 0, "bench: 60 of 60 completed")
    check(metrics["total_output_tokens"] == 480, "bench: 8 output tokens each (ignore_eos)")
    check(all(r["success"] and r["ttft_ms"] <= r["e2el_ms"] for r in report["requests"]), "bench: TTFT <= E2EL each")
    # Token-id prompts to the chat endpoint: one error before anything is sent, not one per request.
    result = subprocess.run([BINARY, "bench", "--base-url", f"http://127.0.0.1:{server.port}", "--dataset", "random",
                             "--endpoint", "/v1/chat/completions", "--num-prompts", "50", "-q"],
                            capture_output=True, text=True, timeout=60)
    lines = result.stderr.strip().splitlines()
    check(result.returncode != 0 and len(lines) == 1 and "--dataset random" in lines[0] and "rejected" not in lines[0],
          f"bench --dataset random to the chat endpoint: one upfront error ({lines[:3]!r})")


def api_key():
    server = Server("--api-key", "sesame")
    try:
        status, body = server.post("/v1/completions", {"model": "tiny", "prompt": "hi", "max_tokens": 2})
        check(status == 401 and body["error"]["type"] == "authentication_error", "no API key: 401")
        status, body = server.post("/v1/completions", {"model": "tiny", "prompt": "hi", "max_tokens": 2},
                                   headers={"Authorization": "Bearer wrong", "Content-Type": "application/json"})
        check(status == 401, "a wrong API key: 401")
        status, body = server.post("/v1/completions", {"model": "tiny", "prompt": "hi", "max_tokens": 2},
                                   headers={"Authorization": "Bearer sesame", "Content-Type": "application/json"})
        check(status == 200, "the right API key: 200")
        status, _ = server.request("GET", "/health")
        check(status == 200, "/health needs no key")
    finally:
        server.stop()


def priority_scheduling():
    server = Server("--scheduling-policy", "priority")
    try:
        status, body = server.post("/v1/completions", {"model": "tiny", "prompt": "hi", "max_tokens": 2, "priority": -5})
        check(status == 200 and body["usage"]["completion_tokens"] == 2, "--scheduling-policy priority: priority served")
    finally:
        server.stop()


def server_with_template(name, template):
    """A server whose --chat-template is this Jinja text (written to a file of its own)."""
    path = os.path.join(tempfile.mkdtemp(prefix=f"pagedllm_e2e_{name}_"), f"{name}.jinja")
    with open(path, "w") as out:
        out.write(template)
    return Server("--chat-template", path)


def jinja_chat_template():
    """A Jinja --chat-template file is run; what it raises reaches the client as 400 with the
    template's own message, and a template that fails reading a message answers 400 naming the line."""
    server = server_with_template("strict", "{% for m in messages %}{% if m.role == 'system' %}"
                                  "{{ raise_exception('System role not supported') }}"
                                  "{% endif %}{% if m.content == 'nested' %}{{ m.meta.x }}{% endif %}"
                                  "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                                  "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    try:
        chat = {"model": "tiny", "max_tokens": 2}
        status, body = server.post("/v1/chat/completions", dict(chat, messages=[{"role": "user", "content": "Hi"}]))
        check(status == 200 and body["usage"]["completion_tokens"] == 2, "a Jinja --chat-template renders a chat")
        status, body = server.post("/v1/chat/completions", dict(chat, messages=[
            {"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}]))
        check(status == 400 and body["error"]["message"] == "System role not supported"
              and body["error"]["type"] == "invalid_request_error", "raise_exception: 400 with the template's message")
        status, body = server.post("/v1/chat/completions", dict(chat, messages=[{"role": "user", "content": "nested"}]))
        check(status == 400 and body["error"]["message"] ==
              "chat template, line 1: 'dict object' has no attribute 'meta'",
              "a template that fails: 400 with jinja2's message and the line")
    finally:
        server.stop()


def open_stream(port, body):
    """A streaming completion over a raw socket, once its first text arrived: (socket, bytes read)."""
    payload = json.dumps(dict(body, stream=True)).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=120)
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload)
    data = b""
    while b'"text"' not in data:
        data += sock.recv(65536)
    return sock, data


def read_stream_end(sock, data):
    while b"data: [DONE]" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    sock.close()
    return data


# Four samples of 2,000 tokens take a few seconds on the tiny model (longer under the sanitizers).
LONG = {"model": "tiny", "prompt": "Tell me", "max_tokens": 2000, "ignore_eos": True, "n": 4}
ENDLESS = dict(LONG, n=64)  # a minute or more


def graceful_shutdown():
    """SIGTERM drains: /health and new requests 503 at once, the stream in flight completes, exit 0.
    A drain that outlasts --shutdown-timeout ends the rest with the shutdown error; a second SIGTERM
    stops at once."""
    server = Server("--shutdown-timeout", "300")
    sock, data = open_stream(server.port, LONG)
    server.process.terminate()
    health = None
    deadline = time.time() + 5
    while time.time() < deadline and health != 503:
        health, _ = server.request("GET", "/health")
    check(health == 503, "SIGTERM: /health turns 503 while the stream is in flight")
    status, body = server.post("/v1/completions", {"model": "tiny", "prompt": "hi", "max_tokens": 2})
    check(status == 503 and "shutting down" in body["error"]["message"],
          f"SIGTERM: a new request gets 503 while draining: {status}")
    data = read_stream_end(sock, data)
    check(b"shutting down" not in data and data.count(b'"finish_reason":"length"') == 4 and b"data: [DONE]" in data,
          "SIGTERM: the stream in flight runs to completion (4 samples, length)")
    check(server.process.wait(timeout=60) == 0, "SIGTERM: the server exits with status 0 after the drain")

    server = Server("--shutdown-timeout", "1")
    sock, data = open_stream(server.port, ENDLESS)
    start = time.time()
    server.process.terminate()
    data = read_stream_end(sock, data)
    check(b"shutting down" in data and b"data: [DONE]" in data,
          "--shutdown-timeout 1: the unfinished stream gets the shutdown error and [DONE]")
    check(server.process.wait(timeout=30) == 0 and time.time() - start < 20,
          f"--shutdown-timeout 1: exit 0 soon after ({time.time() - start:.1f} s)")

    server = Server()
    sock, data = open_stream(server.port, ENDLESS)
    start = time.time()
    server.process.terminate()
    time.sleep(0.3)
    server.process.terminate()
    code = server.process.wait(timeout=30)
    sock.close()
    check(code == 0 and time.time() - start < 10,
          f"a second SIGTERM stops at once, not after the 30 s drain ({time.time() - start:.1f} s)")


# A schema of the kind OpenAI's strict mode and Pydantic write: $defs and $ref, an enum, an
# Optional (anyOf with null), bounded strings and arrays, an integer range, properties in an order
# that is not alphabetical (the output must keep it).
RECORD_SCHEMA = {
    "$defs": {"Colour": {"enum": ["red", "green", "blue"], "title": "Colour", "type": "string"}},
    "title": "Record", "type": "object", "additionalProperties": False,
    "properties": {
        "zone": {"title": "Zone", "type": "integer", "minimum": 1, "maximum": 12},
        "colour": {"$ref": "#/$defs/Colour"},
        "label": {"anyOf": [{"type": "string", "maxLength": 6}, {"type": "null"}], "title": "Label"},
        "ok": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2},
    },
    "required": ["zone", "colour", "label", "ok", "tags"],
}


ARITHMETIC_GRAMMAR = r"""
root   ::= expr
expr   ::= term ([-+*] term)*
term   ::= [0-9]{1,3} | "(" expr ")"
"""


def arithmetic(text):
    """Whether `text` is a sentence of ARITHMETIC_GRAMMAR (a recursive descent of its own)."""
    at = 0

    def term():
        nonlocal at
        if text.startswith("(", at):
            at += 1
            if not expr() or not text.startswith(")", at):
                return False
            at += 1
            return True
        digits = re.match(r"[0-9]{1,3}", text[at:])
        if not digits:
            return False
        at += len(digits.group())
        return True

    def expr():
        nonlocal at
        if not term():
            return False
        while at < len(text) and text[at] in "-+*":
            at += 1
            if not term():
                return False
        return True

    return expr() and at == len(text)


def record_problems(value):
    """What makes `value` fail RECORD_SCHEMA (the standard library has no JSON Schema validator)."""
    if not isinstance(value, dict):
        return "not an object"
    if list(value) != list(RECORD_SCHEMA["properties"]):
        return f"keys {list(value)} are not the schema's, in its order"
    if not (isinstance(value["zone"], int) and not isinstance(value["zone"], bool) and 1 <= value["zone"] <= 12):
        return f"zone {value['zone']!r}"
    if value["colour"] not in ("red", "green", "blue"):
        return f"colour {value['colour']!r}"
    if not (value["label"] is None or (isinstance(value["label"], str) and len(value["label"]) <= 6)):
        return f"label {value['label']!r}"
    if not isinstance(value["ok"], bool):
        return f"ok {value['ok']!r}"
    tags = value["tags"]
    if not (isinstance(tags, list) and len(tags) <= 2 and all(isinstance(t, str) and len(t) <= 3 for t in tags)):
        return f"tags {tags!r}"
    return None


def structured_outputs(server):
    """Constrained requests on the tiny model: regex, choice, JSON schema, JSON object and grammars, through
    each of the request fields that ask for them, greedy and sampled, n > 1 and streamed. Every
    output that stopped is a whole match; one cut by max_tokens a prefix of one."""
    chat = {"model": "tiny", "messages": [{"role": "user", "content": "Give me a record"}], "max_tokens": 120}
    completion = {"model": "tiny", "prompt": "The answer is", "max_tokens": 40}

    status, body = server.post("/v1/completions", dict(completion, guided_regex=r"[0-9]{3}-[a-z]{2,4}", n=3,
                                                       temperature=1, seed=4))
    texts = [(c["text"], c["finish_reason"]) for c in body.get("choices", [])] if status == 200 else body
    check(status == 200 and all(re.fullmatch(r"[0-9]{3}-[a-z]{2,4}", t) and f == "stop" for t, f in texts),
          f"guided_regex, n=3 at temperature 1: every sample a whole match: {texts}")

    choices = ["yes", "no", "it depends"]
    for field, value in (("guided_choice", choices), ("structured_outputs", {"choice": choices})):
        for temperature in (0, 1):
            status, body = server.post("/v1/completions", dict(completion, n=2, temperature=temperature, seed=9,
                                                               **{field: value}))
            texts = [c["text"] for c in body["choices"]] if status == 200 else body
            check(status == 200 and all(t in choices for t in texts), f"{field} at temperature {temperature}: {texts}")

    for temperature in (0, 1):
        request = dict(chat, n=3, temperature=temperature, seed=11,
                       response_format={"type": "json_schema",
                                        "json_schema": {"name": "Record", "schema": RECORD_SCHEMA, "strict": True}})
        status, body = server.post("/v1/chat/completions", request)
        for choice in body.get("choices", []) if status == 200 else []:
            content, reason = choice["message"]["content"], choice["finish_reason"]
            if reason == "stop":
                try:
                    problem = record_problems(json.loads(content))
                except ValueError as error:
                    problem = f"not JSON: {error}"
                check(problem is None, f"json_schema at temperature {temperature}: {content!r} validates ({problem})")
            else:
                check(reason == "length", f"json_schema: finish_reason {reason}")
        check(status == 200 and any(c["finish_reason"] == "stop" for c in body["choices"]),
              f"json_schema at temperature {temperature}: 200, some sample completes: {body if status != 200 else ''}")

    # JSON object mode, streamed: the concatenated deltas parse as an object.
    status, _, events = server.stream("/v1/chat/completions", dict(chat, stream=True, temperature=0,
                                                                   response_format={"type": "json_object"}))
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events[:-1] if e["choices"])
    reasons = [e["choices"][0]["finish_reason"] for e in events[:-1] if e["choices"] and e["choices"][0]["finish_reason"]]
    if reasons == ["stop"]:
        try:
            check(isinstance(json.loads(text), dict), f"json_object, streamed: an object: {text!r}")
        except ValueError as error:
            check(False, f"json_object, streamed: {text!r} does not parse: {error}")
    check(status == 200 and reasons in (["stop"], ["length"]), f"json_object streamed: finish {reasons}")

    # EBNF grammars (GBNF / XGrammar EBNF), recursive: every finished sample is a whole sentence of
    # the grammar; one that can only end past max_tokens finishes with "length", as in vLLM.
    for field, value in (("guided_grammar", ARITHMETIC_GRAMMAR), ("structured_outputs", {"grammar": ARITHMETIC_GRAMMAR})):
        for temperature in (0, 1):
            status, body = server.post("/v1/completions", dict(completion, n=3, temperature=temperature, seed=5,
                                                               max_tokens=60, **{field: value}))
            results = [(c["text"], c["finish_reason"]) for c in body["choices"]] if status == 200 else body
            check(status == 200 and all(arithmetic(t) if f == "stop" else f == "length" for t, f in results)
                  and any(f == "stop" for _, f in results),
                  f"{field} at temperature {temperature}: sentences of the grammar: {results}")
    status, body = server.post("/v1/completions", dict(completion, max_tokens=5, guided_grammar='root ::= [a-z]{200}'))
    choice = body["choices"][0] if status == 200 else {}
    check(status == 200 and choice["finish_reason"] == "length" and re.fullmatch("[a-z]+", choice["text"]),
          f"a grammar that ends past max_tokens: finish length, a prefix: {choice or body}")

    # Bad constraints: 400 naming the field and the problem, and the server serves on.
    bad = [
        ({"guided_regex": "(ab"}, "guided_regex", "offset"),
        ({"guided_regex": "a(?=b)"}, "guided_regex", "lookaround"),
        ({"guided_json": {"type": "integer", "multipleOf": 3}}, "guided_json", "multipleOf"),
        ({"structured_outputs": {"json": {"$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}},
                                          "$ref": "#/$defs/N"}}}, "structured_outputs.json", "recursive"),
        ({"guided_json": {"type": "string", "format": "hostname"}}, "guided_json", "hostname"),
        ({"guided_regex": "[a-z]{1000}[0-9]{1000}" * 20}, "guided_regex", "states"),
        ({"guided_grammar": 'root ::= item'}, "guided_grammar", "line 1, column 10: rule 'item' is used but never"),
        # Nesting deep enough to overflow the stack of a recursive parser: refused, not a crash.
        ({"guided_regex": "(" * 100000 + "a" + ")" * 100000}, "guided_regex", "nest more than 500 deep"),
        ({"guided_json": '{"items": ' * 20000 + "{}" + "}" * 20000}, "guided_json", "nests deeper than 128"),
        ({"guided_grammar": "root ::= " + "(" * 100000 + '"a"' + ")" * 100000}, "guided_grammar", "nest more than 200"),
        # Arrays nested 40 deep: a pattern that doubles per level, refused before it takes the memory.
        ({"guided_json": json.loads('{"type": "array", "items": ' * 40 + '{"type": "integer"}' + "}" * 40)},
         "guided_json", "too large"),
        ({"structured_outputs": {"grammar": 'root ::= root "+" [0-9] | [0-9]'}}, "structured_outputs.grammar",
         "left-recursive"),
    ]
    for fields, param, words in bad:
        started = time.time()
        status, body = server.post("/v1/completions", dict(completion, **fields))
        error = body.get("error", {}) if isinstance(body, dict) else {}
        check(status == 400 and error.get("param") == param and words in error.get("message", ""),
              f"bad constraint {json.dumps(fields)[:60]}: 400 naming {param} and {words!r} in "
              f"{time.time() - started:.2f} s: {status} {error}")
    # A grammar too ambiguous to follow shows only as text is generated: each "a" (forced by
    # logit_bias) doubles the parses alive. That request ends with a 400 saying so, plain or
    # streamed, and the requests beside it and after it are served.
    _, tokenized = server.post("/tokenize", {"prompt": "a"})
    forced_a = {str(tokenized["tokens"][-1]): 100}
    ambiguous = 'root ::= s\ns ::= "a" s "b" | "a" x "c" | ""\nx ::= s "d"\n'
    request = dict(completion, temperature=0, max_tokens=40, logit_bias=forced_a, guided_grammar=ambiguous)
    status, body = server.post("/v1/completions", request)
    error = body.get("error", {}) if isinstance(body, dict) else {}
    check(status == 400 and "too ambiguous to follow" in error.get("message", "")
          and error.get("param") == "guided_grammar",
          f"a grammar too ambiguous to follow: 400 naming guided_grammar and saying so: {status} {body}")
    status, _, events = server.stream("/v1/completions", dict(request, stream=True))
    check(any("too ambiguous to follow" in json.dumps(e) for e in events),
          f"the same, streamed: an error event saying so: {status} {events[-3:]}")
    status, body = server.post("/v1/completions", dict(completion, guided_choice=["still", "serving"]))
    check(status == 200 and body["choices"][0]["text"] in ("still", "serving"), "serving after bad constraints")


WEATHER_TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
                                                        "unit": {"enum": ["C", "F"]}},
                       "required": ["city", "unit"]}}},
    {"type": "function", "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string", "pattern": "[A-Z]{3}"}},
                       "required": ["zone"]}}},
]


def call_problems(call):
    """None when a tool call names a tool and its arguments fit that tool's schema, else what is wrong."""
    if call.get("type") != "function" or not call.get("id", "").startswith("chatcmpl-tool-"):
        return f"not a function call with an id: {call}"
    name, arguments = call["function"]["name"], call["function"]["arguments"]
    try:
        value = json.loads(arguments)
    except ValueError as error:
        return f"arguments {arguments!r} are not JSON: {error}"
    if name == "get_weather":
        ok = (list(value) == ["city", "unit"] and isinstance(value["city"], str) and len(value["city"]) <= 10
              and value["unit"] in ("C", "F"))
    elif name == "get_time":
        ok = list(value) == ["zone"] and re.fullmatch("[A-Z]{3}", value["zone"]) is not None
    else:
        return f"unknown tool {name!r}"
    return None if ok else f"{name} arguments {value} do not fit the schema"


def tool_calling(server):
    """tool_choice required and named on the tiny model: the output is constrained to the tools'
    schemas and comes back as tool_calls (whole and streamed); auto without a tool-call format in
    the template, and tools misused, are refused."""
    chat = {"model": "tiny", "messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": WEATHER_TOOLS,
            "max_tokens": 150}
    # The tiny model never closes the array by itself (it adds calls until max_tokens): one call at
    # most (parallel_tool_calls false) makes the array end after it.
    for temperature, parallel in ((0, False), (1, False), (1, True)):
        status, body = server.post("/v1/chat/completions", dict(chat, tool_choice="required", n=3, seed=21,
                                                                temperature=temperature, parallel_tool_calls=parallel))
        choices = body.get("choices", []) if status == 200 else []
        for choice in choices:
            message, reason = choice["message"], choice["finish_reason"]
            if reason == "tool_calls":
                problems = [call_problems(call) for call in message["tool_calls"]]
                check(message["content"] is None and message["tool_calls"] and not any(problems)
                      and (parallel or len(message["tool_calls"]) == 1),
                      f"required at temperature {temperature}: calls that fit their tools: {problems}")
            else:
                check(reason == "length" and "tool_calls" not in message and message["content"].startswith('[{"name": '),
                      f"required: a choice cut short is text, finish length: {reason} {message}")
        check(status == 200 and (parallel or all(c["finish_reason"] == "tool_calls" for c in choices)),
              f"required at temperature {temperature}, parallel {parallel}: 200, every sample of one call ends: "
              f"{body if status != 200 else [c['finish_reason'] for c in choices]}")

    named = dict(chat, tool_choice={"type": "function", "function": {"name": "get_time"}}, temperature=0)
    status, body = server.post("/v1/chat/completions", named)
    message = body["choices"][0]["message"] if status == 200 else body
    check(status == 200 and body["choices"][0]["finish_reason"] == "stop" and len(message["tool_calls"]) == 1
          and message["tool_calls"][0]["function"]["name"] == "get_time" and call_problems(message["tool_calls"][0]) is None,
          f"named: one call of the named function, finish stop: {message}")
    status, _, events = server.stream("/v1/chat/completions", dict(named, stream=True))
    deltas = [d for e in events[:-1] if e["choices"] for d in e["choices"][0]["delta"].get("tool_calls", [])]
    streamed = "".join(d["function"].get("arguments", "") for d in deltas)
    check(status == 200 and deltas and deltas[0].get("id", "").startswith("chatcmpl-tool-")
          and deltas[0]["function"].get("name") == "get_time" and all(d["index"] == 0 for d in deltas)
          and status == 200 and streamed == message["tool_calls"][0]["function"]["arguments"],
          f"named, streamed: the first delta names the call, the arguments add up to the whole response's: "
          f"{streamed!r}")

    # The result goes back in the conversation: an assistant turn with the call, then the tool's answer.
    if status == 200 and message.get("tool_calls"):
        follow = dict(chat, max_tokens=4, tool_choice="none", messages=chat["messages"] + [
            {"role": "assistant", "content": None, "tool_calls": message["tool_calls"]},
            {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": "12:00"}])
        status, body = server.post("/v1/chat/completions", follow)
        check(status == 200 and body["choices"][0]["message"]["content"] is not None,
              f"a conversation with a tool call and its result: {status}")

    refused = [
        (dict(chat), "tool_choice", "--tool-call-parser"),  # auto: the tiny model's template shows no format
        (dict(chat, tools=None, tool_choice="required"), "tool_choice", "needs tools"),
        (dict(chat, tool_choice="required", response_format={"type": "json_object"}), "tool_choice", "cannot be combined"),
        (dict(chat, tool_choice="required", tools=[{"type": "function", "function": {
            "name": "f", "parameters": {"type": "object", "patternProperties": {}}}}]), "tools", "patternProperties"),
    ]
    for body_in, param, words in refused:
        status, body = server.post("/v1/chat/completions", body_in)
        error = body.get("error", {}) if isinstance(body, dict) else {}
        check(status == 400 and error.get("param") == param and words in error.get("message", ""),
              f"tools refused: 400 naming {param} with {words!r}: {status} {error}")


def hermes_tool_calling():
    """tool_choice auto with a Hermes-style --chat-template: the template sees the tools as the
    request wrote them; a Hermes call in the output (forced here with a regex, since the tiny
    model calls nothing by itself) comes back as tool_calls with the text before it as content,
    whole and streamed; plain text stays content."""
    server = server_with_template(
        "hermes", "{%- if tools %}<|im_start|>system\nTools:{% for t in tools %}\n{{ t | tojson }}{% endfor %}\n"
        "Call one as <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call><|im_end|>\n{% endif %}"
        "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
        "{%- for c in m.tool_calls or [] %}<tool_call>\n{\"name\": \"{{ c.function.name }}\", "
        "\"arguments\": {{ c.function.arguments | tojson }}}\n</tool_call>{% endfor %}<|im_end|>\n{% endfor %}"
        "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    try:
        check("tool calls read as hermes" in open(os.path.join(server.cache, "serve.log")).read(),
              "the Hermes format is detected from the template")
        messages = [{"role": "user", "content": "Weather in Paris?"}]
        status, with_tools = server.post("/tokenize", {"messages": messages, "tools": WEATHER_TOOLS})
        status2, prompt = server.post("/detokenize", {"tokens": with_tools.get("tokens", [])})
        check(status == 200 and status2 == 200 and json.dumps(WEATHER_TOOLS[0]) in prompt.get("prompt", ""),
              "the template sees the tools in the order the request wrote them")
        call = '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}'
        forced = {"model": "tiny", "messages": messages, "tools": WEATHER_TOOLS, "max_tokens": 200,
                  "structured_outputs": {"regex": re.escape("Sure. <tool_call>\n" + call + "\n</tool_call>")}}
        status, body = server.post("/v1/chat/completions", forced)
        message = body["choices"][0]["message"] if status == 200 else body
        check(status == 200 and message["content"] == "Sure. " and body["choices"][0]["finish_reason"] == "tool_calls"
              and [c["function"] for c in message["tool_calls"]] ==
              [{"name": "get_weather", "arguments": '{"city": "Paris", "unit": "C"}'}],
              f"auto: a Hermes call becomes tool_calls, the text before it content: {message}")
        status, _, events = server.stream("/v1/chat/completions", dict(forced, stream=True))
        content = "".join(e["choices"][0]["delta"].get("content") or "" for e in events[:-1] if e["choices"])
        calls = [d for e in events[:-1] if e["choices"] for d in e["choices"][0]["delta"].get("tool_calls", [])]
        reasons = [e["choices"][0]["finish_reason"] for e in events[:-1] if e["choices"] and e["choices"][0]["finish_reason"]]
        check(status == 200 and content == "Sure. " and reasons == ["tool_calls"] and len(calls) == 1
              and calls[0]["function"] == {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "C"}'},
              f"auto, streamed: content until the call, then the call: {content!r} {calls} {reasons}")
        status, body = server.post("/v1/chat/completions", dict(forced, structured_outputs={"regex": "It is sunny"}))
        check(status == 200 and body["choices"][0]["message"] == {"role": "assistant", "content": "It is sunny"}
              and body["choices"][0]["finish_reason"] == "stop", f"auto: plain text stays content: {body}")
    finally:
        server.stop()


def main():
    server = Server()
    try:
        features(server)
        protocol(server)
        bad_input(server)
        structured_outputs(server)
        tool_calling(server)
        disconnects(server)
        bench(server)
    finally:
        server.stop()
    api_key()
    cors_and_full_queue()
    priority_scheduling()
    jinja_chat_template()
    hermes_tool_calling()
    graceful_shutdown()
    if FAILURES:
        print(f"e2e server: {len(FAILURES)} check(s) failed")
        sys.exit(1)
    print("e2e server: all checks passed")


if __name__ == "__main__":
    main()
