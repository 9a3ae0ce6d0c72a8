#include "core/kv/block_hash.h"

#include <bit>

namespace pagedllm::kv {
namespace {

// The 64-bit finalizer of MurmurHash3: a bijection with full avalanche.
constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

constexpr uint64_t kLaneMultiplierLo = 0x9e3779b97f4a7c15ULL;
constexpr uint64_t kLaneMultiplierHi = 0xbf58476d1ce4e5b9ULL;

}  // namespace

BlockHash hash_block(const BlockHash& parent, std::span<const TokenId> tokens, uint64_t salt) {
  // Two lanes with different multipliers and rotations, each absorbing every input word, so the
  // 128-bit result behaves as two independent 64-bit hashes; the lanes are cross-mixed at the end.
  uint64_t lo = mix64(parent.lo ^ salt);
  uint64_t hi = mix64(parent.hi + std::rotl(salt, 29) + 0x6a09e667f3bcc909ULL);
  const size_t n = tokens.size();
  size_t i = 0;
  for (; i + 1 < n; i += 2) {
    const uint64_t word = static_cast<uint32_t>(tokens[i]) |
                          (static_cast<uint64_t>(static_cast<uint32_t>(tokens[i + 1])) << 32);
    lo = mix64(lo ^ (word * kLaneMultiplierLo));
    hi = mix64(std::rotl(hi, 23) ^ (std::rotl(word, 17) * kLaneMultiplierHi));
  }
  if (i < n) {
    const uint64_t word = static_cast<uint32_t>(tokens[i]) | (uint64_t{1} << 63);
    lo = mix64(lo ^ (word * kLaneMultiplierLo));
    hi = mix64(std::rotl(hi, 23) ^ (std::rotl(word, 17) * kLaneMultiplierHi));
  }
  const uint64_t length = static_cast<uint64_t>(n);
  lo = mix64(lo ^ length ^ std::rotl(hi, 32));
  hi = mix64(hi + length * kLaneMultiplierLo + lo);
  return BlockHash{lo, hi};
}

}  // namespace pagedllm::kv
