// The pre-tokenizer: splits text into the words that BPE encodes one by one, step by step as
// HF's pre-tokenizers do (each step splits every piece the previous steps left; empty pieces are
// dropped).
//
// Words come out as raw bytes: the byte-level mapping of the ByteLevel step is left to the BPE
// model, which works on bytes. Steps after ByteLevel see the mapped text, as in HF.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizer/regex.h"
#include "core/tokenizer/tokenizer_spec.h"

namespace pagedllm::tokenizer {

// The GPT-2 split pattern that HF's ByteLevel pre-tokenizer applies when use_regex is set.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Buffers reused across the words of one encode call.
struct PieceBuffers {
  std::vector<std::string_view> pieces;  // the output: words, in order
  std::vector<std::string_view> next;
  std::deque<std::string> storage;  // text built along the way (prefix spaces, mapped text)
  std::vector<RegexMatch> matches;
  struct Segment {
    std::size_t start;
    std::size_t end;
    bool is_match;
  };
  std::vector<Segment> segments;
  std::vector<Segment> merged;

  void clear() {
    pieces.clear();
    storage.clear();
  }
};

class PreTokenizer {
 public:
  // Throws std::invalid_argument for a pattern PCRE2 rejects, or unless exactly one step is
  // ByteLevel (naming the step by its index).
  explicit PreTokenizer(const std::vector<PreTokenizerStep>& steps);

  // Appends the words of `text` (valid UTF-8) to buffers.pieces.
  void split(std::string_view text, PieceBuffers& buffers) const;

 private:
  enum class Kind { split, byte_level };
  struct CompiledStep {
    Kind kind = Kind::split;
    std::optional<Regex> regex;  // split pattern; for ByteLevel, the GPT-2 pattern or none
    SplitBehavior behavior = SplitBehavior::isolated;
    bool invert = false;
    bool add_prefix_space = false;
  };

  void apply(const CompiledStep& step, bool map_to_byte_level, std::string_view piece, PieceBuffers& buffers) const;

  std::vector<CompiledStep> steps_;
  std::size_t byte_level_step_ = 0;
};

// Splits `piece` around `matches` as HF's NormalizedString::split does with `behavior` (after
// flipping matches and gaps when `invert`); appends the non-empty pieces to `out`.
void split_around_matches(std::string_view piece, const std::vector<RegexMatch>& matches, bool invert,
                          SplitBehavior behavior, PieceBuffers& buffers, std::vector<std::string_view>& out);

}  // namespace pagedllm::tokenizer
