// A random byte-level vocabulary for the token-mask tests (token_mask and grammar).
#pragma once

#include <random>
#include <string>
#include <vector>

#include "core/common/types.h"

namespace pagedllm::testing {

inline constexpr TokenId kEos = 0;  // random_vocabulary's end-of-sequence token

// 256 single bytes (as a byte-level BPE has), random merges of 2-6 characters drawn from ASCII and
// a few multi-byte characters (some split mid-character, as real vocabularies hold), and two
// special tokens with no text: 0 (end-of-sequence) and 1.
inline std::vector<std::string> random_vocabulary(std::mt19937& rng, int num_merges) {
  std::vector<std::string> vocab{"", ""};
  for (int b = 0; b < 256; ++b) vocab.push_back(std::string(1, static_cast<char>(b)));
  const std::vector<std::string> pieces = {
      "a", "b", "1", " ", "\"", "{", "}", ":", ",", "\xC3\xA9", "\xC3", "\xA9", "\xF0\x9F\x98\x80", "\xE2\x82"};
  for (int i = 0; i < num_merges; ++i) {
    std::string token;
    const int length = 2 + static_cast<int>(rng() % 5);
    for (int k = 0; k < length; ++k) token += pieces[rng() % pieces.size()];
    vocab.push_back(token);
  }
  return vocab;
}

}  // namespace pagedllm::testing
