#include "core/structured/regex_escape.h"

#include <stdexcept>

#include "core/tokenizer/utf8.h"

namespace pagedllm::structured {

std::string escape_regex(std::string_view literal) {
  if (!tokenizer::is_valid_utf8(literal)) throw std::invalid_argument("escape_regex: the literal is not valid UTF-8");
  static constexpr std::string_view kMetacharacters = "\\^$.|?*+()[]{}";
  static constexpr char kHexDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(literal.size() + literal.size() / 4);
  for (const char c : literal) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      out += "\\x";
      out += kHexDigits[byte >> 4];
      out += kHexDigits[byte & 0xF];
    } else {
      if (kMetacharacters.find(c) != std::string_view::npos) out += '\\';
      out += c;
    }
  }
  return out;
}

std::optional<char32_t> read_hex_digits(std::string_view text, std::size_t& pos, std::size_t count) {
  char32_t value = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const char c = pos + k < text.size() ? text[pos + k] : '\0';
    int digit = -1;
    if (c >= '0' && c <= '9')
      digit = c - '0';
    else if (c >= 'a' && c <= 'f')
      digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      digit = c - 'A' + 10;
    if (digit < 0) return std::nullopt;
    value = value * 16 + static_cast<char32_t>(digit);
  }
  pos += count;
  return value;
}

}  // namespace pagedllm::structured
