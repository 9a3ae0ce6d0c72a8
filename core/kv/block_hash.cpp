#include "core/kv/block_hash.h"

#include <bit>

#include "core/common/mix.h"

namespace pagedllm::kv {
namespace {

constexpr uint64_t kLaneMultiplierLo = 0x9e3779b97f4a7c15ULL;
constexpr uint64_t kLaneMultiplierHi = 0xbf58476d1ce4e5b9ULL;
constexpr uint64_t kOddTokenMarker = uint64_t{1} << 63;

// Two lanes with different multipliers and rotations absorb every input word, so the 128-bit
// result behaves as two independent 64-bit hashes; the lanes are cross-mixed at the end.
inline void absorb(uint64_t& lo, uint64_t& hi, uint64_t word) {
  lo = mix64(lo ^ (word * kLaneMultiplierLo));
  hi = mix64(std::rotl(hi, 23) ^ (std::rotl(word, 17) * kLaneMultiplierHi));
}

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
  const auto length = static_cast<uint64_t>(num_tokens_);
  lo = mix64(lo ^ length ^ std::rotl(hi, 32));
  hi = mix64(hi + length * kLaneMultiplierLo + lo);
  return BlockHash{lo, hi};
}

BlockHash hash_block(const BlockHash& parent, std::span<const TokenId> tokens, uint64_t salt) {
  BlockHasher hasher(parent, salt);
  for (const TokenId token : tokens) hasher.add(token);
  return hasher.finish();
}

std::vector<BlockHash> hash_prompt_blocks(std::span<const TokenId> tokens, int32_t block_size, uint64_t salt) {
  std::vector<BlockHash> hashes;
  if (block_size <= 0) return hashes;
  const size_t num_full = tokens.size() / static_cast<size_t>(block_size);
  hashes.reserve(num_full);
  BlockHash parent = kRootBlockHash;
  for (size_t i = 0; i < num_full; ++i) {
    parent =
        hash_block(parent, tokens.subspan(i * static_cast<size_t>(block_size), static_cast<size_t>(block_size)), salt);
    hashes.push_back(parent);
  }
  return hashes;
}

}  // namespace pagedllm::kv
