"""Process management and HTTP helpers for check_router.py: `pagedllm serve` replicas, `vllm-router`
processes, a recording stand-in worker (what the router adds to request bodies), requests, SSE
reading, /metrics scraping, and the ok:/FAILED:/note: reporting with the tallies the checks share.

Imported by check_router.py from this directory (the script's directory is on sys.path when it
is run as `python tests/pypi/check_router.py`). Every process started is appended to PROCESSES;
kill_all() ends them, and start_watchdog() ends the whole run after a bound.
"""
import http.client
import json
import os
import re
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client.parser import text_string_to_metric_families

from child_log import child_log

FAILURES = []
PROCESSES = []  # every process started, killed by kill_all()
LOCK = threading.Lock()
SUCCEEDED = [0]  # requests a client saw succeed on a replica (200 bodies, streams ending [DONE])
# Which replica answered, from the response id: pagedllm's ids are PREFIX-<16 hex digits, random per
# process><8 hex digits, a counter>; each replica's 16 digits are learnt from a direct request.
ANSWERED = {}  # the 16 digits -> requests a client saw succeed with them

COMPLETION = {"model": "tiny", "prompt": "Once upon a time", "max_tokens": 4, "temperature": 0, "ignore_eos": True}
CHAT = {"model": "tiny", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4, "temperature": 0,
        "ignore_eos": True}


# --- reporting -----------------------------------------------------------------------------------

def check(condition, what, details=()):
    print(("ok: " if condition else "FAILED: ") + what, flush=True)
    if not condition:
        FAILURES.append(what)
        for line in details:
            print(f"    {line}", flush=True)
    return condition


def note(what):
    print(f"  note: {what}", flush=True)


def process_tag(response_id):
    match = re.fullmatch(r"(?:chat)?cmpl-([0-9a-f]{16})[0-9a-f]{8}", response_id or "")
    return match.group(1) if match else f"unrecognised id {response_id!r}"


def count_success(response_id):
    with LOCK:
        SUCCEEDED[0] += 1
        tag = process_tag(response_id)
        ANSWERED[tag] = ANSWERED.get(tag, 0) + 1


def reply_id(body):
    try:
        return json.loads(body)["id"]
    except (ValueError, KeyError, TypeError):
        return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path, lines=15):
    try:
        with open(path, errors="replace") as f:
            text = re.sub(r"\x1b\[[0-9;]*m", "", f.read())
        return [line[:300] for line in text.splitlines() if not line.startswith("DEBUG:")][-lines:]
    except OSError:
        return []


# --- HTTP ----------------------------------------------------------------------------------------

def request(port, method, path, body=None, headers=None, timeout=60):
    """(status, headers, body bytes), or (None, None, the error's text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    except (OSError, http.client.HTTPException) as error:
        return None, None, f"{type(error).__name__}: {error}".encode()
    finally:
        conn.close()


def stream(port, path, body, headers=None, timeout=60, on_event=None):
    """A streamed request: {status, events (parsed), done ([DONE] seen), error, body (non-200)}."""
    result = {"status": None, "events": [], "done": False, "error": None, "body": b""}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        result["status"] = response.status
        result["content_type"] = response.getheader("Content-Type", "")
        if response.status != 200:
            result["body"] = response.read()
            return result
        while True:
            line = response.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]":
                result["done"] = True
                continue
            try:
                result["events"].append(json.loads(payload))
            except ValueError:
                result["error"] = f"malformed event: {payload[:200]!r}"
            if on_event:
                on_event(len(result["events"]))
    except (OSError, http.client.HTTPException) as error:
        result["error"] = f"{type(error).__name__}: {error}"
    finally:
        conn.close()
    return result


def completion_ok(status, body, max_tokens, n=1):
    """Whether a non-streamed completion is a well-formed success with n choices of max_tokens."""
    if status != 200:
        return False
    try:
        reply = json.loads(body)
        return (reply["object"] == "text_completion" and len(reply["choices"]) == n and
                all(isinstance(c["text"], str) and c["finish_reason"] == "length" for c in reply["choices"]) and
                reply["usage"]["completion_tokens"] == n * max_tokens)
    except (ValueError, KeyError, TypeError):
        return False


def chat_stream_ok(result):
    events = result["events"]
    return (result["status"] == 200 and result["done"] and result["error"] is None and
            result.get("content_type", "").startswith("text/event-stream") and len(events) >= 2 and
            all(e.get("object") == "chat.completion.chunk" for e in events) and
            any(c.get("finish_reason") == "length" for e in events for c in e.get("choices", [])))


def describe(status, body):
    """A response for a message: the status and the body's start (a 400 names the field refused)."""
    return f"{status}: {body[:200].decode(errors='replace') if isinstance(body, bytes) else body}"


def describe_stream(result):
    return (f"status {result.get('status')}, done {result.get('done')}, error {result.get('error')}, "
            f"{describe(result.get('status'), result.get('body', b''))}")


# --- metrics -------------------------------------------------------------------------------------

def scrape(port):
    """{family name: family} from a /metrics endpoint, parsed by prometheus_client; None if it fails."""
    status, _, body = request(port, "GET", "/metrics", timeout=10)
    if status != 200:
        return None
    return {family.name: family for family in text_string_to_metric_families(body.decode())}


def total(families, name, suffix=""):
    """A family's samples whose names end with `suffix` (a counter's: "_total"), summed over
    labels; None if the family is absent."""
    if not families or name not in families:
        return None
    return sum(s.value for s in families[name].samples if s.name.endswith(suffix))


