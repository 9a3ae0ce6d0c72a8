// Kernels and copies that move KV data without computing on it: writing new tokens' keys and
// values into their slots, copy-on-write block copies, and swapping blocks between the device tier
// and a pinned host tier. All are bit-exact (bytes move unchanged) and dtype-agnostic beyond the
// element size; both tiers use core/kv/kv_layout.h's layout.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "core/kv/block_ops.h"
#include "core/kv/kv_layout.h"
#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {

// Views only. Pointers are device pointers.
struct WriteKvCacheParams {
  DType dtype = DType::bf16;
  kv::KvLayout layout;
  void* kv_cache = nullptr;  // the device tier
  int32_t layer = 0;
  int32_t num_tokens = 0;
  const void* key = nullptr;    // token t's [num_kv_heads][head_dim] at key + t * key_stride
  const void* value = nullptr;  // likewise with value_stride
  int64_t key_stride = 0;       // elements between tokens; 0 = num_kv_heads * head_dim
  int64_t value_stride = 0;
  // [num_tokens]: slot = block * block_size + offset; negative = skip (padding tokens).
  const int64_t* slot_mapping = nullptr;
};

// Throws KernelArgumentError (no CUDA call). head_dim must be a multiple of 8 and strides
// multiples of 8 elements (16-byte rows).
void validate(const WriteKvCacheParams& params);
void write_kv_cache(const WriteKvCacheParams& params, cudaStream_t stream);

struct CopyBlocksParams {
  DType dtype = DType::bf16;
  kv::KvLayout layout;
  void* kv_cache = nullptr;
  const int32_t* pairs = nullptr;  // device, [num_pairs][2] = (src, dst)
  int32_t num_pairs = 0;
};

void validate(const CopyBlocksParams& params);
// Copies every (layer, K|V) chunk of src into dst, all pairs in one launch. Precondition (as the
// scheduler guarantees for copy-on-write): no dst is also a src of the same call.
void copy_blocks(const CopyBlocksParams& params, cudaStream_t stream);

enum class SwapDirection { device_to_host, host_to_device };

struct SwapParams {
  DType dtype = DType::bf16;
  kv::KvLayout device_layout;  // the two layouts differ in num_blocks only
  kv::KvLayout host_layout;
  void* device_kv = nullptr;
  void* host_kv = nullptr;  // pinned (cudaHostAlloc / cudaHostRegister): copies are async
  SwapDirection direction = SwapDirection::device_to_host;
};

void validate(const SwapParams& params);
// Moves `moves` (from: the source tier's block, to: the destination tier's) with one
// cudaMemcpyAsync per run of consecutive blocks (plan_swap_runs) per (layer, kind). Returns the
// number of copy calls issued. Enqueued on `stream`: the host memory must stay valid until it has run.
int32_t swap_blocks(const SwapParams& params, std::span<const kv::BlockMove> moves, cudaStream_t stream);

}  // namespace pagedllm::cuda
