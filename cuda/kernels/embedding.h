// Embedding lookup: out[t] = table[token_ids[t]], bit for bit. An id outside [0, vocab_size)
// (which the engine never passes) yields a zero row rather than an out-of-bounds read.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {

// Views only; device pointers.
struct EmbeddingParams {
  DType dtype = DType::bf16;
  int32_t num_tokens = 0;
  int32_t vocab_size = 0;
  int64_t hidden_size = 0;
  const int32_t* token_ids = nullptr;  // [num_tokens]
  const void* table = nullptr;         // [vocab_size][hidden_size]
  void* out = nullptr;                 // [num_tokens][hidden_size]
};

void validate(const EmbeddingParams& params);
void embedding(const EmbeddingParams& params, cudaStream_t stream);

}  // namespace pagedllm::cuda
