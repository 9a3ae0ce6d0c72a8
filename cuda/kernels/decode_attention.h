// Paged decode attention: one query token per sequence against that sequence's keys and values in
// the paged KV cache, read through its block table (PagedAttention, Kwon et al., SOSP 2023).
//
// Design (docs/CUDA_KERNELS.md has the full story):
//   - one thread block per (sequence, KV head, partition of up to 512 tokens); it loads
//     each key and value row of that KV head once and uses it for every query head of the group
//     (grouped-query attention), unlike vLLM's kernel that re-reads the KV head per query head;
//   - the partition's block-table entries are prefetched into shared memory before the loop;
//   - fp32 scores, softmax and accumulation; 16-byte vector loads of K and V rows;
//   - split-KV: sequences longer than one partition write per-partition partial results (max,
//     sum, unnormalized output) to a workspace, and a second kernel merges them by log-sum-exp;
//   - sliding window (kv/attention_window.h): only keys in [seq_len - window, seq_len) are read;
//     a partition wholly before the window returns at once and the merge skips it, so blocks
//     outside the window (which the block manager may have released) are never read.
// Output layout [num_seqs][num_heads][head_dim], the dtype of q and of the cache.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/kv/kv_layout.h"
#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {

// Tokens per split-KV partition by default, and the most one thread block handles.
inline constexpr int32_t kDecodePartitionTokens = 512;
inline constexpr int32_t kMinDecodePartitionTokens = 64;
// The largest block size the kernel takes (block sizes are powers of two from 8): 4096, past the
// 2048 of the "unpaged" end of the vLLM paper's block-size comparison.
inline constexpr int32_t kMaxDecodeBlockSize = 4096;

// Views only. Pointers are device pointers unless said otherwise.
struct DecodeAttentionParams {
  DType dtype = DType::bf16;       // of q, out and kv_cache
  kv::KvLayout layout;             // of the device tier kv_cache holds
  const void* kv_cache = nullptr;  // the whole tier: layout.total_elements() elements
  int32_t layer = 0;
  int32_t num_seqs = 0;
  int32_t num_heads = 0;                  // query heads, a multiple of layout.num_kv_heads
  const void* q = nullptr;                // seq s's [num_heads][head_dim] at q + s * q_stride, rotary applied
  int64_t q_stride = 0;                   // elements from one sequence's q to the next (a fused qkv
                                          // row); 0 = num_heads * head_dim (packed)
  void* out = nullptr;                    // [num_seqs][num_heads][head_dim], written
  const int32_t* block_tables = nullptr;  // [num_seqs][max_blocks_per_seq] block ids
  int32_t max_blocks_per_seq = 0;
  const int32_t* seq_lens = nullptr;  // [num_seqs]: keys attended (position + 1), in [1, max_seq_len]
  int32_t max_seq_len = 0;            // host-side bound on seq_lens: sizes the grid
  float scale = 0.0f;                 // softmax scale, usually 1 / sqrt(head_dim)
  int32_t sliding_window = 0;         // kv::kNoSlidingWindow, or the keys a query sees
  // Split-KV partition: a power of two in [kMinDecodePartitionTokens, kDecodePartitionTokens]
  // (smaller than a block is fine: it then reads part of one block). Smaller partitions give small batches more thread
  // blocks (see choose_decode_partition_tokens); the output does not depend on it beyond rounding.
  int32_t partition_tokens = kDecodePartitionTokens;
  void* workspace = nullptr;  // decode_attention_workspace_bytes() bytes, 16-byte aligned
  std::size_t workspace_bytes = 0;
};

// A partition size that gives the launch at least about two thread blocks per SM where the
// batch alone does not: halves kDecodePartitionTokens while the grid is small (never below
// kMinDecodePartitionTokens). Host-only arithmetic; num_sms from DeviceInfo.
int32_t choose_decode_partition_tokens(int32_t num_kv_heads, int32_t num_seqs, int32_t max_seq_len, int32_t num_sms);

// Partitions of the longest sequence: 1 means no split and no workspace.
int32_t decode_attention_num_partitions(const DecodeAttentionParams& params);
// Scratch the split-KV path needs (0 when max_seq_len fits one partition).
std::size_t decode_attention_workspace_bytes(const DecodeAttentionParams& params);

// Throws KernelArgumentError for a malformed call (no CUDA call is made). Supported: bf16 and
// fp16; head_dim 64 and 128; block_size a power of two in [8, kMaxDecodeBlockSize]; any
// query-group size.
void validate(const DecodeAttentionParams& params);

// Validates, then enqueues the kernels on `stream`. Preconditions the host cannot see (device
// data): seq_lens[s] in [1, max_seq_len], block ids in [0, layout.num_blocks).
void decode_attention(const DecodeAttentionParams& params, cudaStream_t stream);

}  // namespace pagedllm::cuda
