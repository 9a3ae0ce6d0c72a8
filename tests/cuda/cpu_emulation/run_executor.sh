#!/usr/bin/env bash
# Builds the CUDA executor (cuda/*.cpp), its kernels (cuda/kernels/) and tests/cuda/
# test_cuda_executor.cpp + test_step_kernels.cpp for the CPU emulation (emu.h, with the runtime calls of emu_runtime.h and
# the host GEMM of gemm_emu.cpp in place of cuda/gemm.cu) and runs them: the executor's logic end to
# end against cpu_ref on a machine without a GPU. PAGEDLLM_CPU_EMULATION shortens the runs. Needs
# the core, cpu_ref and make_model libraries of a configured build (default build/release). Slow
# (thread blocks of fibers): minutes. Usage, from the repository root:
#   tests/cuda/cpu_emulation/run_executor.sh [build dir] [boost --run_test filter]
# e.g. tests/cuda/cpu_emulation/run_executor.sh build/release cuda_executor/cuda_graphs_match_eager
# EMU_SANITIZE=1 builds it with AddressSanitizer + UBSan (a CPU stand-in for memcheck).
# EMU_SCHEDULE=reverse or shuffle (EMU_SEED=N) runs the threads between barriers in another order
# (a CPU stand-in for racecheck; emu.h).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
build=$(cd "${1:-$repo/build/release}" && pwd)
filter=${2:-cuda_executor}
here="$repo/tests/cuda/cpu_emulation"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=(-std=c++20 -O2 -w -I"$repo" -I"$here" -isystem /usr/local/cuda/include -isystem /usr/include/eigen3
       -fopenmp -DBOOST_TEST_DYN_LINK -DPAGEDLLM_CPU_EMULATION -include "$here/emu_runtime.h")
link_flags=()
# EMU_SANITIZE=1: AddressSanitizer + UBSan, no slack past allocations (as run.sh).
if [[ "${EMU_SANITIZE:-0}" == 1 ]]; then
  flags+=(-fsanitize=address,undefined -fno-omit-frame-pointer -DEMU_MALLOC_SLACK=0)
  link_flags+=(-fsanitize=address,undefined)
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_stack_use_after_return=0:detect_leaks=0}
fi
# The schedule must really reorder threads, or a run under it proves nothing (emu_selftest.cpp).
g++ "${flags[@]}" "$here/emu_selftest.cpp" -o "$out/emu_selftest"
"$out/emu_selftest"
objs=()
pids=()
compile() {  # in the background; the failures are collected below
  g++ "${flags[@]}" -c "$1" -o "$2" &
  pids+=($!)
  objs+=("$2")
}
# Every kernel file and every host source of the executor (gemm.cu, its cublas_library.cpp and device_info.cu excepted).
for src in "$repo"/cuda/kernels/*.cu; do
  f=$(basename "$src" .cu)
  python3 "$here/prepare_kernels.py" "$repo/cuda/kernels/$f.cu" "$out/$f.cpp"
  # Launches through emu_rt::launch, which a stream capture records (emu_runtime.h).
  sed -i 's/emu::launch(/emu_rt::launch(/g' "$out/$f.cpp"
  compile "$out/$f.cpp" "$out/$f.o"
done
for src in "$repo"/cuda/*.cpp "$repo"/cuda/kernels/*.cpp; do
  [[ "$src" == */cublas_library.cpp ]] && continue  # only gemm.cu calls cuBLAS; gemm_emu.cpp replaces it
  compile "$src" "$out/host_$(basename "$src" .cpp).o"
done
for f in gemm_emu device_info_fake; do
  compile "$here/$f.cpp" "$out/$f.o"
done
for t in test_main test_cuda_executor test_step_kernels; do
  compile "$repo/tests/cuda/$t.cpp" "$out/$t.o"
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
if [ "$failed" != 0 ]; then echo "run_executor.sh: compilation failed" >&2; exit 1; fi
g++ -o "$out/emu_executor_test" "${objs[@]}" \
  "$build/tools/make_model/libpagedllm_make_model.a" "$build/cpu_ref/libpagedllm_cpu_ref.a" \
  "$build/core/libpagedllm_core.a" "$build/core/model/libpagedllm_model.a" \
  "$build/core/tokenizer/libpagedllm_tokenizer.a" "$build/core/chat/libpagedllm_chat.a" "$build/core/libpagedllm_core.a" "$build/core/structured/libpagedllm_structured.a" "$build/core/tokenizer/libpagedllm_tokenizer.a" "$build/core/libpagedllm_common.a" \
  -lboost_unit_test_framework -L/usr/local/cuda/lib64 -lcudart -lpcre2-8 -licuuc -fopenmp -lpthread -ldl \
  ${link_flags[@]+"${link_flags[@]}"} -Wl,-rpath,/usr/local/cuda/lib64
"$out/emu_executor_test" --run_test="$filter" --log_level=message --report_level=short
