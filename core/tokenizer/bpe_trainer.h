// Byte-level BPE training: the vocabulary of a small model (pagedllm make-model) from a corpus.
//
// The corpus is split around the special tokens, pre-tokenized (a split pattern, then the
// byte-level mapping), and its distinct words counted. Starting from the 256 bytes, the most
// frequent adjacent pair is merged until the vocabulary is full. Ties go to the pair with the
// smaller (left id, right id), so the result depends on nothing but the input. Pair counts are
// kept incrementally (a word is revisited only when it holds the merged pair), with a lazy
// max-heap of pairs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizer/tokenizer_spec.h"

namespace pagedllm::tokenizer {

struct BpeTrainerConfig {
  std::int32_t vocab_size = 1000;  // special tokens + 256 bytes + merged tokens
  // Split pattern (Isolated) before the byte-level mapping, as Llama 3 does; empty: GPT-2's
  // ByteLevel pre-tokenizer with its own pattern.
  std::string split_pattern;
  bool individual_digits = false;           // split digits apart first (SmolLM2's Digits step)
  std::vector<std::string> special_tokens;  // ids 0, 1, ... in this order
  std::optional<std::string> bos_token;     // one of special_tokens: encode adds it first
  std::optional<std::string> eos_token;     // one of special_tokens: recorded as EOS
  std::int64_t min_pair_count = 1;          // stop early when the best pair is rarer
};

// The trained tokenizer (special tokens first, then the 256 bytes, then merged tokens in merge
// order), ready for Tokenizer's constructor. Throws std::invalid_argument for a vocab_size below
// the special tokens + 256, a pattern PCRE2 rejects, a repeated or empty special token, or a
// bos/eos token that is not special.
TokenizerSpec train_bpe(std::string_view corpus, const BpeTrainerConfig& config);

}  // namespace pagedllm::tokenizer
