// Token selection on the device from fp32 logits [num_rows][vocab_size]:
//   - argmax: greedy, ties to the lowest id (as core/sampling's sampler);
//   - sample_top_k_top_p: temperature, then top-k, then top-p (nucleus), then one draw, per row
//     with its own parameters and random stream. Rows with temperature < kGreedyTemperatureCuda
//     take the argmax.
// Randomness: the host sampler's counter-based draw (core/sampling/uniform_draw.h), a pure
// function of (seed, stream, position), independent of the batch, and its inverse CDF in rank
// order: a request draws the same tokens when it moves between this sampler and the host one.
// The masses are integers here and doubles on the host, so a draw within rounding of a boundary
// between two tokens may pick either; greedy is identical.
// Penalties and min_p are not applied here (see docs/CUDA_KERNELS.md).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {

// sampling::kGreedyTemperature (vLLM's _SAMPLING_EPS).
inline constexpr float kGreedyTemperatureCuda = 1e-5f;

// Views only; device pointers.
struct ArgmaxParams {
  const float* logits = nullptr;  // [num_rows][vocab_size]
  int32_t num_rows = 0;
  int32_t vocab_size = 0;
  int32_t* out_tokens = nullptr;  // [num_rows]
};

void validate(const ArgmaxParams& params);
void argmax(const ArgmaxParams& params, cudaStream_t stream);

struct TopKTopPParams {
  const float* logits = nullptr;  // [num_rows][vocab_size]: finite or -inf, no NaN
  int32_t num_rows = 0;
  int32_t vocab_size = 0;
  const float* temperatures = nullptr;  // [num_rows]
  const int32_t* top_k = nullptr;       // [num_rows]; <= 0 or >= vocab_size: off
  const float* top_p = nullptr;         // [num_rows]; in (0, 1], 1: off
  const uint64_t* seeds = nullptr;      // [num_rows]
  const int32_t* streams = nullptr;     // [num_rows]: the sample's stream (parallel sampling)
  const int32_t* positions = nullptr;   // [num_rows]: the output index being sampled
  int32_t* out_tokens = nullptr;        // [num_rows]
};

void validate(const TopKTopPParams& params);
void sample_top_k_top_p(const TopKTopPParams& params, cudaStream_t stream);

}  // namespace pagedllm::cuda
