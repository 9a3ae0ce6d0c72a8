#!/usr/bin/env bash
# Installs the Debian packages that building and testing pagedllm needs, only those missing.
# Idempotent: a second run installs nothing. CUDA is not installed here: where nvcc exists the
# build adds the CUDA executor, elsewhere it says so and leaves it out.
set -euo pipefail

packages=(
  g++ cmake ninja-build         # toolchain (C++20: g++ 12 on Debian 12)
  libeigen3-dev                 # cpu_ref linear algebra
  libboost-program-options-dev  # command line
  libboost-test-dev             # test suites
  nlohmann-json3-dev            # JSON traces, configs, HTTP bodies
  libpcre2-dev pkg-config       # tokenizer pre-split patterns with Unicode classes
  libicu-dev                    # NFC normalization (Qwen2 tokenizers)
  clang libclang-rt-dev         # the asan build (ASan + UBSan) and the libFuzzer targets
  libomp-dev                    # OpenMP for clang (g++ brings its own libgomp)
  clang-format                  # the C++ style (.clang-format, tools/format.sh)
  python3 python3-venv          # the PyPI test tier (gguf, tokenizers, jinja2 as oracles)
  ca-certificates curl          # fetching the real model and PyPI packages
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "setup: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
