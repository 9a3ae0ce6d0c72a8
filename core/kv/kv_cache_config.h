// Sizing and behaviour of the paged KV cache, as the engine's options set them.
#pragma once

#include <cstdint>

namespace pagedllm::kv {

struct KvCacheConfig {
  int32_t block_size = 16;            // tokens per block (vLLM's default)
  int32_t num_device_blocks = 0;      // blocks in accelerator memory (or the CPU engine's KV store)
  int32_t num_host_blocks = 0;        // swap-space blocks in (pinned) host memory; 0 disables swap
  double watermark = 0.01;            // fraction of device blocks new admissions must leave free
  bool enable_prefix_caching = true;  // share full blocks with equal prefixes across requests
  // The model's sliding attention window (kv/attention_window.h), 0 = none: a sequence's blocks
  // wholly before the window of its next query are released (its table keeps kNoBlock there).
  int32_t sliding_window = 0;
};

// Upper bounds that catch unit mix-ups (bytes passed as blocks, tokens as blocks).
inline constexpr int32_t kMaxBlockSize = 1 << 17;  // a whole 128k context in one block (the contiguous baseline)
inline constexpr int32_t kMaxBlocksPerTier = 1 << 26;

// Throws KvCacheError naming the field when the configuration is unusable.
void validate(const KvCacheConfig& config);

}  // namespace pagedllm::kv
