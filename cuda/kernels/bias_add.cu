#include "cuda/kernels/bias_add.h"

#include <algorithm>
#include <cstdint>

#include "cuda/cuda_check.h"
#include "cuda/kernels/device_types.cuh"

namespace pagedllm::cuda {
namespace {

constexpr int kThreads = 256;
// Grid-stride loop: enough blocks to fill an H100/H200 (132 SMs x 2048 threads = 1056 blocks of
// 256), capped so huge inputs do not need a huge grid.
constexpr int64_t kMaxBlocks = 4096;
constexpr int32_t kMaxExtent = 0x7fffffff;

// Grid (min(ceil(num_rows * dim / kWidth / kThreads), kMaxBlocks)), kThreads threads. Each work
// item is kWidth consecutive elements of one row: a 16-byte vector (kVectorized: dim and stride
// multiples of 8, x and bias 16-byte aligned) or a single element.
template <typename T, bool kVectorized>
__global__ void __launch_bounds__(kThreads)
    bias_add_kernel(T* __restrict__ x, const T* __restrict__ bias, int64_t num_rows, int64_t dim, int64_t stride) {
  constexpr int kWidth = kVectorized ? detail::kVecElems : 1;
  const int64_t per_row = dim / kWidth;
  const int64_t total = num_rows * per_row;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < total; i += step) {
    const int64_t row = i / per_row;
    const int64_t col = (i - row * per_row) * kWidth;
    T* p = x + row * stride + col;
    if constexpr (kVectorized) {
      float values[detail::kVecElems];
      float biases[detail::kVecElems];
      detail::load_vec8(p, values);
      detail::load_vec8(bias + col, biases);
#pragma unroll
      for (int k = 0; k < detail::kVecElems; ++k) values[k] += biases[k];
      detail::store_vec8(p, values);
    } else {
      *p = detail::from_float<T>(detail::to_float(*p) + detail::to_float(bias[col]));
    }
  }
}

template <typename T>
void launch(const BiasAddParams& p, int64_t stride, cudaStream_t stream) {
  T* x = static_cast<T*>(p.x);
  const T* bias = static_cast<const T*>(p.bias);
  const bool vectorized = p.dim % detail::kVecElems == 0 && stride % detail::kVecElems == 0 &&
                          reinterpret_cast<std::uintptr_t>(x) % 16 == 0 &&
                          reinterpret_cast<std::uintptr_t>(bias) % 16 == 0;
  const int64_t items = p.num_rows * (vectorized ? p.dim / detail::kVecElems : p.dim);
  const auto grid = static_cast<unsigned>(std::clamp<int64_t>((items + kThreads - 1) / kThreads, 1, kMaxBlocks));
  if (vectorized) {
    bias_add_kernel<T, true><<<grid, kThreads, 0, stream>>>(x, bias, p.num_rows, p.dim, stride);
  } else {
    bias_add_kernel<T, false><<<grid, kThreads, 0, stream>>>(x, bias, p.num_rows, p.dim, stride);
  }
  PAGEDLLM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void validate(const BiasAddParams& p) {
  detail::require(p.dtype == DType::bf16 || p.dtype == DType::fp16, "bias_add: unknown dtype");
  detail::require(p.num_rows >= 0 && p.num_rows <= kMaxExtent, "bias_add: num_rows out of range");
  detail::require(p.dim > 0 && p.dim <= kMaxExtent, "bias_add: dim out of range");
  detail::require(p.x_stride == 0 || (p.x_stride >= p.dim && p.x_stride <= kMaxExtent),
                  "bias_add: x_stride must be 0 or in [dim, 2^31 - 1]");
  if (p.num_rows == 0) return;
  detail::require(p.x != nullptr && p.bias != nullptr, "bias_add: null pointer");
}

void bias_add(const BiasAddParams& p, cudaStream_t stream) {
  validate(p);
  if (p.num_rows == 0) return;
  const int64_t stride = p.x_stride == 0 ? p.dim : p.x_stride;
  // Moves: num_rows * dim * 2 bytes read and written (x); bias dim * 2 bytes (cached).
  if (p.dtype == DType::bf16) {
    launch<__nv_bfloat16>(p, stride, stream);
  } else {
    launch<__half>(p, stride, stream);
  }
}

}  // namespace pagedllm::cuda
