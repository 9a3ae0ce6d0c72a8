// validate(LinearParams): host-only, shared by the cuBLAS GemmRunner (gemm.cu) and the CPU
// emulation's stand-in (tests/cuda/cpu_emulation/gemm_emu.cpp).
#include <limits>

#include "cuda/gemm.h"

namespace pagedllm::cuda {
namespace {

// cublasGemmEx takes int sizes and leading dimensions.
constexpr int64_t kIntMax = std::numeric_limits<int>::max();

}  // namespace

void validate(const LinearParams& p) {
  detail::require(p.dtype == DType::bf16 || p.dtype == DType::fp16, "linear: unknown dtype");
  detail::require(p.num_rows >= 0 && p.num_rows <= kIntMax, "linear: num_rows out of range");
  detail::require(p.in_features > 0 && p.in_features <= kIntMax, "linear: in_features must be in [1, 2^31)");
  detail::require(p.out_features > 0 && p.out_features <= kIntMax, "linear: out_features must be in [1, 2^31)");
  detail::require(p.x_stride == 0 || (p.x_stride >= p.in_features && p.x_stride <= kIntMax),
                  "linear: x_stride must be 0 or in [in_features, 2^31)");
  detail::require(p.y_stride == 0 || (p.y_stride >= p.out_features && p.y_stride <= kIntMax),
                  "linear: y_stride must be 0 or in [out_features, 2^31)");
  if (p.num_rows == 0) return;
  detail::require(p.x != nullptr && p.weight != nullptr && p.y != nullptr, "linear: null pointer");
}

}  // namespace pagedllm::cuda
