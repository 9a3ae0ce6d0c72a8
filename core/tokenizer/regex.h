// PCRE2 patterns (UTF + UCP, JIT-compiled when the platform allows) that behave like the
// Oniguruma patterns of HF `tokenizers`.
//
// Two Oniguruma differences are translated away: `\s` is the Unicode White_Space set (PCRE2's
// also holds U+180E) and `\w` is letters, marks, numbers and connector punctuation (PCRE2's
// lacks marks). Matches are found as the `onig` crate's find_iter does: left to right, no
// overlap, and an empty match right after the previous match is skipped.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm::tokenizer {

struct RegexMatch {
  std::size_t start;
  std::size_t end;
};

class Regex {
 public:
  enum class Syntax { pattern, literal };

  // Throws std::invalid_argument carrying PCRE2's message and the offset in the pattern.
  explicit Regex(std::string_view pattern, Syntax syntax = Syntax::pattern);

  const std::string& source() const noexcept { return source_; }
  Syntax syntax() const noexcept { return syntax_; }

  // Appends every match in `subject` (valid UTF-8) to `out`, in order. Thread-safe.
  void find_all(std::string_view subject, std::vector<RegexMatch>& out) const;

 private:
  struct CodeDeleter {
    void operator()(void* code) const noexcept;
  };

  std::string source_;
  Syntax syntax_;
  std::unique_ptr<void, CodeDeleter> code_;  // pcre2_code_8, shared read-only by all threads
};

// The Oniguruma-compatible PCRE2 form of `pattern` (exposed for tests).
std::string translate_oniguruma_pattern(std::string_view pattern);

}  // namespace pagedllm::tokenizer
