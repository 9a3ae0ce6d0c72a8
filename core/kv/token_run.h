// A run of a sequence's positions as the KV manager takes them, where a simulated prompt's leading
// tokens may be unstored (sched::Sequence::num_unstored_tokens): counted, not given.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "core/common/types.h"

namespace pagedllm::kv {

struct TokenRun {
  std::span<const TokenId> stored;  // the run's stored tokens, after its unstored ones
  int32_t num_unstored = 0;         // leading positions of the run that are not stored

  int32_t size() const { return num_unstored + static_cast<int32_t>(stored.size()); }

  // Positions [begin, end) of a sequence whose first `num_unstored` positions are not stored and
  // whose position p >= num_unstored is tokens[p - num_unstored].
  static TokenRun of(std::span<const TokenId> tokens, int32_t num_unstored, int32_t begin, int32_t end) {
    const int32_t first_stored = std::max(begin, num_unstored);
    return TokenRun{.stored = end > first_stored ? tokens.subspan(static_cast<size_t>(first_stored - num_unstored),
                                                                  static_cast<size_t>(end - first_stored))
                                                 : std::span<const TokenId>(),
                    .num_unstored = std::max(0, std::min(end, num_unstored) - begin)};
  }
};

}  // namespace pagedllm::kv
