// Prompts for the KV tests: consecutive token ids, so that every block's tokens (and hash) differ.
#pragma once

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/common/types.h"

namespace pagedllm::test {

inline std::vector<TokenId> iota_tokens(int32_t count, TokenId first = 100) {
  std::vector<TokenId> tokens(static_cast<std::size_t>(count));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

}  // namespace pagedllm::test
