// Bias add in place over rows of 16-bit activations: x[r][j] = round(float(x[r][j]) + float(bias[j]))
// (one fp32 add, rounded to nearest even in the dtype). Used for the q/k/v projection biases of
// Qwen2, applied to the fused qkv GEMM output.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {

// Views only; device pointers.
struct BiasAddParams {
  DType dtype = DType::bf16;
  int64_t num_rows = 0;        // >= 0; 0: nothing to do (no launch, pointers may be null)
  int64_t dim = 0;             // > 0
  void* x = nullptr;           // [num_rows] rows of dim elements, row r at x + r * x_stride; updated
  int64_t x_stride = 0;        // elements between row starts; 0 means dim; otherwise >= dim
  const void* bias = nullptr;  // [dim]
};

// Throws KernelArgumentError: unknown dtype, num_rows < 0, dim <= 0, x_stride < 0 or in (0, dim),
// num_rows, dim or x_stride above 2^31 - 1, a null x or bias when num_rows > 0.
void validate(const BiasAddParams& params);
// Any dim and alignment; 16-byte vectors when dim, the stride and both pointers allow it.
// Elements between dim and x_stride (row padding) are not touched.
void bias_add(const BiasAddParams& params, cudaStream_t stream);

}  // namespace pagedllm::cuda
