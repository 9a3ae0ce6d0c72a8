#!/usr/bin/env bash
# The C++ and CUDA style (.clang-format: Google's, 120 columns), with clang-format 14 (Debian 12).
#   tools/format.sh              format the lines changed since HEAD (staged or not), in place
#   tools/format.sh --since REV  format the lines changed since REV, in place
#   tools/format.sh --all        format every tracked file in place
#   tools/format.sh --check      list every tracked file whose formatting differs; exit 1 if any (CI)
# The tree was formatted once as a whole, so --check holds every changed line to the style
# without asking a developer to reformat code they did not touch.
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format="$(command -v clang-format-14 || command -v clang-format || true)"
[ -n "$clang_format" ] || { echo "format: clang-format is not installed (tools/setup.sh installs it)" >&2; exit 2; }
git_clang_format="$(command -v git-clang-format-14 || command -v git-clang-format || true)"
tracked() { git ls-files -z -- '*.cpp' '*.h' '*.cu' '*.cuh'; }

case "${1:-}" in
  --check)
    bad="$(tracked | xargs -0 -n 50 -P 2 "$clang_format" --dry-run --Werror 2>&1 | grep -o '^[^:]*\.\(cpp\|h\|cu\|cuh\):' | sort -u || true)"
    if [ -n "$bad" ]; then
      echo "format: these files differ from .clang-format (run tools/format.sh --all, or --since REV):" >&2
      echo "$bad" | tr -d ':' | sed 's/^/  /' >&2
      exit 1
    fi
    echo "format: $(tracked | tr -cd '\0' | wc -c) files follow .clang-format"
    ;;
  --all) tracked | xargs -0 -n 50 -P 2 "$clang_format" -i ;;
  --since | "")
    [ -n "$git_clang_format" ] || { echo "format: git-clang-format is not installed" >&2; exit 2; }
    base="HEAD"
    [ "${1:-}" = "--since" ] && base="${2:?--since needs a revision}"
    "$git_clang_format" --binary "$clang_format" --extensions cpp,h,cu,cuh "$base" || true
    ;;
  *) echo "format: unknown option '$1' (--all, --since REV, --check)" >&2; exit 2 ;;
esac
