// bench_kv's constants and configuration: targets, pool and workload sizes, the manager's settings.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "core/common/types.h"
#include "core/kv/kv_cache_config.h"
#include "tools/bench/bench_timing.h"

namespace pagedllm::kv_bench {

using namespace pagedllm::bench;  // clock, sink, statistics shared with bench_scheduler

inline constexpr double kAppendTargetNs = 50.0;
inline constexpr double kStepTargetUs = 50.0;
inline constexpr int32_t kBlockSize = 16;
inline constexpr SeqId kNoSeq = -1;
inline constexpr TokenId kVocabSize = 32'000;
inline constexpr TokenId kUniqueTokenBase = 1 << 24;  // stamped tokens, outside the vocabulary
inline constexpr const char* kBaselineName = "nano-vllm-style baseline";

struct BenchConfig {
  int32_t steps = 2'000;
  int32_t warmup_steps = 200;
  int32_t sequences = 1'024;
  int32_t device_blocks = 100'000;
  int32_t host_blocks = 20'000;
  int32_t repeats = 3;                 // interleaved runs of every suite; samples are pooled
  int32_t prompt_tokens = 1'000;       // prompts of the decode workload
  int32_t shared_prefix_tokens = 512;  // a system prompt that some prompts start with
  double finish_fraction = 0.01;       // running sequences that finish (and are replaced) per step
  double shared_fraction = 0.5;        // new prompts that start with the shared prefix
  int32_t max_initial_age = 256;       // decode tokens the first sequences already hold
  int32_t micro_prompt_tokens = 512;
  int32_t micro_batches = 100;  // timed batches per operation and repeat
  int32_t append_cycles = 8;    // append cycles (4 blocks of tokens each) per repeat
  uint64_t seed = 0x5eed'cafe'f00dULL;
  bool quick = false;
  std::string json_path;
};

// Sizes of the per-operation suite, scaled to the pool so that it fits with room to spare.
struct MicroSizes {
  int32_t batch = 0;             // operations per timed batch (allocate, free, fork, match)
  int32_t append_sequences = 0;  // sequences appended to in each timed append round
  int32_t resident = 0;          // 1,000-token sequences kept alive in the background
  int32_t swap_groups = 8;
};

inline MicroSizes micro_sizes(const BenchConfig& config) {
  MicroSizes sizes;
  sizes.batch = std::clamp(config.device_blocks / 1'500, 4, 64);
  sizes.append_sequences = std::clamp(config.device_blocks / 400, 4, 256);
  sizes.resident = std::clamp(config.device_blocks / 400, 1, 256);
  return sizes;
}

inline kv::KvCacheConfig kv_config(const BenchConfig& config) {
  kv::KvCacheConfig result;
  result.block_size = kBlockSize;
  result.num_device_blocks = config.device_blocks;
  result.num_host_blocks = config.host_blocks;
  return result;  // default watermark (1%) and prefix caching on, as the engine runs it
}

}  // namespace pagedllm::kv_bench
