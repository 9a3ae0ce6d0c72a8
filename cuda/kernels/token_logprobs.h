// The raw logprob of one token per row of fp32 logits (vLLM's default logprobs_mode
// "raw_logprobs": log_softmax of the logits as the model produced them, before penalties,
// temperature and filters):
//   out[r] = logits[r][tokens[r]] - (max_r + log(sum_j exp(logits[r][j] - max_r)))
// in fp32: per-thread fp32 partial sums and a block reduction, one thread block per row.
// core/sampling/sampler.h computes the same in double (its sum) and agrees to about 1e-5 relative.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/kernels/dtype.h"  // KernelArgumentError

namespace pagedllm::cuda {

// Views only; device pointers.
struct TokenLogprobsParams {
  const float* logits = nullptr;    // [num_rows][vocab_size]: finite or -inf, at least one finite per row
  int32_t num_rows = 0;             // >= 0; 0: nothing to do (no launch, pointers may be null)
  int32_t vocab_size = 0;           // > 0
  const int32_t* tokens = nullptr;  // [num_rows]
  float* out = nullptr;             // [num_rows]
};

// Throws KernelArgumentError: num_rows < 0, vocab_size <= 0, a null pointer when num_rows > 0.
void validate(const TokenLogprobsParams& params);
// Device-side facts, not checked: a token outside [0, vocab_size) gives NaN (the engine never
// passes one); a token whose logit is -inf gives -inf; a row of only -inf gives NaN (cpu_ref
// refuses such a row).
void token_logprobs(const TokenLogprobsParams& params, cudaStream_t stream);

}  // namespace pagedllm::cuda
