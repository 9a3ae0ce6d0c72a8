// Sliding-window attention: which keys a query sees, shared by the attention code (cpu_ref,
// the CUDA kernels) and the block manager (which blocks no query will read again).
//
// Convention: the query at position p attends the keys at positions t with p - window < t <= p,
// that is the `window` most recent positions, itself included. This is Hugging Face
// Transformers' Mistral mask (`kv_idx > q_idx - sliding_window`), llama.cpp's
// LLAMA_SWA_TYPE_STANDARD (a key is masked when p1 - p0 >= n_swa) and vLLM's FlashAttention
// window (sliding_window - 1, 0). A model without a window uses kNoSlidingWindow (0): every
// position in [0, p].
#pragma once

#include <cstdint>

#include "core/common/host_device.h"

namespace pagedllm::kv {

inline constexpr int32_t kNoSlidingWindow = 0;

// The first position the query at `position` attends.
PAGEDLLM_HOST_DEVICE inline int32_t first_visible_position(int32_t position, int32_t sliding_window) {
  return sliding_window > 0 && position >= sliding_window ? position - sliding_window + 1 : 0;
}

}  // namespace pagedllm::kv
