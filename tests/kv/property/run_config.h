// The property run's configuration, its fixed-seed random draws and the generator's constants.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "core/kv/kv_cache_config.h"

// Sanitizer builds (ASan + UBSan: each operation some 20 times slower) run the properties over a
// quarter of the operations; the release build runs them in full. The generator's coverage
// thresholds scale with the count (test_kv_property.cpp).
#if defined(__SANITIZE_ADDRESS__)
#define PAGEDLLM_PROPERTY_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PAGEDLLM_PROPERTY_SANITIZED 1
#endif
#endif

namespace pagedllm::kv::property_test {

#ifdef PAGEDLLM_PROPERTY_SANITIZED
inline constexpr int64_t kOpsDivisor = 4;
#else
inline constexpr int64_t kOpsDivisor = 1;
#endif

struct RunConfig {
  uint64_t seed = 0x5eed'0001;
  int64_t num_ops = 1'000'000 / kOpsDivisor;
  int32_t block_size = 4;
  int32_t num_device_blocks = 96;
  int32_t num_host_blocks = 48;
  int32_t max_live_seqs = 12;
  double watermark = 0.04;
  bool enable_prefix_caching = true;
  bool event_log = true;  // log every mutation (counted, and copied to a target when one is given)
};

inline KvCacheConfig kv_config(const RunConfig& run) {
  KvCacheConfig config;
  config.block_size = run.block_size;
  config.num_device_blocks = run.num_device_blocks;
  config.num_host_blocks = run.num_host_blocks;
  config.watermark = run.watermark;
  config.enable_prefix_caching = run.enable_prefix_caching;
  return config;
}

// Uniform draws by our own arithmetic: std::uniform_int_distribution's output differs between
// standard libraries, mt19937_64's raw output does not.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // Uniform in [0, n), n > 0, by rejection of the low 2^64 mod n raw values.
  uint64_t below(uint64_t n) {
    const uint64_t threshold = (uint64_t{0} - n) % n;
    for (;;) {
      const uint64_t x = engine_();
      if (x >= threshold) return x % n;
    }
  }
  int32_t between(int32_t lo, int32_t hi) {  // inclusive
    return lo + static_cast<int32_t>(below(static_cast<uint64_t>(hi - lo) + 1));
  }
  bool percent(int32_t p) { return below(100) < static_cast<uint64_t>(p); }
  template <typename T>
  void shuffle(std::vector<T>& values) {  // Fisher-Yates; std::shuffle is implementation-defined
    for (size_t i = values.size(); i > 1; --i) std::swap(values[i - 1], values[below(i)]);
  }

 private:
  std::mt19937_64 engine_;
};

inline constexpr uint64_t kVocab = 32000;
inline constexpr int32_t kForcePercent = 40;  // how often a call that a try_ call refused is made anyway
inline constexpr int32_t kNumTopics = 6;      // prefix families that many prompts start with
inline constexpr size_t kRecentPrompts = 16;
inline constexpr size_t kRecentFrees = 16;
inline constexpr size_t kTraceLength = 16;

}  // namespace pagedllm::kv::property_test
