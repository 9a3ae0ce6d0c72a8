#include "cuda/kernels/embedding.h"

#include "cuda/cuda_check.h"

namespace pagedllm::cuda {
namespace {

constexpr int kThreads = 256;

// Grid (num_tokens), kThreads threads; 16-bit elements copied unconverted.
__global__ void __launch_bounds__(kThreads)
    embedding_kernel(const int32_t* __restrict__ token_ids, const uint16_t* __restrict__ table,
                     uint16_t* __restrict__ out, int32_t vocab_size, int64_t hidden_size) {
  const int64_t token = blockIdx.x;
  const int32_t id = token_ids[token];
  uint16_t* dst = out + token * hidden_size;
  const bool valid = id >= 0 && id < vocab_size;
  const uint16_t* src = table + (valid ? static_cast<int64_t>(id) : 0) * hidden_size;
  for (int64_t i = threadIdx.x; i < hidden_size; i += kThreads) dst[i] = valid ? src[i] : uint16_t{0};
}

}  // namespace

void validate(const EmbeddingParams& p) {
  detail::require(p.dtype == DType::bf16 || p.dtype == DType::fp16, "embedding: unknown dtype");
  detail::require(p.num_tokens >= 0 && p.vocab_size > 0 && p.hidden_size > 0, "embedding: bad shape");
  if (p.num_tokens == 0) return;
  detail::require(p.token_ids != nullptr && p.table != nullptr && p.out != nullptr, "embedding: null pointer");
}

void embedding(const EmbeddingParams& p, cudaStream_t stream) {
  validate(p);
  if (p.num_tokens == 0) return;
  // Moves: num_tokens * hidden_size * 2 bytes read (table rows) and written.
  embedding_kernel<<<static_cast<unsigned>(p.num_tokens), kThreads, 0, stream>>>(
      p.token_ids, static_cast<const uint16_t*>(p.table), static_cast<uint16_t*>(p.out), p.vocab_size, p.hidden_size);
  PAGEDLLM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedllm::cuda
