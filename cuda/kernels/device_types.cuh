// Device-side helpers shared by the kernels: 16-bit <-> fp32 conversion, 16-byte vectors of eight
// 16-bit elements, warp reductions. Only included from .cu files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda::detail {

template <typename T>
struct Convert;
template <>
struct Convert<__nv_bfloat16> {
  static __device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __device__ __forceinline__ __nv_bfloat16 from_float(float x) { return __float2bfloat16_rn(x); }
};
template <>
struct Convert<__half> {
  static __device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
  static __device__ __forceinline__ __half from_float(float x) { return __float2half_rn(x); }
};

template <typename T>
__device__ __forceinline__ float to_float(T x) {
  return Convert<T>::to_float(x);
}
template <typename T>
__device__ __forceinline__ T from_float(float x) {
  return Convert<T>::from_float(x);
}

// Eight 16-bit elements moved as one 16-byte load or store (uint4). Callers guarantee 16-byte
// alignment (head_dim % 8 == 0 and base pointers from cudaMalloc). The elements are read out of
// the loaded vector through a union rather than a pointer cast: reading a uint4 object through a
// T* breaks strict aliasing, and a host compiler (the CPU emulation used to check these kernels)
// does miscompile it.
inline constexpr int kVecElems = 8;

template <typename T>
union Vec8 {
  uint4 raw;
  T elems[kVecElems];
};

template <typename T>
__device__ __forceinline__ void load_vec8(const T* src, float (&dst)[kVecElems]) {
  Vec8<T> v;
  v.raw = *reinterpret_cast<const uint4*>(src);
#pragma unroll
  for (int i = 0; i < kVecElems; ++i) dst[i] = to_float(v.elems[i]);
}

template <typename T>
__device__ __forceinline__ void store_vec8(T* dst, const float (&src)[kVecElems]) {
  Vec8<T> v;
#pragma unroll
  for (int i = 0; i < kVecElems; ++i) v.elems[i] = from_float<T>(src[i]);
  *reinterpret_cast<uint4*>(dst) = v.raw;
}

__device__ __forceinline__ float warp_sum(float x, int width = 32) {
  for (int offset = width / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset, width);
  return x;
}
__device__ __forceinline__ float warp_max(float x, int width = 32) {
  for (int offset = width / 2; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset, width));
  return x;
}

// Element offset of (layer, kind, block, kv_head, slot) in a tier laid out as core/kv/kv_layout.h
// says: [layer][K|V][block][kv_head][slot][head_dim]. 64-bit: a tier can exceed 2^31 elements.
struct DeviceKvLayout {
  int32_t num_kv_heads;
  int32_t head_dim;
  int32_t block_size;
  int32_t num_blocks;

  __host__ __device__ int64_t chunk_elements() const {
    return static_cast<int64_t>(num_kv_heads) * block_size * head_dim;
  }
  __host__ __device__ int64_t chunk_offset(int32_t layer, int32_t kind, int32_t block) const {
    return ((static_cast<int64_t>(layer) * 2 + kind) * num_blocks + block) * chunk_elements();
  }
  __host__ __device__ int64_t element_offset(int32_t layer, int32_t kind, int32_t block, int32_t kv_head,
                                             int32_t slot) const {
    return chunk_offset(layer, kind, block) + (static_cast<int64_t>(kv_head) * block_size + slot) * head_dim;
  }
};

}  // namespace pagedllm::cuda::detail
