#include "cuda/kernels/fill_random.h"

#include <cmath>

#include "cuda/cuda_check.h"
#include "cuda/kernels/device_types.cuh"

namespace pagedllm::cuda {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 65535;

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Grid-stride over the elements.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    fill_random_kernel(T* __restrict__ out, int64_t n, uint64_t seed, float offset, float scale) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const uint64_t bits = mix64(seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(i));
    const float u = static_cast<float>(bits >> 40) * 0x1.0p-23f - 1.0f;  // [-1, 1)
    out[i] = detail::from_float<T>(offset + scale * u);
  }
}

}  // namespace

void validate(const FillRandomParams& p) {
  detail::require(p.dtype == DType::bf16 || p.dtype == DType::fp16, "fill_random: unknown dtype");
  detail::require(p.num_elements >= 0, "fill_random: negative size");
  detail::require(std::isfinite(p.offset) && std::isfinite(p.scale), "fill_random: offset and scale must be finite");
  if (p.num_elements > 0) detail::require(p.out != nullptr, "fill_random: null pointer");
}

void fill_random(const FillRandomParams& p, cudaStream_t stream) {
  validate(p);
  if (p.num_elements == 0) return;
  const int64_t wanted = (p.num_elements + kThreads - 1) / kThreads;
  const auto blocks = static_cast<unsigned>(wanted < kMaxBlocks ? wanted : kMaxBlocks);
  // Writes num_elements * 2 bytes.
  if (p.dtype == DType::bf16) {
    fill_random_kernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(p.out),
                                                                       p.num_elements, p.seed, p.offset, p.scale);
  } else {
    fill_random_kernel<__half>
        <<<blocks, kThreads, 0, stream>>>(static_cast<__half*>(p.out), p.num_elements, p.seed, p.offset, p.scale);
  }
  PAGEDLLM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedllm::cuda
