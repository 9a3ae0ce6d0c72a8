// Structured outputs on the device: the tokens a row's constraint refuses get -inf logits, in
// place, before sampling and logprobs. The bitmask is the engine's (StepPlan::token_bitmask): one
// bit per token id, 32 to a word, bit (id % 32) of word (id / 32), XGrammar's and vLLM's layout.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/kernels/dtype.h"  // KernelArgumentError

namespace pagedllm::cuda {

// Views only; device pointers.
struct TokenBitmaskParams {
  float* logits = nullptr;             // [num_rows][vocab_size], masked in place
  int32_t num_rows = 0;                // >= 0; 0: nothing to do (no launch)
  int32_t vocab_size = 0;              // > 0
  const uint32_t* bitmask = nullptr;   // [bitmask rows][(vocab_size + 31) / 32]
  const int32_t* mask_rows = nullptr;  // [num_rows]: the row's bitmask row, or -1 (left as it is)
};

// Throws KernelArgumentError: num_rows < 0, vocab_size <= 0, a null pointer when num_rows > 0.
void validate(const TokenBitmaskParams& params);
void apply_token_bitmask(const TokenBitmaskParams& params, cudaStream_t stream);

}  // namespace pagedllm::cuda
