#include "core/sched/synthetic_prompt.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/common/mix.h"
#include "core/sched/request.h"

namespace pagedllm::sched {
namespace {

// Distinct domains so that block content never coincides with per-request content by design.
constexpr uint64_t kBlockDomain = 0x5bd1e9955bd1e995ULL;
constexpr uint64_t kRequestDomain = 0x94d049bb133111ebULL;
constexpr uint64_t kSeedDomain = 0xd6e8feb86659fd93ULL;

}  // namespace

SyntheticTokens::SyntheticTokens(uint64_t seed, TokenId begin, TokenId end)
    : seed_(mix64(seed ^ kSeedDomain)),
      begin_(begin),
      range_(static_cast<uint64_t>(end) - static_cast<uint64_t>(begin)) {
  if (begin < 0 || end <= begin) {
    throw std::invalid_argument("synthetic tokens: need 0 <= begin < end, got [" + std::to_string(begin) + ", " +
                                std::to_string(end) + ")");
  }
}

TokenId SyntheticTokens::block_token(uint64_t block_id, int32_t offset) const {
  return pick(mix64(seed_ ^ kBlockDomain ^ mix64(block_id * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(offset))));
}

TokenId SyntheticTokens::stream_token(uint64_t stream, int32_t position) const {
  return pick(mix64(seed_ ^ kRequestDomain ^ mix64(stream << 32 ^ static_cast<uint32_t>(position))));
}

uint64_t SyntheticTokens::content_seed() const {
  return mix64(seed_ ^ (static_cast<uint64_t>(static_cast<uint32_t>(begin_)) << 32 | range_));
}

TokenId SyntheticTokens::token_at(const kv::PromptContentIds& content, int32_t position) const {
  if (position < content.num_tokens) {
    return block_token(content.ids[static_cast<size_t>(position / content.tokens_per_id)],
                       position % content.tokens_per_id);
  }
  return stream_token(content.stream, position);
}

void SyntheticTokens::append(const kv::PromptContentIds& content, int32_t begin, int32_t end,
                             std::vector<TokenId>& out) const {
  out.reserve(out.size() + static_cast<size_t>(std::max(0, end - begin)));
  int32_t position = begin;
  // Named blocks a block at a time (no division per token), then the stream.
  while (position < std::min(end, content.num_tokens)) {
    const uint64_t id = content.ids[static_cast<size_t>(position / content.tokens_per_id)];
    const int32_t block_end =
        std::min({end, content.num_tokens, (position / content.tokens_per_id + 1) * content.tokens_per_id});
    for (int32_t offset = position % content.tokens_per_id; position < block_end; ++position, ++offset) {
      out.push_back(block_token(id, offset));
    }
  }
  for (; position < end; ++position) out.push_back(stream_token(content.stream, position));
}

void write_prompt(Request& request) {
  if (!request.prompt_tokens.empty() || !request.prompt_synthesis) return;
  request.prompt_synthesis->append(request.content_ids, 0, request.content_ids.num_named_tokens(),
                                   request.prompt_tokens);
}

}  // namespace pagedllm::sched
