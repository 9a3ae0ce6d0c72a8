// Content hash of a full KV block, chained over the blocks before it.
//
// A block's hash covers its parent's hash, its own token ids and an optional salt (a tenant or
// adapter id that must not share cache entries with others). Equal hashes therefore mean equal
// token prefixes, which is what makes a prefix-cache hit safe. The hash is 128 bits wide, so an
// accidental collision between two different prefixes is not a practical concern (2^-64 even
// after 2^32 cached blocks); it is not a cryptographic hash and does not defend against a client
// that crafts collisions on purpose (use per-tenant salts for isolation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/common/types.h"

namespace pagedllm::kv {

struct BlockHash {
  uint64_t lo = 0;
  uint64_t hi = 0;

  friend bool operator==(const BlockHash&, const BlockHash&) = default;
};

// Hash of "no parent": the seed of every chain.
inline constexpr BlockHash kRootBlockHash{0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL};

// Hash of one full block given its parent's hash (kRootBlockHash for the first block).
BlockHash hash_block(const BlockHash& parent, std::span<const TokenId> tokens, uint64_t salt);

// For unordered containers keyed by BlockHash: the low word is already well mixed.
struct BlockHashHasher {
  size_t operator()(const BlockHash& hash) const noexcept { return static_cast<size_t>(hash.lo); }
};

}  // namespace pagedllm::kv
