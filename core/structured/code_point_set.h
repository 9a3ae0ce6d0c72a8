// Sets of Unicode scalar values (a regex's character classes, ".") and their UTF-8 encodings as
// sequences of byte ranges, the edges of a byte automaton.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace pagedllm::structured {

inline constexpr char32_t kMaxCodePoint = 0x10FFFF;

// Sorted, disjoint, non-adjacent ranges; surrogates (U+D800..U+DFFF) are never members.
class CodePointSet {
 public:
  using Range = std::pair<char32_t, char32_t>;  // inclusive

  CodePointSet() = default;
  static CodePointSet of(char32_t lo, char32_t hi) {
    CodePointSet set;
    set.add(lo, hi);
    return set;
  }

  void add(char32_t lo, char32_t hi);
  void add(const CodePointSet& other);
  // Every scalar value not in this set.
  CodePointSet complement() const;
  bool contains(char32_t code_point) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<Range>& ranges() const { return ranges_; }

 private:
  std::vector<Range> ranges_;
};

struct ByteRange {
  std::uint8_t lo = 0;
  std::uint8_t hi = 0;  // inclusive
};

// Byte-range sequences whose concatenations are exactly the UTF-8 encodings of the set's members:
// each sequence is one encoded length, and every byte in a position's range combines with every
// byte of the others (the ranges are split where the encoding's continuation bytes would not).
std::vector<std::vector<ByteRange>> utf8_sequences(const CodePointSet& set);

}  // namespace pagedllm::structured