def router_counters(families):
    """The router's retry, error and circuit-breaker counters, summed over labels."""
    counters = {}
    for family in families.values():
        if any(word in family.name for word in ("retr", "error", "cb_")):
            for sample in family.samples:
                if sample.name.endswith("_total") or sample.name.endswith("_count"):
                    key = sample.name + (f"{{outcome={sample.labels['outcome']}}}" if "outcome" in sample.labels
                                         else f"{{error_type={sample.labels['error_type']}}}"
                                         if "error_type" in sample.labels else "")
                    counters[key] = counters.get(key, 0) + int(sample.value)
    return counters


# --- replicas ------------------------------------------------------------------------------------

class Replica:
    def __init__(self, binary, name):
        self.name = name
        self.log = child_log(f"pagedllm_router_{name}_")
        self.process = subprocess.Popen([binary, "serve", "--model", "tiny", "--port", "0", "--threads", "1",
                                         "--served-model-name", "tiny", "--shutdown-timeout", "30"],
                                        stdout=self.log, stderr=subprocess.STDOUT)
        PROCESSES.append(self.process)
        self.port = None
        self.tag = None
        self.final_success = None  # for a replica that is gone: its request_success total

    def wait_ready(self, deadline):
        while time.time() < deadline:
            self.log.seek(0)
            text = self.log.read()
            match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
            if match and "ready:" in text:
                self.port = int(match.group(1))
                status, _, body = request(self.port, "POST", "/v1/completions", COMPLETION, timeout=30)
                if not completion_ok(status, body, COMPLETION["max_tokens"]):
                    break
                self.tag = process_tag(reply_id(body))
                count_success(reply_id(body))
                return True
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        check(False, f"replica {self.name} became ready", log_tail(self.log.name))
        return False

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def families(self):
        return scrape(self.port)

    def gauge(self, name):
        return total(self.families(), name)

    def success(self):
        return total(self.families(), "vllm:request_success", "_total")

    def kill(self):
        self.process.kill()
        self.process.wait(timeout=10)


def start_replicas(binary, names):
    replicas = [Replica(binary, name) for name in names]
    deadline = time.time() + 120
    return [r for r in replicas if r.wait_ready(deadline)]


def successes(replicas):
    return [r.success() for r in replicas]


def delta(after, before):
    return [None if a is None or b is None else int(a - b) for a, b in zip(after, before)]


def serving(replicas, timeout=20, waiting=None):
    """The replica running a request (vllm:num_requests_running > 0), once there is one; None after
    `timeout` s, or as soon as the thread `waiting` (the client of that request) has finished."""
    deadline = time.time() + timeout
    while time.time() < deadline and (waiting is None or waiting.is_alive()):
        for replica in replicas:
            if (replica.gauge("vllm:num_requests_running") or 0) > 0:
                return replica
        time.sleep(0.05)
    return None


# --- the router ----------------------------------------------------------------------------------

class Router:
    """vllm-router on free ports over `urls` (--worker-urls; None: the workers are in `extra`)."""

    def __init__(self, binary, urls, policy, *extra):
        self.port = free_port()
        self.prometheus_port = free_port()
        self.log = child_log(f"vllm_router_{policy}_")
        workers = ["--worker-urls", *urls] if urls is not None else []
        self.command = [binary, "--host", "127.0.0.1", "--port", str(self.port), "--prometheus-port",
                        str(self.prometheus_port), *workers, "--policy", policy,
                        "--worker-startup-timeout-secs", "30", "--worker-startup-check-interval", "1", *extra]
        self.process = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT)
        PROCESSES.append(self.process)

    def wait_ready(self, timeout=40):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                return False
            status, _, _ = request(self.port, "GET", "/health", timeout=2)
            if status is not None:
                return True
            time.sleep(0.2)
        return False

    def metrics(self):
        return scrape(self.prometheus_port)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


class Recorder:
    """A stand-in worker: answers /health and records the bodies it is sent (into `bodies`)."""

    def __init__(self, bodies):
        self.bodies = bodies
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def reply(self, text):
                data = text.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self.reply('{"object": "list", "data": [{"id": "tiny", "object": "model"}]}')

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                recorder.bodies[self.path] = json.loads(body)
                self.reply('{"id": "x", "object": "text_completion", "choices": []}')

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def router_added_fields(router_binary, policy):
    """{route: {field: value}} that the router adds to COMPLETION and CHAT under `policy`."""
    bodies = {}
    recorders = [Recorder(bodies), Recorder(bodies)]  # power_of_two wants two workers
    router = Router(router_binary, [f"http://127.0.0.1:{r.port}" for r in recorders], policy)
    try:
        if not router.wait_ready():
            check(False, f"the router ({policy}) starts in front of a recording server", log_tail(router.log.name))
            return None
        added = {}
        for path, body in (("/v1/completions", COMPLETION), ("/v1/chat/completions", CHAT)):
            request(router.port, "POST", path, body, timeout=20)
            sent = bodies.get(path)
            if sent is None:
                check(False, f"the router ({policy}) forwards {path}")
                return None
            added[path] = {k: v for k, v in sent.items() if k not in body}
            changed = {k: (body[k], sent[k]) for k in body if k in sent and sent[k] != body[k]}
            if changed:
                note(f"{policy}: {path}: the router changed {changed}")
        return added
    finally:
        router.stop()
        for recorder in recorders:
            recorder.close()


# --- bounds --------------------------------------------------------------------------------------

def kill_all():
    """Kill every process started that is still running, and reap them all."""
    for process in PROCESSES:
        if process.poll() is None:
            process.kill()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def start_watchdog(seconds, name):
    """After `seconds`, a FAILED line, every process killed and exit 1. Returns the timer (cancel it)."""
    def expire():
        print(f"FAILED: {name}: the check ran past {seconds} s; stopping", flush=True)
        for process in PROCESSES:
            if process.poll() is None:
                process.kill()
        os._exit(1)
    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer
