#include "core/kv/block_hash.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "core/common/mix.h"

namespace pagedllm::kv {
namespace {

constexpr uint64_t kLaneMultiplierLo = 0x9e3779b97f4a7c15ULL;
constexpr uint64_t kLaneMultiplierHi = 0xbf58476d1ce4e5b9ULL;
constexpr uint64_t kOddTokenMarker = uint64_t{1} << 63;
constexpr uint64_t kNamedContentDomain = 0xa4093822299f31d0ULL;
constexpr uint64_t kStreamDomain = 0x082efa98ec4e6c89ULL;

// Two lanes with different multipliers and rotations absorb every input word, so the 128-bit
// result behaves as two independent 64-bit hashes; the lanes are cross-mixed at the end.
inline void absorb(uint64_t& lo, uint64_t& hi, uint64_t word) {
  lo = mix64(lo ^ (word * kLaneMultiplierLo));
  hi = mix64(std::rotl(hi, 23) ^ (std::rotl(word, 17) * kLaneMultiplierHi));
}

BlockHash finish_hash(uint64_t lo, uint64_t hi, uint64_t length) {
  lo = mix64(lo ^ length ^ std::rotl(hi, 32));
  hi = mix64(hi + length * kLaneMultiplierLo + lo);
  return BlockHash{lo, hi};
}

// The named blocks of a prompt, in order. Block i's hash covers everything its prefix of tokens is
// made from: the layout (seed, tokens per id), the salt, the ids that name tokens before its end,
// then (once past them) the stream and where it starts, and the end itself. Equal hashes therefore
// mean equal token prefixes, as a chain does; but each id is absorbed once, not once per block,
// and no block's mixing waits for the one before it.
class NamedPrefixHasher {
 public:
  NamedPrefixHasher(const PromptContentIds& content, uint64_t salt) : content_(content) {
    const uint64_t layout =
        content.seed ^ (static_cast<uint64_t>(content.tokens_per_id) << 32 | kNamedContentDomain >> 32);
    lo_ = mix64(kRootBlockHash.lo ^ salt ^ layout);
    hi_ = mix64(kRootBlockHash.hi + std::rotl(salt, 29) + std::rotl(layout, 17) + kNamedContentDomain);
  }

  // The hash of the block ending at `end` (increasing from call to call).
  BlockHash block(int64_t end) {
    const int64_t ids_end = std::min<int64_t>(end, content_.num_tokens);
    if (ids_end > 0) {
      const auto last = static_cast<size_t>((ids_end - 1) / content_.tokens_per_id);
      for (; next_id_ <= last; ++next_id_) absorb(lo_, hi_, content_.ids[next_id_]);
    }
    if (end > content_.num_tokens && !stream_absorbed_) {
      absorb(lo_, hi_, content_.stream ^ kStreamDomain);
      absorb(lo_, hi_, static_cast<uint64_t>(content_.num_tokens));
      stream_absorbed_ = true;
    }
    return finish_hash(lo_, hi_, static_cast<uint64_t>(end));
  }

