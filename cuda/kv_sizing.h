// How many KV blocks the CUDA executor gets, as vLLM sizes them: after the weights are loaded
// and a profiling forward pass at the step's largest token count has run, the device blocks are
// what is left of gpu_memory_utilization x total memory, and the host (swap) blocks are what
// --swap-space holds. Host arithmetic only, so it is tested without a GPU.
#pragma once

#include <cstdint>
#include <string>

#include "core/model/model_config.h"

namespace pagedllm::cuda {

struct KvSizingInput {
  std::uint64_t total_memory_bytes = 0;  // the device's (cudaMemGetInfo)
  std::uint64_t used_memory_bytes = 0;   // in use after weights, activations and the profiling run
                                         // (total - free: other processes' memory counts too)
  double gpu_memory_utilization = 0.9;   // fraction of total memory this engine may fill
  std::uint64_t swap_space_bytes = 0;    // pinned host memory for swapped-out blocks
  std::uint64_t block_bytes = 0;         // one block across every layer, K and V
  // Device bytes of a block of a second cache with as many blocks as this one, on the same device
  // (a draft model's, for speculative decoding): each device block is sized with one of its own.
  std::uint64_t companion_block_bytes = 0;
  int32_t block_size = 16;    // tokens per block
  int32_t max_model_len = 0;  // for the concurrency figure
};

struct KvSizing {
  int32_t num_device_blocks = 0;
  int32_t num_host_blocks = 0;

  int64_t device_tokens(int32_t block_size) const noexcept {
    return static_cast<int64_t>(num_device_blocks) * block_size;
  }
};

// Bytes of one block of `block_size` tokens across every layer, K and V, 16-bit elements.
std::uint64_t kv_block_bytes(const model::ModelConfig& config, int32_t block_size);

// Device blocks: the budget over (block_bytes + companion_block_bytes), as vLLM splits the cache
// between a target and its draft model; host blocks: swap space over block_bytes. Throws
// std::runtime_error naming the figures when not even one block fits (raise
// gpu_memory_utilization, or lower max_num_batched_tokens) and when utilization is outside
// (0, 1]. Block counts are capped at kv::kMaxBlocksPerTier.
KvSizing size_kv_cache(const KvSizingInput& input);

// "GPU blocks: N (T tokens), CPU blocks: M, max concurrency for max_model_len L: X.XXx" (and,
// with a companion cache, "sized with a draft cache of as many blocks, B MiB each").
std::string describe_kv_sizing(const KvSizing& sizing, const KvSizingInput& input);

}  // namespace pagedllm::cuda
