#include "cuda/kernels/rotary.h"

#include "cuda/cuda_check.h"
#include "cuda/kernels/device_types.cuh"

namespace pagedllm::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxHalf = 256;

// Grid (num_tokens), kThreads threads: the token's angles once into shared memory, then every
// (head, j) pair of q and k.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    rotary_kernel(T* __restrict__ q, T* __restrict__ k, int64_t q_stride, int64_t k_stride,
                  const int32_t* __restrict__ positions, const float* __restrict__ inv_freq, int num_heads,
                  int num_kv_heads, int head_dim) {
  __shared__ float cos_s[kMaxHalf];
  __shared__ float sin_s[kMaxHalf];
  const int64_t token = blockIdx.x;
  const int half = head_dim / 2;
  const float position = static_cast<float>(positions[token]);
  for (int j = threadIdx.x; j < half; j += kThreads) {
    const float angle = inv_freq[j] * position;  // one fp32 product, as the reference
    sincosf(angle, &sin_s[j], &cos_s[j]);
  }
  __syncthreads();
  const int pairs = (num_heads + num_kv_heads) * half;
  for (int idx = threadIdx.x; idx < pairs; idx += kThreads) {
    const int head = idx / half;
    const int j = idx % half;
    T* x = head < num_heads ? q + token * q_stride + static_cast<int64_t>(head) * head_dim
                            : k + token * k_stride + static_cast<int64_t>(head - num_heads) * head_dim;
    const float x1 = detail::to_float(x[j]);
    const float x2 = detail::to_float(x[j + half]);
    x[j] = detail::from_float<T>(x1 * cos_s[j] - x2 * sin_s[j]);
    x[j + half] = detail::from_float<T>(x2 * cos_s[j] + x1 * sin_s[j]);
  }
}

}  // namespace

void validate(const RotaryParams& p) {
  detail::require(p.dtype == DType::bf16 || p.dtype == DType::fp16, "rotary: unknown dtype");
  detail::require(p.head_dim > 0 && p.head_dim % 2 == 0 && p.head_dim / 2 <= kMaxHalf,
                  "rotary: head_dim must be even and at most 512");
  detail::require(p.num_tokens >= 0 && p.num_heads > 0 && p.num_kv_heads >= 0, "rotary: bad token or head counts");
  const int64_t q_row = static_cast<int64_t>(p.num_heads) * p.head_dim;
  const int64_t k_row = static_cast<int64_t>(p.num_kv_heads) * p.head_dim;
  detail::require((p.q_stride == 0 || p.q_stride >= q_row) && (p.k_stride == 0 || p.k_stride >= k_row),
                  "rotary: a stride is shorter than its row");
  if (p.num_tokens == 0) return;
  detail::require(
      p.q != nullptr && (p.k != nullptr || p.num_kv_heads == 0) && p.positions != nullptr && p.inv_freq != nullptr,
      "rotary: null pointer");
}

void apply_rotary(const RotaryParams& p, cudaStream_t stream) {
  validate(p);
  if (p.num_tokens == 0) return;
  const int64_t q_stride = p.q_stride == 0 ? static_cast<int64_t>(p.num_heads) * p.head_dim : p.q_stride;
  const int64_t k_stride = p.k_stride == 0 ? static_cast<int64_t>(p.num_kv_heads) * p.head_dim : p.k_stride;
  const auto grid = static_cast<unsigned>(p.num_tokens);
  // Moves: num_tokens * (num_heads + num_kv_heads) * head_dim * 2 bytes read and written in place.
  if (p.dtype == DType::bf16) {
    using T = __nv_bfloat16;
    rotary_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<T*>(p.q), static_cast<T*>(p.k), q_stride, k_stride,
                                                    p.positions, p.inv_freq, p.num_heads, p.num_kv_heads, p.head_dim);
  } else {
    using T = __half;
    rotary_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<T*>(p.q), static_cast<T*>(p.k), q_stride, k_stride,
                                                    p.positions, p.inv_freq, p.num_heads, p.num_kv_heads, p.head_dim);
  }
  PAGEDLLM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedllm::cuda
