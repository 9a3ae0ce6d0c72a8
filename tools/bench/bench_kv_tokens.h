// The fixed-seed source of every token and prompt bench_kv feeds to the block managers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "core/common/types.h"
#include "tools/bench/bench_kv_config.h"

namespace pagedllm::kv_bench {

// Every token the benchmark feeds in, from one fixed-seed generator. Prompts are slices of a random
// pool made distinct by one stamped token, so only the shared prefix is ever found in a prefix
// cache; two instances with the same seed produce the same sequence of prompts and decisions.
class TokenSource {
 public:
  TokenSource(uint64_t seed, int32_t shared_prefix_tokens)
      : rng_(seed), pool_(kPoolTokens), shared_prefix_(static_cast<size_t>(shared_prefix_tokens)) {
    std::uniform_int_distribution<TokenId> token(0, kVocabSize - 1);
    for (TokenId& t : pool_) t = token(rng_);
    for (TokenId& t : shared_prefix_) t = token(rng_);
  }

  static constexpr size_t kPoolTokens = size_t{1} << 16;

  uint64_t random() { return rng_(); }
  bool chance(double probability) { return static_cast<double>(rng_() >> 11) * 0x1.0p-53 < probability; }
  std::span<const TokenId> shared_prefix() const { return shared_prefix_; }
  TokenId decode_token(uint64_t index) const { return pool_[index % kPoolTokens]; }

  // Fills `out` with a prompt that no other call returns, after the shared prefix when `shared`.
  void fill_prompt(std::span<TokenId> out, bool shared) {
    size_t pos = 0;
    if (shared) {
      pos = std::min(shared_prefix_.size(), out.size() - 1);
      std::copy_n(shared_prefix_.begin(), pos, out.begin());
    }
    out[pos++] = kUniqueTokenBase + next_unique_++;
    const size_t rest = out.size() - pos;
    const size_t start = rng_() % (kPoolTokens - rest);
    std::copy_n(pool_.begin() + static_cast<std::ptrdiff_t>(start), rest,
                out.begin() + static_cast<std::ptrdiff_t>(pos));
  }

 private:
  std::mt19937_64 rng_;
  std::vector<TokenId> pool_;
  std::vector<TokenId> shared_prefix_;
  TokenId next_unique_ = 0;
};

}  // namespace pagedllm::kv_bench