 private:
  const PromptContentIds& content_;
  uint64_t lo_ = 0;
  uint64_t hi_ = 0;
  size_t next_id_ = 0;
  bool stream_absorbed_ = false;
};

}  // namespace

void BlockHasher::reset(const BlockHash& parent, uint64_t salt) {
  lo_ = mix64(parent.lo ^ salt);
  hi_ = mix64(parent.hi + std::rotl(salt, 29) + 0x6a09e667f3bcc909ULL);
  pending_ = 0;
  num_tokens_ = 0;
}

void BlockHasher::add(TokenId token) {
  const auto bits = static_cast<uint32_t>(token);
  if ((num_tokens_ & 1) == 0) {
    pending_ = bits;
  } else {
    absorb(lo_, hi_, pending_ | (static_cast<uint64_t>(bits) << 32));
  }
  ++num_tokens_;
}

BlockHash BlockHasher::finish() const {
  uint64_t lo = lo_;
  uint64_t hi = hi_;
  if ((num_tokens_ & 1) != 0) absorb(lo, hi, pending_ | kOddTokenMarker);
  return finish_hash(lo, hi, static_cast<uint64_t>(num_tokens_));
}

BlockHash hash_block(const BlockHash& parent, std::span<const TokenId> tokens, uint64_t salt) {
  BlockHasher hasher(parent, salt);
  for (const TokenId token : tokens) hasher.add(token);
  return hasher.finish();
}

std::vector<BlockHash> hash_prompt_blocks(std::span<const TokenId> tokens, int32_t block_size, uint64_t salt) {
  return hash_prompt_blocks(tokens, block_size, salt, PromptContentIds{});
}

std::string content_ids_problem(const PromptContentIds& content, size_t prompt_len) {
  if (content.empty()) return {};
  const int64_t covered = static_cast<int64_t>(content.ids.size()) * content.tokens_per_id;
  const bool ids_ok = content.num_tokens == 0
                          ? content.ids.empty() || content.tokens_per_id >= 1
                          : content.tokens_per_id >= 1 && content.num_tokens > 0 && content.num_tokens <= covered;
  if (ids_ok && content.num_tokens >= 0 && content.num_stream_tokens >= 0 &&
      static_cast<size_t>(content.num_named_tokens()) <= prompt_len) {
    return {};
  }
  const std::string stream =
      content.num_stream_tokens != 0 ? " and " + std::to_string(content.num_stream_tokens) + " by their stream" : "";
  return "content ids name " + std::to_string(content.num_tokens) + " prompt tokens with " +
         std::to_string(content.ids.size()) + " ids of " + std::to_string(content.tokens_per_id) + " tokens each" +
         stream + "; the prompt has " + std::to_string(prompt_len);
}

std::vector<BlockHash> hash_prompt_blocks(std::span<const TokenId> tokens, int32_t block_size, uint64_t salt,
                                          const PromptContentIds& content) {
  return hash_prompt_blocks(tokens, 0, block_size, salt, content);
}

std::vector<BlockHash> hash_prompt_blocks(std::span<const TokenId> tokens, int32_t num_unstored, int32_t block_size,
                                          uint64_t salt, const PromptContentIds& content) {
  const size_t prompt_len = static_cast<size_t>(num_unstored) + tokens.size();
  if (const std::string problem = content_ids_problem(content, prompt_len); !problem.empty()) {
    throw std::invalid_argument("block hash: " + problem);
  }
  std::vector<BlockHash> hashes;
  if (block_size <= 0) return hashes;
  const size_t num_full = prompt_len / static_cast<size_t>(block_size);
  const auto num_named = static_cast<size_t>(content.num_named_blocks(block_size));
  // A block hashed from its tokens must have them all.
  if (num_unstored < 0 ||
      (num_full > num_named && static_cast<size_t>(num_unstored) > num_named * static_cast<size_t>(block_size))) {
    throw std::invalid_argument("block hash: " + std::to_string(num_unstored) +
                                " prompt tokens are not given, past the " + std::to_string(num_named) +
                                " blocks their content ids name");
  }
  hashes.resize(num_full);
  NamedPrefixHasher named(content, salt);
  const size_t num_from_ids = std::min(num_named, num_full);
  for (size_t i = 0; i < num_from_ids; ++i) hashes[i] = named.block(static_cast<int64_t>((i + 1) * block_size));
  BlockHash parent = num_from_ids > 0 ? hashes[num_from_ids - 1] : kRootBlockHash;
  for (size_t i = num_from_ids; i < num_full; ++i) {
    const size_t begin = i * static_cast<size_t>(block_size);
    parent = hash_block(
        parent, tokens.subspan(begin - static_cast<size_t>(num_unstored), static_cast<size_t>(block_size)), salt);
    hashes[i] = parent;
  }
  return hashes;
}

}  // namespace pagedllm::kv
