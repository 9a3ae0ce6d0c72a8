// Added tokens (HF "added_tokens"; GGUF CONTROL / USER_DEFINED tokens) found in text before
// pre-tokenization, as HF's AddedVocabulary finds them: leftmost match first, the longest of
// those starting there, no overlap; flags single_word / lstrip / rstrip respected. Two passes:
// tokens with normalized=false are matched in the raw text, the others (their content
// normalized too) in the normalized text between those.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/types.h"
#include "core/tokenizer/tokenizer_spec.h"

namespace pagedllm::tokenizer {

// A piece of text: an added token (id >= 0) or plain text to pre-tokenize (id < 0).
struct TextSegment {
  std::string_view text;
  TokenId id = -1;
};

class AddedVocabulary {
 public:
  enum class Pass { raw, normalized };

  // `nfc`: the tokenizer normalizes with NFC (the content of normalized tokens is matched in
  // its NFC form).
  AddedVocabulary(const std::vector<AddedTokenSpec>& tokens, bool nfc);

  // Splits `text` around the tokens of `pass`; special tokens are matched only when
  // `parse_special`. Appends to `out`.
  void split(std::string_view text, Pass pass, bool parse_special, std::vector<TextSegment>& out) const;

  bool empty(Pass pass) const noexcept { return matcher(pass).nodes.size() <= 1; }

 private:
  struct Node {
    std::vector<std::pair<std::uint8_t, std::int32_t>> children;  // sorted by byte
    std::int32_t token = -1;                                      // index into tokens_ of the token ending here
  };
  struct Matcher {
    std::vector<Node> nodes{Node{}};
    bool first_bytes[256] = {};
  };

  const Matcher& matcher(Pass pass) const noexcept { return pass == Pass::raw ? raw_ : normalized_; }
  static void insert(Matcher& matcher, std::string_view content, std::int32_t token);
  // Length and token of the longest match at text[position], or {0, -1}.
  static std::pair<std::size_t, std::int32_t> longest_match(const Matcher& matcher, std::string_view text,
                                                            std::size_t position);

  std::vector<AddedTokenSpec> tokens_;
  Matcher raw_;
  Matcher normalized_;
};

}  // namespace pagedllm::tokenizer
