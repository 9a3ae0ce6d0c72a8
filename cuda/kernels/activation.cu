#include "cuda/kernels/activation.h"

#include "cuda/cuda_check.h"
#include "cuda/kernels/device_types.cuh"

namespace pagedllm::cuda {
namespace {

constexpr int kThreads = 256;

// Grid (num_rows), kThreads threads.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    silu_and_mul_kernel(const T* __restrict__ input, T* __restrict__ out, int64_t dim) {
  const int64_t row = blockIdx.x;
  const T* gate = input + row * 2 * dim;
  const T* up = gate + dim;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    const float g = detail::to_float(gate[i]);
    const float silu = g / (1.0f + expf(-g));
    out[row * dim + i] = detail::from_float<T>(silu * detail::to_float(up[i]));
  }
}

}  // namespace

void validate(const SiluAndMulParams& p) {
  detail::require(p.dtype == DType::bf16 || p.dtype == DType::fp16, "silu_and_mul: unknown dtype");
  detail::require(p.num_rows >= 0 && p.num_rows <= 0x7fffffff && p.dim > 0, "silu_and_mul: bad shape");
  if (p.num_rows == 0) return;
  detail::require(p.input != nullptr && p.out != nullptr, "silu_and_mul: null pointer");
}

void silu_and_mul(const SiluAndMulParams& p, cudaStream_t stream) {
  validate(p);
  if (p.num_rows == 0) return;
  const auto grid = static_cast<unsigned>(p.num_rows);
  // Moves: num_rows * 2 * dim * 2 bytes read, num_rows * dim * 2 bytes written.
  if (p.dtype == DType::bf16) {
    using T = __nv_bfloat16;
    silu_and_mul_kernel<T>
        <<<grid, kThreads, 0, stream>>>(static_cast<const T*>(p.input), static_cast<T*>(p.out), p.dim);
  } else {
    using T = __half;
    silu_and_mul_kernel<T>
        <<<grid, kThreads, 0, stream>>>(static_cast<const T*>(p.input), static_cast<T*>(p.out), p.dim);
  }
  PAGEDLLM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedllm::cuda
