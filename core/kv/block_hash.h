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
#include <string>
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

// A prompt whose leading tokens are named by content ids instead of being read: a trace's prefix
// block ids (Mooncake's hash_ids). Token p < num_tokens is a function of (seed, ids[p /
// tokens_per_id], p % tokens_per_id) alone, as trace::materialize_requests writes it, so the chain
// hash of a block inside those tokens follows from the ids without reading a token, and two prompts
// that name the same ids share blocks exactly where their tokens would. The tokens after them may
// be named too, as the request's own stream: token p in [num_tokens, num_named_tokens()) is a
// function of (seed, stream, p) (a synthetic prompt's, sched::SyntheticTokens), shared with no
// other stream.
struct PromptContentIds {
  std::vector<uint64_t> ids;
  int32_t tokens_per_id = 0;
  int32_t num_tokens = 0;         // leading prompt tokens the ids name, <= ids.size() * tokens_per_id
  uint64_t seed = 0;              // of the token content the ids (and the stream) stand for
  int32_t num_stream_tokens = 0;  // tokens named by `stream` after the ids' (0: none)
  uint64_t stream = 0;

  int32_t num_named_tokens() const { return num_tokens + num_stream_tokens; }
  bool empty() const { return num_named_tokens() == 0; }
  // Full blocks of block_size tokens that lie inside the named tokens.
  int32_t num_named_blocks(int32_t block_size) const { return block_size > 0 ? num_named_tokens() / block_size : 0; }
};

// Empty when `content` can name the leading tokens of a prompt of prompt_len tokens; otherwise
// what is wrong with it.
std::string content_ids_problem(const PromptContentIds& content, size_t prompt_len);

// Hash of one full block given its parent's hash (kRootBlockHash for the first block).
BlockHash hash_block(const BlockHash& parent, std::span<const TokenId> tokens, uint64_t salt);

// The chain hashes of every full block of a prompt (tokens.size() / block_size of them). A caller
// that admits the same prompt repeatedly (a scheduler retrying a waiting request) computes them
// once and passes them in PromptRef::block_hashes.
std::vector<BlockHash> hash_prompt_blocks(std::span<const TokenId> tokens, int32_t block_size, uint64_t salt);

// The same for a prompt whose leading tokens are named by `content`: its first
// content.num_named_blocks(block_size) hashes come from the description (no token read): each
// covers the seed, tokens per id, salt, the ids that name tokens before the block's end, the
// stream once past them, and the end, so equal hashes mean equal token prefixes without a chain of
// mixes from block to block; the blocks after them chain on over their tokens, as the KV manager's
// tail hasher continues them. A named hash never equals a token hash by design (a separate
// domain). Throws std::invalid_argument with content_ids_problem's answer.
std::vector<BlockHash> hash_prompt_blocks(std::span<const TokenId> tokens, int32_t block_size, uint64_t salt,
                                          const PromptContentIds& content);
// The same for a prompt of `num_unstored` + tokens.size() tokens whose first num_unstored are not
// given (`tokens` holds the rest): every full block that reaches into them must be named (a
// partial last block is not hashed). Throws std::invalid_argument when one is not.
std::vector<BlockHash> hash_prompt_blocks(std::span<const TokenId> tokens, int32_t num_unstored, int32_t block_size,
                                          uint64_t salt, const PromptContentIds& content);

}  // namespace pagedllm::kv
