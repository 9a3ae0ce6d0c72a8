// The reference paged attention (PagedAttention, Kwon et al., SOSP 2023, section 4.1): causal
// attention of one query token over the keys and values of its sequence, gathered block by
// block from the paged KV cache through the sequence's block table.
//
// For the token at `position`, each query head h reads KV head h / (num_heads / num_kv_heads)
// (grouped-query attention) and, over t in [first, position], where first = 0 without a sliding
// window and max(0, position - window + 1) with one (kv/attention_window.h has the convention):
//   K[t], V[t] = the vectors at block block_table[t / block_size], slot t % block_size
//   score[t]   = dot(q_h, K[t]) * (1 / sqrt(head_dim))     (dot: cpu_ref/dot.h's fixed order)
//   p[t]       = exp(score[t] - max_t score) / sum_t exp(score[t] - max_t score)
//   out_h      = sum_t p[t] * V[t]                          (t ascending, per element)
// all in fp32 in that fixed order. Written to be read against the paper and to validate the
// CUDA kernels; the only concessions to speed keep every operation and its order (an AVX2 clone,
// the value sums held in registers across t). One token (or some of its heads) per call: a caller may run tokens
// and heads on any threads (they are independent), and the KV of positions [first, position] must already be in the
// cache. Block-table entries wholly before `first` are never read (the block manager may have released them:
// kv::kNoBlock); a read of one would abort.
#pragma once

#include <cstdint>
#include <span>

#include "core/kv/block_pool.h"
#include "core/kv/kv_layout.h"

namespace pagedllm::cpu_ref {

// Views only.
struct PagedAttentionArgs {
  kv::KvLayout layout;              // of the tier `kv_cache` holds (the device tier)
  const float* kv_cache = nullptr;  // that tier: layout.total_elements() floats
  std::int32_t layer = 0;
  std::int32_t num_heads = 0;                // query heads; a multiple of layout.num_kv_heads
  std::span<const kv::BlockId> block_table;  // covers positions [0, position]
  std::int32_t position = 0;                 // the query token's position in its sequence
  std::int32_t sliding_window = 0;           // kv::kNoSlidingWindow, or the keys a query sees
  const float* q = nullptr;                  // [num_heads][head_dim], rotary already applied
  float* out = nullptr;                      // [num_heads][head_dim], heads [head_begin, head_end) written
  // The query heads computed (each independent of the others, so a caller may split a token's
  // heads over threads); head_end -1: through the last head.
  std::int32_t head_begin = 0;
  std::int32_t head_end = -1;
};

void paged_attention(const PagedAttentionArgs& args);

}  // namespace pagedllm::cpu_ref
