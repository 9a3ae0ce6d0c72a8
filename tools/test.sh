#!/usr/bin/env bash
# Builds and runs the whole test suite in the optimized build and in the sanitizer build
# (ASan + UBSan). Exits non-zero if anything fails.
#   tools/test.sh [preset ...]   (default: release asan)
set -euo pipefail
cd "$(dirname "$0")/.."
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(release asan)
for preset in "${presets[@]}"; do
  echo "=== ${preset}: build"
  tools/build.sh "$preset"
  echo "=== ${preset}: test"
  ctest --preset "$preset"
done
