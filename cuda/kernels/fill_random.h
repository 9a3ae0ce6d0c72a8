// Random 16-bit values on the device, for benchmarks on model shapes whose weights nobody needs
// to download (a 7B model's 13 GB never pass through the host): x[i] = offset + scale * u,
// u uniform in [-1, 1) from a counter-based hash of (seed, i), rounded to the dtype.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {

// Views only; device pointers.
struct FillRandomParams {
  DType dtype = DType::bf16;
  int64_t num_elements = 0;
  void* out = nullptr;  // [num_elements]
  uint64_t seed = 0;
  float offset = 0.0f;
  float scale = 1.0f;
};

void validate(const FillRandomParams& params);
void fill_random(const FillRandomParams& params, cudaStream_t stream);

}  // namespace pagedllm::cuda
