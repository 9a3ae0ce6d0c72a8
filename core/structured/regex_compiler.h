// Regular expressions (the `regex` / `guided_regex` constraint, and the pieces JSON schemas compile
// to) to a byte automaton that accepts exactly the UTF-8 texts the whole pattern matches.
//
// The syntax is the common subset of Python's `re` and ECMAScript: literals, `.` (any character
// but newline), escapes (\d \D \w \W \s \S \n \t \r \f \v \0 \xHH \uHHHH \u{H..} and escaped
// punctuation), classes `[...]` / `[^...]` with ranges, groups `(...)` / `(?:...)`, alternation,
// and the quantifiers * + ? {n} {n,} {n,m} (lazy forms accepted: they match the same texts). A
// leading ^ and a trailing $ are accepted (the match is always whole). Backreferences,
// lookaround, named groups and flags are refused with RegexError naming the feature and its
// offset. \d, \w and \s are ASCII, as in XGrammar and llguidance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/structured/byte_dfa.h"

namespace pagedllm::structured {

class RegexError : public std::invalid_argument {
 public:
  RegexError(std::size_t offset, const std::string& problem)
      : std::invalid_argument("regex, offset " + std::to_string(offset) + ": " + problem), offset_(offset) {}
  std::size_t offset() const { return offset_; }

 private:
  std::size_t offset_;
};

struct RegexLimits {
  int32_t max_nfa_states = 200'000;  // bounds the expansion of counted repeats ({n,m})
  int32_t max_dfa_states = 20'000;   // bounds compile time and memory (1 KiB per state)
};

// Throws RegexError for a pattern outside the syntax above, or one past the limits.
ByteDfa compile_regex(std::string_view pattern, const RegexLimits& limits = {});

}  // namespace pagedllm::structured
