#include "cuda/kernels/rms_norm.h"

#include <cmath>

#include "cuda/cuda_check.h"
#include "cuda/kernels/block_reduce.cuh"

namespace pagedllm::cuda {
namespace {

constexpr int kThreads = 256;

// Grid (num_rows), kThreads threads. Each thread reads back only the elements it wrote itself,
// so out may alias x without a race. No __restrict__ on x/out for that reason.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    rms_norm_kernel(const T* x, T* residual, const T* __restrict__ weight, T* out, int64_t dim, float eps) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const T* x_row = x + row * dim;
  T* res_row = residual == nullptr ? nullptr : residual + row * dim;
  float sum_sq = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    float z = detail::to_float(x_row[i]);
    if (res_row != nullptr) {
      const T rounded = detail::from_float<T>(z + detail::to_float(res_row[i]));
      res_row[i] = rounded;
      z = detail::to_float(rounded);
    }
    sum_sq += z * z;
  }
  const float total = detail::block_sum(sum_sq, scratch);
  const float inv_rms = rsqrtf(total / static_cast<float>(dim) + eps);
  const T* src = res_row != nullptr ? res_row : x_row;
  T* out_row = out + row * dim;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    out_row[i] = detail::from_float<T>(detail::to_float(src[i]) * inv_rms * detail::to_float(weight[i]));
  }
}

}  // namespace

void validate(const RmsNormParams& p) {
  detail::require(p.dtype == DType::bf16 || p.dtype == DType::fp16, "rms_norm: unknown dtype");
  detail::require(p.num_rows >= 0 && p.num_rows <= 0x7fffffff, "rms_norm: num_rows out of range");
  detail::require(p.dim > 0, "rms_norm: dim must be positive");
  detail::require(std::isfinite(p.eps) && p.eps >= 0.0f, "rms_norm: eps must be finite and >= 0");
  if (p.num_rows == 0) return;
  detail::require(p.x != nullptr && p.weight != nullptr && p.out != nullptr, "rms_norm: null pointer");
}

void rms_norm(const RmsNormParams& p, cudaStream_t stream) {
  validate(p);
  if (p.num_rows == 0) return;
  const auto grid = static_cast<unsigned>(p.num_rows);
  // Moves: num_rows * dim * 2 bytes read (x) and written (out), plus with a residual
  // num_rows * dim * 2 bytes read and written again; weight dim * 2 bytes (cached).
  if (p.dtype == DType::bf16) {
    using T = __nv_bfloat16;
    rms_norm_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(p.x), static_cast<T*>(p.residual),
                                                      static_cast<const T*>(p.weight), static_cast<T*>(p.out), p.dim,
                                                      p.eps);
  } else {
    using T = __half;
    rms_norm_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(p.x), static_cast<T*>(p.residual),
                                                      static_cast<const T*>(p.weight), static_cast<T*>(p.out), p.dim,
                                                      p.eps);
  }
  PAGEDLLM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedllm::cuda
