#!/usr/bin/env bash
# Builds and runs every test tier; exits non-zero if anything fails.
#   tools/test.sh [stage ...]   stages: format release asan fuzz pypi   (default: all five, in order)
#     format         every C++/CUDA file follows .clang-format (tools/format.sh --check; seconds)
#     release, asan  build that preset and run its CTest suites (asan = ASan + UBSan)
#     fuzz           the model file and OpenAI request parsers under libFuzzer for a bounded time (tools/fuzz.sh)
#     pypi           checks against independent implementations from PyPI (tools/test_pypi.sh);
#                    skipped, with the reason printed, only when the registry cannot be reached
set -euo pipefail
cd "$(dirname "$0")/.."
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(format release asan fuzz pypi)
# Each stage prints its wall time: CI must stay well inside its limit (docs/ARCHITECTURE.md).
started=$SECONDS
for stage in "${stages[@]}"; do
  stage_started=$SECONDS
  case "$stage" in
    release | asan | debug)
      echo "=== ${stage}: build"
      tools/build.sh "$stage"
      echo "=== ${stage}: test"
      # Side by side on every core: the suites are independent (own temporary files and ports).
      ctest --preset "$stage" -j "$(nproc)"
      ;;
    format)
      tools/setup.sh
      tools/format.sh --check
      ;;
    fuzz) tools/fuzz.sh 20 ;;
    pypi)
      [ -x build/release/pagedllm ] || tools/build.sh release
      tools/test_pypi.sh build/release
      ;;
    *) echo "test: unknown stage '$stage' (format release asan debug fuzz pypi)" >&2; exit 2 ;;
  esac
  echo "=== ${stage}: done in $((SECONDS - stage_started)) s (all stages so far: $((SECONDS - started)) s)"
done
