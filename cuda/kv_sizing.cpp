#include "cuda/kv_sizing.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "core/kv/kv_cache_config.h"
#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

int32_t blocks_in(std::uint64_t bytes, std::uint64_t block_bytes) {
  return static_cast<int32_t>(std::min<std::uint64_t>(bytes / block_bytes, kv::kMaxBlocksPerTier));
}

}  // namespace

std::uint64_t kv_block_bytes(const model::ModelConfig& config, int32_t block_size) {
  return 2ull * static_cast<std::uint64_t>(config.num_layers) * static_cast<std::uint64_t>(config.num_kv_heads) *
         static_cast<std::uint64_t>(config.head_dim) * static_cast<std::uint64_t>(block_size) * kDTypeBytes;
}

KvSizing size_kv_cache(const KvSizingInput& input) {
  if (!(input.gpu_memory_utilization > 0.0 && input.gpu_memory_utilization <= 1.0)) {
    throw std::runtime_error("gpu_memory_utilization must be in (0, 1], got " +
                             std::to_string(input.gpu_memory_utilization));
  }
  if (input.block_bytes == 0) throw std::runtime_error("KV sizing: a block of 0 bytes");
  const double budget = input.gpu_memory_utilization * static_cast<double>(input.total_memory_bytes) -
                        static_cast<double>(input.used_memory_bytes);
  const std::uint64_t device_block_bytes = input.block_bytes + input.companion_block_bytes;
  KvSizing sizing;
  sizing.num_device_blocks = blocks_in(budget > 0.0 ? static_cast<std::uint64_t>(budget) : 0, device_block_bytes);
  sizing.num_host_blocks = blocks_in(input.swap_space_bytes, input.block_bytes);
  if (sizing.num_device_blocks <= 0) {
    char message[512];
    std::snprintf(message, sizeof message,
                  "no memory left for the KV cache: %.0f MiB in use after loading the weights and a profiling "
                  "forward pass, %.0f MiB allowed (gpu_memory_utilization %.2f of %.0f MiB), one block needs "
                  "%.2f MiB; raise gpu_memory_utilization or lower max_num_batched_tokens",
                  static_cast<double>(input.used_memory_bytes) / kMiB,
                  input.gpu_memory_utilization * static_cast<double>(input.total_memory_bytes) / kMiB,
                  input.gpu_memory_utilization, static_cast<double>(input.total_memory_bytes) / kMiB,
                  static_cast<double>(device_block_bytes) / kMiB);
    throw std::runtime_error(message);
  }
  return sizing;
}

std::string describe_kv_sizing(const KvSizing& sizing, const KvSizingInput& input) {
  const int64_t tokens = sizing.device_tokens(input.block_size);
  char line[320];
  const int length = std::snprintf(
      line, sizeof line, "GPU blocks: %d (%lld tokens), CPU blocks: %d, max concurrency for max_model_len %d: %.2fx",
      sizing.num_device_blocks, static_cast<long long>(tokens), sizing.num_host_blocks, input.max_model_len,
      input.max_model_len > 0 ? static_cast<double>(tokens) / input.max_model_len : 0.0);
  if (input.companion_block_bytes > 0 && length > 0 && static_cast<std::size_t>(length) < sizeof line) {
    std::snprintf(line + length, sizeof line - static_cast<std::size_t>(length),
                  ", sized with a draft cache of as many blocks (%.3f MiB each)",
                  static_cast<double>(input.companion_block_bytes) / kMiB);
  }
  return line;
}

}  // namespace pagedllm::cuda
