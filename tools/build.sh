#!/usr/bin/env bash
# Sets up dependencies, then configures and builds one preset of CMakePresets.json:
#   tools/build.sh [release|debug|asan]   (default: release)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
tools/setup.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
