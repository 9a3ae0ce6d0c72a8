#include "core/structured/code_point_set.h"

#include <algorithm>
#include <string>

#include "core/tokenizer/utf8.h"

namespace pagedllm::structured {
namespace {

constexpr char32_t kSurrogateFirst = 0xD800;
constexpr char32_t kSurrogateLast = 0xDFFF;

int encoded_length(char32_t code_point) {
  if (code_point < 0x80) return 1;
  if (code_point < 0x800) return 2;
  if (code_point < 0x10000) return 3;
  return 4;
}

// The largest code point of each encoded length.
constexpr char32_t kLengthLast[] = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

// [lo, hi] of one encoded length, split until each position's bytes range independently: a split
// is needed wherever lo and hi differ above a continuation byte that does not run 80..BF in full.
void add_same_length(char32_t lo, char32_t hi, std::vector<std::vector<ByteRange>>& out) {
  const int length = encoded_length(lo);
  for (int i = 1; i < length; ++i) {
    const char32_t low_bits = (char32_t{1} << (6 * i)) - 1;  // the i continuation bytes' payload
    if ((lo & ~low_bits) == (hi & ~low_bits)) continue;
    if ((lo & low_bits) != 0) {
      add_same_length(lo, lo | low_bits, out);
      add_same_length((lo | low_bits) + 1, hi, out);
      return;
    }
    if ((hi & low_bits) != low_bits) {
      add_same_length(lo, (hi & ~low_bits) - 1, out);
      add_same_length(hi & ~low_bits, hi, out);
      return;
    }
  }
  std::string first;
  std::string last;
  tokenizer::append_utf8(first, lo);
  tokenizer::append_utf8(last, hi);
  std::vector<ByteRange> sequence;
  for (std::size_t k = 0; k < first.size(); ++k) {
    sequence.push_back({static_cast<std::uint8_t>(first[k]), static_cast<std::uint8_t>(last[k])});
  }
  out.push_back(std::move(sequence));
}

}  // namespace

void CodePointSet::add(char32_t lo, char32_t hi) {
  hi = std::min(hi, kMaxCodePoint);
  if (lo > hi) return;
  // Surrogates are not scalar values: cut them out.
  if (lo <= kSurrogateLast && hi >= kSurrogateFirst) {
    if (lo < kSurrogateFirst) add(lo, kSurrogateFirst - 1);
    if (hi > kSurrogateLast) add(kSurrogateLast + 1, hi);
    return;
  }
  ranges_.push_back({lo, hi});
  std::sort(ranges_.begin(), ranges_.end());
  std::vector<Range> merged;
  for (const Range& range : ranges_) {
    if (!merged.empty() && range.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, range.second);
    } else {
      merged.push_back(range);
    }
  }
  ranges_ = std::move(merged);
}

void CodePointSet::add(const CodePointSet& other) {
  for (const Range& range : other.ranges_) add(range.first, range.second);
}

CodePointSet CodePointSet::complement() const {
  CodePointSet result;
  char32_t next = 0;
  for (const Range& range : ranges_) {
    if (range.first > next) result.add(next, range.first - 1);
    next = range.second + 1;
  }
  if (next <= kMaxCodePoint) result.add(next, kMaxCodePoint);
  return result;
}

bool CodePointSet::contains(char32_t code_point) const {
  const auto after = std::upper_bound(ranges_.begin(), ranges_.end(), Range{code_point, kMaxCodePoint + 1});
  return after != ranges_.begin() && std::prev(after)->second >= code_point;
}

std::vector<std::vector<ByteRange>> utf8_sequences(const CodePointSet& set) {
  std::vector<std::vector<ByteRange>> out;
  for (auto [lo, hi] : set.ranges()) {
    // Split at the encoded-length boundaries first.
    while (lo <= hi) {
      const char32_t end = std::min(hi, kLengthLast[encoded_length(lo)]);
      add_same_length(lo, end, out);
      if (end == hi) break;
      lo = end + 1;
    }
  }
  return out;
}

}  // namespace pagedllm::structured
