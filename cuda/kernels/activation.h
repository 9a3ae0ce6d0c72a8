// SiLU-and-multiply, the gate of the Llama MLP (SwiGLU): each row of the input holds the gate
// projection then the up projection, [gate (dim) | up (dim)], and
//   out = silu(gate) * up,   silu(x) = x / (1 + exp(-x)),   in fp32, rounded once.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {

// Views only; device pointers.
struct SiluAndMulParams {
  DType dtype = DType::bf16;
  int64_t num_rows = 0;
  int64_t dim = 0;              // of the output; the input rows are 2 * dim
  const void* input = nullptr;  // [num_rows][2 * dim]
  void* out = nullptr;          // [num_rows][dim]; must not overlap input
};

void validate(const SiluAndMulParams& params);
void silu_and_mul(const SiluAndMulParams& params, cudaStream_t stream);

}  // namespace pagedllm::cuda
