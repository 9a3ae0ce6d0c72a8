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
#include <vector>

#include "core/common/types.h"

namespace pagedllm::kv {

struct BlockHash {
  uint64_t lo = 0;
  uint64_t hi = 0;

  friend bool operator==(const BlockHash&, const BlockHash&) = default;
};

// Hash of "no parent": the seed of every chain.
inline constexpr BlockHash kRootBlockHash{0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL};

// Streams one block's tokens into its hash, so a sequence hashes each token as it is appended
// instead of keeping the tokens of its unfinished block. Trivially copyable (fork copies it).
class BlockHasher {
 public:
  BlockHasher() { reset(kRootBlockHash, 0); }
  BlockHasher(const BlockHash& parent, uint64_t salt) { reset(parent, salt); }

  void reset(const BlockHash& parent, uint64_t salt);
  void add(TokenId token);
  int32_t num_tokens() const { return num_tokens_; }
  BlockHash finish() const;  // the hash of the tokens added so far; the state is unchanged

 private:
  uint64_t lo_ = 0;
  uint64_t hi_ = 0;
  uint32_t pending_ = 0;  // first token of an incomplete pair
  int32_t num_tokens_ = 0;
};

// Hash of one full block given its parent's hash (kRootBlockHash for the first block).
BlockHash hash_block(const BlockHash& parent, std::span<const TokenId> tokens, uint64_t salt);

// The chain hashes of every full block of a prompt (tokens.size() / block_size of them). A caller
// that admits the same prompt repeatedly (a scheduler retrying a waiting request) computes them
// once and passes them in PromptRef::block_hashes.
std::vector<BlockHash> hash_prompt_blocks(std::span<const TokenId> tokens, int32_t block_size, uint64_t salt);

}  // namespace pagedllm::kv
