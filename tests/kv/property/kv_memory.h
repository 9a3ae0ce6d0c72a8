// The simulated KV memory an "executor" fills by following the block tables, and the KV value chain.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/common/types.h"
#include "core/kv/block_pool.h"

namespace pagedllm::kv::property_test {

// What a slot holds. Real KV at position p depends on the salt (tenant, adapter) and on every
// token up to p, so the model stores a fingerprint of exactly that: a prefix hit must reproduce
// it, and a hit across salts or across different earlier blocks shows up as a mismatch.
using KvValue = uint64_t;

constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
inline KvValue first_kv(uint64_t salt) { return splitmix64(salt ^ 0x243f6a8885a308d3ULL); }
inline KvValue next_kv(KvValue previous, TokenId token) {
  return splitmix64(previous ^ splitmix64(static_cast<uint32_t>(token)));
}

class KvMemory {
 public:
  KvMemory(int32_t block_size, int32_t device_blocks, int32_t host_blocks)
      : block_size_(block_size),
        tiers_{std::vector<KvValue>(static_cast<size_t>(device_blocks) * block_size),
               std::vector<KvValue>(static_cast<size_t>(host_blocks) * block_size)} {}

  KvValue* block(Tier tier, BlockId id) {
    return tiers_[static_cast<size_t>(tier)].data() + static_cast<size_t>(id) * block_size_;
  }
  void copy(Tier from_tier, BlockId from, Tier to_tier, BlockId to) {
    std::copy_n(block(from_tier, from), block_size_, block(to_tier, to));
  }

 private:
  int32_t block_size_;
  std::array<std::vector<KvValue>, 2> tiers_;  // indexed by Tier; persists across frees
};

}  // namespace pagedllm::kv::property_test
