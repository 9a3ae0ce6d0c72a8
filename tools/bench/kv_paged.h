// pagedllm's KvCacheManager behind the interface the bench_kv workloads drive (as kv_baseline.h's baseline).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/common/types.h"
#include "core/kv/kv_cache_manager.h"
#include "core/kv/kv_event_log.h"
#include "tools/bench/bench_kv_config.h"

namespace pagedllm::kv_bench {

// pagedllm's KvCacheManager as the workloads drive it: a new sequence gets slots for its whole
// prompt at admission (no chunked prefill), and each decode step appends one token.
class PagedKv {
 public:
  static constexpr bool kHasCowAndSwap = true;

  PagedKv(const BenchConfig& config, kv::KvEventLog* log) : manager_(kv_config(config), log), log_(log) {}

  void begin_step(int64_t step) {
    if (log_ != nullptr) log_->set_step(step);
  }
  int32_t num_free_blocks() const { return manager_.device_pool().num_free(); }

  // The whole prompt's slots, leaving the watermark free (an admission), or nothing.
  std::optional<int32_t> try_allocate(SeqId seq, std::span<const TokenId> prompt) {
    const int32_t watermark = manager_.watermark_blocks();
    const kv::AllocResult result = manager_.try_allocate(seq, kv::PromptRef{prompt, 0}, length(prompt),
                                                         {.reserve_blocks = watermark, .min_free_after = watermark});
    if (result.status != kv::AllocStatus::ok) return std::nullopt;
    return result.num_cached_tokens;
  }
  int32_t allocate(SeqId seq, std::span<const TokenId> prompt) {
    return manager_.allocate(seq, kv::PromptRef{prompt, 0}, length(prompt));
  }
  int32_t match_prefix(std::span<const TokenId> prompt) const {
    return manager_.match_prefix(kv::PromptRef{prompt, 0}).num_cached_tokens;
  }
  // One token's slot, or nothing when no block is free. Returns a value that depends on the call,
  // for the sink.
  std::optional<int64_t> try_append(SeqId seq, TokenId token) {
    copies_.clear();
    if (!manager_.try_append_slots({.seq = seq, .tokens = std::span<const TokenId>(&token, 1)}, copies_)) {
      return std::nullopt;
    }
    return copies_.empty() ? 1 : copies_.front().dst;
  }
  int64_t append(SeqId seq, TokenId token) {
    const auto copy = manager_.append_slots(seq, std::span<const TokenId>(&token, 1));
    return copy ? copy->dst : 1;
  }
  void fork(SeqId parent, SeqId child) { manager_.fork(parent, child); }
  void free(SeqId seq) { manager_.free(seq); }
  size_t swap_out(std::span<const SeqId> group) { return manager_.swap_out(group).size(); }
  size_t swap_in(std::span<const SeqId> group) { return manager_.swap_in(group).size(); }

  kv::KvCacheManager& manager() { return manager_; }

 private:
  static int32_t length(std::span<const TokenId> prompt) { return static_cast<int32_t>(prompt.size()); }

  kv::KvCacheManager manager_;
  kv::KvEventLog* log_;
  std::vector<kv::BlockCopy> copies_;  // try_append's, reused
};

}  // namespace pagedllm::kv_bench
