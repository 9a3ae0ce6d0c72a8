// RMSNorm of a Llama layer, optionally fused with the residual add that precedes it:
//   residual = x + residual   (rounded to the dtype, as the model's bf16 residual stream is)
//   out      = weight * (residual * rsqrt(mean(residual^2) + eps))
// Without a residual pointer: out = weight * (x * rsqrt(mean(x^2) + eps)). fp32 inside.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {

// Views only; device pointers.
struct RmsNormParams {
  DType dtype = DType::bf16;
  int64_t num_rows = 0;
  int64_t dim = 0;
  const void* x = nullptr;       // [num_rows][dim]
  void* residual = nullptr;      // [num_rows][dim] or null; when set it is updated to x + residual
  const void* weight = nullptr;  // [dim]
  void* out = nullptr;           // [num_rows][dim]; may be x itself
  float eps = 1e-6f;
};

void validate(const RmsNormParams& params);
void rms_norm(const RmsNormParams& params, cudaStream_t stream);

}  // namespace pagedllm::cuda
