#include "cuda/kernels/token_logprobs.h"

#include "cuda/cuda_check.h"
#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {
namespace {

constexpr int kThreads = 256;

// Block-wide max, as detail::block_sum: every thread calls it, all get the result.
__device__ __forceinline__ float block_max(float x, float* scratch) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int num_warps = blockDim.x / 32;
  x = detail::warp_max(x);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  const float v = lane < num_warps ? scratch[lane] : -INFINITY;
  return detail::warp_max(v);
}

// Grid (num_rows), kThreads threads. Two passes over the row: the max, then the sum of
// exp(x - max) (the second pass reads the row back from L2).
__global__ void __launch_bounds__(kThreads)
    token_logprobs_kernel(const float* __restrict__ logits, int32_t vocab, const int32_t* __restrict__ tokens,
                          float* __restrict__ out) {
  __shared__ float scratch[32];
  const float* row = logits + static_cast<int64_t>(blockIdx.x) * vocab;
  float local_max = -INFINITY;
  for (int i = threadIdx.x; i < vocab; i += kThreads) local_max = fmaxf(local_max, row[i]);
  const float row_max = block_max(local_max, scratch);
  float local_sum = 0.0f;
  for (int i = threadIdx.x; i < vocab; i += kThreads) local_sum += expf(row[i] - row_max);  // exp(-inf) = 0
  const float sum = detail::block_sum(local_sum, scratch);
  if (threadIdx.x == 0) {
    const int32_t token = tokens[blockIdx.x];
    // sum >= 1 (the max contributes exp(0)), so log(sum) >= 0 is finite; a -inf logit stays -inf.
    out[blockIdx.x] =
        token >= 0 && token < vocab ? (row[token] - row_max) - logf(sum) : __uint_as_float(0x7fc00000u);  // quiet NaN
  }
}

}  // namespace

void validate(const TokenLogprobsParams& p) {
  detail::require(p.num_rows >= 0 && p.vocab_size > 0, "token_logprobs: bad shape");
  if (p.num_rows == 0) return;
  detail::require(p.logits != nullptr && p.tokens != nullptr && p.out != nullptr, "token_logprobs: null pointer");
}

void token_logprobs(const TokenLogprobsParams& p, cudaStream_t stream) {
  validate(p);
  if (p.num_rows == 0) return;
  // Moves: num_rows * vocab_size * 4 bytes read from memory (the second pass over a row hits L2),
  // num_rows * 4 bytes of tokens read and num_rows * 4 bytes written.
  token_logprobs_kernel<<<static_cast<unsigned>(p.num_rows), kThreads, 0, stream>>>(p.logits, p.vocab_size, p.tokens,
                                                                                    p.out);
  PAGEDLLM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedllm::cuda
