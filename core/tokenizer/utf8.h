// UTF-8 helpers: code point encode / decode, and lossy decoding that matches Rust's
// String::from_utf8_lossy (what HF `tokenizers` applies to decoded bytes): each maximal
// invalid subpart (the longest prefix of a well-formed sequence, at least one byte) becomes
// one U+FFFD, as the Unicode standard recommends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pagedllm::tokenizer {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;

// Appends the UTF-8 encoding of `code_point` (must be a scalar value: <= 0x10FFFF, no surrogate).
void append_utf8(std::string& out, char32_t code_point);

// Length of the well-formed UTF-8 sequence starting at text[0], or 0 when it is not one
// (invalid or truncated). `code_point` receives the decoded value when the result is non-zero.
std::size_t decode_utf8(std::string_view text, char32_t& code_point) noexcept;

bool is_valid_utf8(std::string_view text) noexcept;

// from_utf8_lossy of the whole of `bytes`.
std::string utf8_lossy(std::string_view bytes);

// The same decoding, fed piecewise: push() returns the text that is final whatever bytes follow
// (an unfinished sequence at the end is held back, at most 3 bytes); finish() returns the rest,
// an unfinished sequence as one U+FFFD. The concatenation of every push() and the finish()
// equals utf8_lossy() of all bytes pushed.
class Utf8LossyStream {
 public:
  std::string push(std::string_view bytes);
  std::string finish();
  std::size_t num_pending() const noexcept { return pending_.size(); }

 private:
  std::string pending_;
};

// Whether `code_point` has the Unicode White_Space property (what Rust's char::is_whitespace,
// Rust regex `\s` and Oniguruma's Unicode `\s` test).
bool is_unicode_whitespace(char32_t code_point) noexcept;

}  // namespace pagedllm::tokenizer
