// Small tokenizers built by hand for the tests: the 256 byte tokens (id = byte), then the
// results of the given merges in order, then any extra tokens.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/tokenizer/tokenizer_spec.h"

namespace pagedllm::tokenizer::testing {

inline const std::string kFffd = "\xEF\xBF\xBD";  // U+FFFD, the replacement character, in UTF-8

using Merges = std::vector<std::pair<std::string, std::string>>;

// `drop`: bytes that get no token. Pre-tokenizer: GPT-2's ByteLevel unless given.
TokenizerSpec byte_level_spec(const Merges& merges, const std::vector<std::string>& extra = {},
                              const std::string& drop = "",
                              std::vector<PreTokenizerStep> pre_tokenizer = {ByteLevelStep{false, true, true}});

// Words of `text` as the pre-tokenizer of `steps` splits it (raw bytes).
std::vector<std::string> pre_tokenize(const std::vector<PreTokenizerStep>& steps, const std::string& text);

}  // namespace pagedllm::tokenizer::testing
