// The reference model: each live sequence's tokens, tier and expected KV; operation counts and their summary.
#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "core/common/types.h"
#include "core/kv/block_pool.h"
#include "core/kv/kv_cache_manager.h"
#include "tests/kv/property/kv_memory.h"

namespace pagedllm::kv::property_test {

struct ModelSeq {
  SeqId id = 0;
  int64_t family = 0;  // sequences related by forks; swapped as one group
  uint64_t salt = 0;
  Tier tier = Tier::device;
  std::vector<TokenId> prompt;
  std::vector<TokenId> tokens;  // the tokens that hold slots, prompt first
  std::vector<KvValue> kv;      // the KV each of those positions must hold

  int32_t num_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t prompt_left() const { return std::max(0, static_cast<int32_t>(prompt.size()) - num_tokens()); }
  void push(TokenId token) {
    kv.push_back(next_kv(kv.empty() ? first_kv(salt) : kv.back(), token));
    tokens.push_back(token);
  }
};

struct RecentPrompt {
  std::vector<TokenId> tokens;
  uint64_t salt = 0;
};

struct OpCounts {
  int64_t ops = 0;
  int64_t allocate = 0;
  int64_t allocate_chunk = 0;
  int64_t prefix_hit_allocs = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t salted_allocs = 0;
  int64_t prefill_chunk = 0;
  int64_t decode = 0;
  int64_t multi_append = 0;
  int64_t copy_on_write = 0;
  int64_t fork = 0;
  int64_t frees = 0;
  int64_t swap_out = 0;
  int64_t swap_in = 0;
  int64_t swap_in_copied = 0;       // host blocks copied back to the device
  int64_t swap_in_reused = 0;       // host blocks brought back as still-cached device blocks
  int64_t swap_in_reused_free = 0;  // of those, distinct blocks revived from the free list
  int64_t reset_prefix_cache = 0;
  int64_t forced_ok = 0;  // a try_ call said no for the watermark only, and the plain call succeeded
  // Refused calls, each checked to leave the manager unchanged.
  int64_t refused_unknown = 0;
  int64_t refused_double_free = 0;
  int64_t refused_swapped_append = 0;
  int64_t refused_bad_args = 0;
  int64_t refused_alloc_full = 0;
  int64_t refused_append_full = 0;
  int64_t refused_host_full = 0;
  int64_t refused_swap_in_full = 0;

  int64_t refusals() const {
    return refused_unknown + refused_double_free + refused_swapped_append + refused_bad_args + refused_alloc_full +
           refused_append_full + refused_host_full + refused_swap_in_full;
  }
};

inline std::string summary(const OpCounts& c, const KvStats& stats) {
  std::ostringstream out;
  out << "ops=" << c.ops << " allocate=" << c.allocate << " allocate_chunk=" << c.allocate_chunk
      << " prefill_chunk=" << c.prefill_chunk << " decode=" << c.decode << " multi_append=" << c.multi_append
      << " fork=" << c.fork << " copy_on_write=" << c.copy_on_write << " free=" << c.frees << " swap_out=" << c.swap_out
      << " swap_in=" << c.swap_in << " swap_in_copied=" << c.swap_in_copied << " swap_in_reused=" << c.swap_in_reused
      << " swap_in_reused_free=" << c.swap_in_reused_free << " reset_prefix_cache=" << c.reset_prefix_cache
      << " prefix_hit_allocs=" << c.prefix_hit_allocs << " prefix_hit_tokens=" << c.prefix_hit_tokens
      << " salted_allocs=" << c.salted_allocs << " evictions=" << stats.evictions << " forced_ok=" << c.forced_ok
      << " refusals=" << c.refusals() << " (unknown=" << c.refused_unknown << " double_free=" << c.refused_double_free
      << " swapped_append=" << c.refused_swapped_append << " bad_args=" << c.refused_bad_args
      << " alloc_full=" << c.refused_alloc_full << " append_full=" << c.refused_append_full
      << " host_full=" << c.refused_host_full << " swap_in_full=" << c.refused_swap_in_full << ")";
  return out.str();
}

}  // namespace pagedllm::kv::property_test
