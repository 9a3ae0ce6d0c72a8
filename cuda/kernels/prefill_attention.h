// Paged prefill attention: causal attention of prompt chunks, variable length per sequence.
// Sequence s computes the queries of positions [context_start, context_start + query_len) and
// attends, for the query at position p, the keys and values of positions [0, p], all read
// through its block table: prefix-cached blocks and earlier chunks are included. The KV of the
// chunk itself must already be written (write_kv_cache first). With a sliding window the query at
// p attends [p - window + 1, p] only (kv/attention_window.h); a tile starts its key loop at the
// window of its first query, so blocks wholly before it are never read (the block manager may
// have released them).
//
// Two kernels, both one thread block per (tile of 64 rows, KV head, sequence), a row being a
// (query token, head of the KV head's GQA group) pair, so the heads of a group share every K/V
// tile they load (see docs/CUDA_KERNELS.md):
//   - tensor_core (the default): QK^T and PV on tensor cores (WMMA, 16 x 16 x 16 bf16/fp16 with
//     fp32 accumulation), 32-key tiles in their stored type; softmax in two passes (the row's max
//     and sum first, then the probabilities), so the output accumulates in the MMA fragments with
//     no per-row rescaling, for QK^T computed twice.
//   - simt: CUDA cores only, 16-key tiles staged as fp32, online softmax in fp32. The first kernel,
//     measured on an H100 and an H200 at about 2% of SDPA; kept as the reference for the other.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/kv/kv_layout.h"
#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {

enum class PrefillKernel : uint8_t { tensor_core, simt };

// Views only. Pointers are device pointers.
struct PrefillAttentionParams {
  DType dtype = DType::bf16;
  PrefillKernel kernel = PrefillKernel::tensor_core;
  kv::KvLayout layout;
  const void* kv_cache = nullptr;
  int32_t layer = 0;
  int32_t num_seqs = 0;
  int32_t num_heads = 0;                    // a multiple of layout.num_kv_heads
  const void* q = nullptr;                  // token t's [num_heads][head_dim] at q + t * q_stride, the chunks in order
  int64_t q_stride = 0;                     // elements between tokens' q rows; 0 = num_heads * head_dim
  void* out = nullptr;                      // [num_tokens][num_heads][head_dim], written
  const int32_t* query_starts = nullptr;    // [num_seqs + 1]: rows [query_starts[s], query_starts[s + 1]) are s's
  const int32_t* context_starts = nullptr;  // [num_seqs]: position of s's first query (the chunk start)
  const int32_t* block_tables = nullptr;    // [num_seqs][max_blocks_per_seq]
  int32_t max_blocks_per_seq = 0;
  int32_t max_query_len = 0;  // host-side bound on the chunk lengths: sizes the grid
  float scale = 0.0f;
  int32_t sliding_window = 0;  // kv::kNoSlidingWindow, or the keys a query sees
};

// Throws KernelArgumentError (no CUDA call). Supported: bf16, fp16; head_dim 64, 128; any block size.
void validate(const PrefillAttentionParams& params);

// Preconditions on device data: chunk lengths in [0, max_query_len]; context_start + query_len
// <= max_blocks_per_seq * block_size; block ids in range.
void prefill_attention(const PrefillAttentionParams& params, cudaStream_t stream);

}  // namespace pagedllm::cuda
