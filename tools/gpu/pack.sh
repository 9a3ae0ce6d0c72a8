#!/usr/bin/env bash
# Packs what a GPU machine needs to run pagedllm's CUDA tests and benchmarks into .gpu/ (ignored by
# git), for a machine that has a GPU, nvcc, cuBLAS and Python with torch + transformers, but none of
# pagedllm's Debian dependencies and no network (the device machines lent to this project):
#
#   .gpu/bin/    pagedllm, test_cuda, bench_cuda_decode, bench_cuda_attention, built here (release,
#                sm_80 + sm_90) so that a lent machine spends its minutes running, not compiling
#   .gpu/debs/   the Debian runtime libraries they link (Boost, ICU, PCRE2, libgomp, libstdc++); the
#                session script links only those the machine lacks or has too old
#   .gpu/lib/    libcudart from this toolkit, used only where the machine has none
#   .gpu/manifest.txt   the commit, nvcc and the sizes
#
# Then, on the device (the device tool's `run` with carry [".gpu"]; a few phases per call, see
# tools/gpu/session.sh and docs/GPU_SESSION.md):
#   tools/gpu/session.sh kernels sanitize
#
#   tools/gpu/pack.sh [--preset release] [--skip-build]
set -euo pipefail
cd "$(dirname "$0")/../.."

preset=release
build=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --preset) preset=$2; shift 2 ;;
    --skip-build) build=0; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "pack.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

binary_dir=build/$preset
targets=(pagedllm test_cuda bench_cuda_decode bench_cuda_attention)
if [[ $build -eq 1 ]]; then
  tools/setup.sh
  cmake --preset "$preset" >/dev/null
  cmake --build "$binary_dir" --target "${targets[@]}"
fi
for file in pagedllm tests/cuda/test_cuda bench/bench_cuda_decode bench/bench_cuda_attention; do
  [[ -x "$binary_dir/$file" ]] || { echo "pack.sh: no $binary_dir/$file (was $binary_dir configured without nvcc?)" >&2; exit 1; }
done

rm -rf .gpu
mkdir -p .gpu/bin .gpu/debs .gpu/lib
cp "$binary_dir/pagedllm" "$binary_dir/tests/cuda/test_cuda" \
   "$binary_dir/bench/bench_cuda_decode" "$binary_dir/bench/bench_cuda_attention" .gpu/bin/

# The shared libraries the binaries load that are not CUDA's, glibc's or libstdc++'s, as the Debian
# packages that hold them (their exact installed versions).
packages=()
while read -r library; do
  package=$(dpkg -S "$library" 2>/dev/null | head -1 | cut -d: -f1) || true
  [[ -n "$package" ]] && packages+=("$package")
done < <(ldd .gpu/bin/* | awk '/=> \// {print $3}' | sort -u |
         grep -Ev '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so|/libcu' |
         xargs -r readlink -f)
# libstdc++ too: the session links it only where the machine's is older than this build needs.
packages+=("$(dpkg -S "$(readlink -f "$(ldd .gpu/bin/pagedllm | awk '/libstdc\+\+/ {print $3}')")" | cut -d: -f1)")
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
(cd .gpu/debs && apt-get download -q "${packages[@]}" >/dev/null 2>&1) || \
  { echo "pack.sh: apt-get download ${packages[*]} failed" >&2; exit 1; }

cudart=$(ldd .gpu/bin/pagedllm | awk '/libcudart/ {print $3}')
[[ -n "$cudart" ]] && cp -L "$cudart" .gpu/lib/

{
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
  echo "packed: $(date -u +%FT%TZ) on $(uname -m), $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "nvcc: $(nvcc --version | tail -1)"
  echo "packages: ${packages[*]}"
  (cd .gpu && du -ab bin debs lib | sort -k2)
} > .gpu/manifest.txt
total=$(du -sb .gpu | cut -f1)
cat .gpu/manifest.txt
echo "pack.sh: .gpu holds $((total / 1024 / 1024)) MiB (a device call carries at most 64 MiB with the working tree)"
