// Python's str methods on UTF-8 text, as chat templates call them (strip, split, title, ...).
// Case mapping covers ASCII letters only; other characters keep their case.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm::chat::jinja {

// The code points of `text` (invalid UTF-8 bytes pass through as U+DC80.. as Python's
// surrogateescape would; they are re-encoded as the original bytes).
std::vector<std::uint32_t> decode_utf8(std::string_view text);
std::string encode_utf8(const std::vector<std::uint32_t>& code_points);
std::size_t count_code_points(std::string_view text);

bool is_python_whitespace(std::uint32_t c);
// The first byte at or after `from` that is not Python whitespace.
std::size_t python_whitespace_end(std::string_view text, std::size_t from);

// str.strip / lstrip / rstrip: whitespace, or the characters of `chars` when given.
std::string python_strip_chars(std::string_view text, const std::optional<std::string>& chars, bool left, bool right);
inline std::string python_rstrip(std::string_view text) { return python_strip_chars(text, std::nullopt, false, true); }

// str.split(sep=None, maxsplit=-1).
std::vector<std::string> python_split(std::string_view text, const std::optional<std::string>& separator,
                                      long max_splits);
std::string python_replace(std::string_view text, std::string_view old, std::string_view replacement, long count);
std::string python_upper(std::string_view text);
std::string python_lower(std::string_view text);
std::string python_capitalize(std::string_view text);  // str.capitalize()
std::string python_title(std::string_view text);       // str.title()
std::string jinja_title(std::string_view text);        // Jinja's `title` filter (words split at - space ( { [ <)

}  // namespace pagedllm::chat::jinja
