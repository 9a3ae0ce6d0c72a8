// Synthetic prompt tokens: the content of a trace's prompts given only as a length (and prefix
// block ids), each token a function of where it lies, so that any one of them can be made alone.
// A simulation then never writes a prompt's tokens: the request carries what they are made from
// (Request::prompt_synthesis), the prefix cache hashes its blocks from the same description
// (kv::PromptContentIds), and an engine whose executor runs no model stores only the prompt's
// last block (Sequence::num_unstored_tokens).
#pragma once

#include <cstdint>
#include <vector>

#include "core/common/types.h"
#include "core/kv/block_hash.h"

namespace pagedllm::sched {

class SyntheticTokens {
 public:
  SyntheticTokens() = default;
  // Tokens are drawn from [begin, end), a range that should leave out the model's special tokens.
  // Throws std::invalid_argument unless 0 <= begin < end.
  SyntheticTokens(uint64_t seed, TokenId begin, TokenId end);

  // Offset `offset` of the block a trace names `block_id` (a Mooncake hash id).
  TokenId block_token(uint64_t block_id, int32_t offset) const;
  // Position `position` of the prompt of stream `stream` (the request's index in its trace).
  TokenId stream_token(uint64_t stream, int32_t position) const;
  // Everything a token depends on besides its place: the seed and the token range
  // (kv::PromptContentIds::seed).
  uint64_t content_seed() const;

  // The token at `position` of the prompt `content` names (position < content.num_named_tokens()).
  TokenId token_at(const kv::PromptContentIds& content, int32_t position) const;
  // Appends tokens [begin, end) of that prompt to `out`.
  void append(const kv::PromptContentIds& content, int32_t begin, int32_t end, std::vector<TokenId>& out) const;

  friend bool operator==(const SyntheticTokens&, const SyntheticTokens&) = default;

 private:
  TokenId pick(uint64_t hash) const { return begin_ + static_cast<TokenId>(hash % range_); }

  uint64_t seed_ = 0;
  TokenId begin_ = 0;
  uint64_t range_ = 1;
};

}  // namespace pagedllm::sched
