#include "cuda/kernels/token_bitmask.h"

#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {
namespace {

constexpr int kThreads = 256;

// Grid (ceil(words / kThreads), num_rows); one thread per 32-token word of a row. A refused token
// is written, an allowed one not touched: a mostly-open mask costs little more than its read.
__global__ void __launch_bounds__(kThreads)
    token_bitmask_kernel(float* __restrict__ logits, int32_t vocab, const uint32_t* __restrict__ bitmask,
                         const int32_t* __restrict__ mask_rows) {
  const int32_t mask_row = mask_rows[blockIdx.y];
  if (mask_row < 0) return;
  const int32_t words = (vocab + 31) / 32;
  const int32_t word = static_cast<int32_t>(blockIdx.x) * kThreads + static_cast<int32_t>(threadIdx.x);
  if (word >= words) return;
  const uint32_t bits = bitmask[static_cast<int64_t>(mask_row) * words + word];
  if (bits == 0xffffffffu) return;
  float* row = logits + static_cast<int64_t>(blockIdx.y) * vocab;
  const int32_t first = word * 32;
  const int32_t count = min(32, vocab - first);
  for (int32_t bit = 0; bit < count; ++bit) {
    if (((bits >> bit) & 1u) == 0u) row[first + bit] = -INFINITY;
  }
}

}  // namespace

void validate(const TokenBitmaskParams& p) {
  detail::require(p.num_rows >= 0 && p.vocab_size > 0, "apply_token_bitmask: bad shape");
  if (p.num_rows == 0) return;
  detail::require(p.logits != nullptr && p.bitmask != nullptr && p.mask_rows != nullptr,
                  "apply_token_bitmask: null pointer");
}

void apply_token_bitmask(const TokenBitmaskParams& p, cudaStream_t stream) {
  validate(p);
  if (p.num_rows == 0) return;
  const int32_t words = (p.vocab_size + 31) / 32;
  // Moves per constrained row: vocab_size / 8 bytes of mask read, 4 bytes written per refused
  // token (a constraint usually refuses most of the vocabulary: up to vocab_size * 4 bytes).
  const dim3 grid(static_cast<unsigned>((words + kThreads - 1) / kThreads), static_cast<unsigned>(p.num_rows));
  token_bitmask_kernel<<<grid, kThreads, 0, stream>>>(p.logits, p.vocab_size, p.bitmask, p.mask_rows);
  PAGEDLLM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedllm::cuda
