#!/usr/bin/env bash
# Builds the kernels of cuda/kernels/ and the GPU tests of tests/cuda/ for the CPU emulation in
# emu.h and runs them: a logic check of the kernels on a machine without a GPU. Needs the cpu_ref
# and core libraries of a configured build (default build/release). Slow (thread blocks of fibers):
# the sampling test takes minutes. Usage, from the repository root:
#   tests/cuda/cpu_emulation/run.sh [build dir] [boost --run_test filter]
# e.g. tests/cuda/cpu_emulation/run.sh build/release decode_attention,prefill_attention
# EMU_SANITIZE=1 builds it with AddressSanitizer + UBSan (a CPU stand-in for memcheck).
# EMU_SCHEDULE=reverse or shuffle (EMU_SEED=N) runs the threads between barriers in another order
# (a CPU stand-in for racecheck; emu.h).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
build=$(cd "${1:-$repo/build/release}" && pwd)
filter=${2:-decode_attention,prefill_attention,cache_ops,layer_ops,sampling}
here="$repo/tests/cuda/cpu_emulation"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=(-std=c++20 -O2 -w -I"$repo" -I"$here" -isystem /usr/local/cuda/include -isystem /usr/include/eigen3
       -fopenmp -DBOOST_TEST_DYN_LINK)
# EMU_SANITIZE=1: AddressSanitizer + UBSan over the kernels and tests, no slack past allocations
# (a CPU stand-in for compute-sanitizer memcheck: device and __shared__ arrays are host objects).
if [[ "${EMU_SANITIZE:-0}" == 1 ]]; then
  flags+=(-fsanitize=address,undefined -fno-omit-frame-pointer -DEMU_MALLOC_SLACK=0)
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_stack_use_after_return=0:detect_leaks=0}
fi
# The schedule must really reorder threads, or a run under it proves nothing (emu_selftest.cpp).
g++ "${flags[@]}" "$here/emu_selftest.cpp" -o "$out/emu_selftest"
"$out/emu_selftest"
objs=()
for f in decode_attention prefill_attention cache_ops rms_norm rotary activation embedding sampling token_bitmask; do
  python3 "$here/prepare_kernels.py" "$repo/cuda/kernels/$f.cu" "$out/$f.cpp"
  g++ "${flags[@]}" -c "$out/$f.cpp" -o "$out/$f.o"
  objs+=("$out/$f.o")
done
g++ "${flags[@]}" -c "$repo/cuda/kernels/swap_plan.cpp" -o "$out/swap_plan.o"
g++ "${flags[@]}" -c "$here/device_info_fake.cpp" -o "$out/device_info_fake.o"
for t in test_main test_decode_attention test_prefill_attention test_cache_ops test_layer_ops test_sampling; do
  g++ "${flags[@]}" -include "$here/emu.h" -c "$repo/tests/cuda/$t.cpp" -o "$out/$t.o"
  objs+=("$out/$t.o")
done
g++ -o "$out/emu_test" "${objs[@]}" "$out/swap_plan.o" "$out/device_info_fake.o" \
  "$build/cpu_ref/libpagedllm_cpu_ref.a" "$build/core/libpagedllm_core.a" "$build/core/model/libpagedllm_model.a" \
  "$build/core/tokenizer/libpagedllm_tokenizer.a" "$build/core/chat/libpagedllm_chat.a" "$build/core/libpagedllm_core.a" "$build/core/structured/libpagedllm_structured.a" "$build/core/tokenizer/libpagedllm_tokenizer.a" "$build/core/libpagedllm_common.a" \
  -lboost_unit_test_framework -L/usr/local/cuda/lib64 -lcudart -lpcre2-8 -licuuc -fopenmp -lpthread -ldl \
  $([[ "${EMU_SANITIZE:-0}" == 1 ]] && echo -fsanitize=address,undefined) \
  -Wl,-rpath,/usr/local/cuda/lib64
"$out/emu_test" --run_test="$filter" --log_level=message --report_level=short
