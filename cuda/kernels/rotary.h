// Rotary position embedding of q and k in place, in cpu_ref/rotary.h's convention (Hugging Face
// "rotate half": element j pairs with j + head_dim / 2):
//   out[j]        = x[j] * cos - x[j + half] * sin
//   out[j + half] = x[j + half] * cos + x[j] * sin,   angle = float(position) * inv_freq[j]
// inv_freq ([head_dim / 2] fp32, after default / linear / Llama-3 scaling) is computed on the host
// once per model by model::rope_inv_freq (core/model/rope_frequencies.h), so that the frequencies
// are the reference's bit for bit; cos and sin are computed on the device in fp32 (sincosf, full
// range reduction) per token.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {

// Views only; device pointers.
struct RotaryParams {
  DType dtype = DType::bf16;
  int32_t num_tokens = 0;
  int32_t num_heads = 0;               // query heads
  int32_t num_kv_heads = 0;            // key heads
  int32_t head_dim = 0;                // even, at most 512
  void* q = nullptr;                   // token t's [num_heads][head_dim] at q + t * q_stride
  void* k = nullptr;                   // token t's [num_kv_heads][head_dim] at k + t * k_stride
  int64_t q_stride = 0;                // elements between tokens; 0 = num_heads * head_dim
  int64_t k_stride = 0;                // 0 = num_kv_heads * head_dim
  const int32_t* positions = nullptr;  // [num_tokens], >= 0
  const float* inv_freq = nullptr;     // [head_dim / 2]
};

void validate(const RotaryParams& params);
void apply_rotary(const RotaryParams& params, cudaStream_t stream);

}  // namespace pagedllm::cuda
