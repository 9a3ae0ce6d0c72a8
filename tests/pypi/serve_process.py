"""`pagedllm serve` as a child process for the PyPI checks: started on a free port, waited for."""
import re
import subprocess
import sys
import time

from child_log import child_log


def start_server(binary, model, *extra, timeout=300):
    """Starts `binary serve --model MODEL --port 0 EXTRA...`; returns (process, port) once it says
    it listens and is ready. Exits the check with the server's log if it dies or times out."""
    log = child_log("pagedllm_serve_")
    process = subprocess.Popen([binary, "serve", "--model", model, "--port", "0", *extra], stdout=log,
                               stderr=subprocess.STDOUT)
    deadline = time.time() + timeout
    while time.time() < deadline:
        log.seek(0)
        text = log.read()
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
        if match and "ready:" in text:
            return process, int(match.group(1))
        if process.poll() is not None:
            sys.exit(f"the server exited: {text}")
        time.sleep(0.2)
    process.kill()
    sys.exit("the server did not become ready")
