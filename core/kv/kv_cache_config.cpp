#include "core/kv/kv_cache_config.h"

#include <cmath>
#include <string>

#include "core/kv/kv_errors.h"

namespace pagedllm::kv {

void validate(const KvCacheConfig& config) {
  if (config.block_size < 1 || config.block_size > kMaxBlockSize) {
    throw KvCacheError("kv cache config: block_size must be in [1, " + std::to_string(kMaxBlockSize) + "], got " +
                       std::to_string(config.block_size));
  }
  if (config.num_device_blocks < 1 || config.num_device_blocks > kMaxBlocksPerTier) {
    throw KvCacheError("kv cache config: num_device_blocks must be in [1, " + std::to_string(kMaxBlocksPerTier) +
                       "], got " + std::to_string(config.num_device_blocks));
  }
  if (config.num_host_blocks < 0 || config.num_host_blocks > kMaxBlocksPerTier) {
    throw KvCacheError("kv cache config: num_host_blocks must be in [0, " + std::to_string(kMaxBlocksPerTier) +
                       "], got " + std::to_string(config.num_host_blocks));
  }
  if (config.sliding_window < 0) {
    throw KvCacheError("kv cache config: sliding_window must be 0 (none) or positive, got " +
                       std::to_string(config.sliding_window));
  }
  if (!std::isfinite(config.watermark) || config.watermark < 0.0 || config.watermark >= 1.0) {
    throw KvCacheError("kv cache config: watermark must be a fraction in [0, 1), got " +
                       std::to_string(config.watermark));
  }
}

}  // namespace pagedllm::kv
