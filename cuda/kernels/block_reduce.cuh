// Block-wide reductions for kernels whose thread blocks have a multiple of 32 threads (at most
// 1024). Every thread of the block must call them; all receive the result.
#pragma once

#include "cuda/kernels/device_types.cuh"

namespace pagedllm::cuda::detail {

// `scratch`: at least 32 floats of shared memory, not used by the caller until this returns.
__device__ __forceinline__ float block_sum(float x, float* scratch) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int num_warps = blockDim.x / 32;
  x = warp_sum(x);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  float total = lane < num_warps ? scratch[lane] : 0.0f;
  return warp_sum(total);  // every warp reduces the same values in the same order
}

struct ArgmaxCandidate {
  float value;
  int index;
};

// Larger value wins; ties (and -inf) go to the lower index; NaN never wins against a number.
__device__ __forceinline__ ArgmaxCandidate better(ArgmaxCandidate a, ArgmaxCandidate b) {
  if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}

__device__ __forceinline__ ArgmaxCandidate warp_argmax(ArgmaxCandidate c) {
  for (int offset = 16; offset > 0; offset /= 2) {
    ArgmaxCandidate other;
    other.value = __shfl_xor_sync(0xffffffffu, c.value, offset);
    other.index = __shfl_xor_sync(0xffffffffu, c.index, offset);
    c = better(c, other);
  }
  return c;
}

// `values` and `indices`: at least 32 entries of shared memory each.
__device__ __forceinline__ ArgmaxCandidate block_argmax(ArgmaxCandidate c, float* values, int* indices) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int num_warps = blockDim.x / 32;
  c = warp_argmax(c);
  __syncthreads();
  if (lane == 0) {
    values[warp] = c.value;
    indices[warp] = c.index;
  }
  __syncthreads();
  ArgmaxCandidate w{-INFINITY, 0x7fffffff};
  if (lane < num_warps) w = ArgmaxCandidate{values[lane], indices[lane]};
  return warp_argmax(w);
}

}  // namespace pagedllm::cuda::detail
