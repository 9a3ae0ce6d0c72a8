#include "core/chat/python_strip.h"

#include <cstdint>

namespace pagedllm::chat {
namespace {

bool is_python_space(std::uint32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

// Decodes the code point of `length` bytes at text[at]; 0xffffffff when not well formed.
std::uint32_t decode(std::string_view text, std::size_t at, std::size_t length) {
  const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(text[at + i]); };
  if (at + length > text.size()) return 0xffffffffu;
  std::uint32_t value = length == 1   ? byte(0)
                        : length == 2 ? byte(0) & 0x1fu
                        : length == 3 ? byte(0) & 0x0fu
                                      : byte(0) & 0x07u;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0u) != 0x80u) return 0xffffffffu;
    value = (value << 6) | (byte(i) & 0x3fu);
  }
  return value;
}

std::size_t sequence_length(std::uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xe0) == 0xc0) return 2;
  if ((lead & 0xf0) == 0xe0) return 3;
  if ((lead & 0xf8) == 0xf0) return 4;
  return 0;
}

}  // namespace

std::string python_strip(std::string_view text) {
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t length = sequence_length(static_cast<std::uint8_t>(text[begin]));
    if (length == 0 || !is_python_space(decode(text, begin, length))) break;
    begin += length;
  }
  std::size_t end = text.size();
  while (end > begin) {
    // Step back to the lead byte of the last character (at most 4 bytes).
    std::size_t lead = end - 1;
    while (lead > begin && end - lead < 4 && (static_cast<std::uint8_t>(text[lead]) & 0xc0u) == 0x80u) --lead;
    const std::size_t length = sequence_length(static_cast<std::uint8_t>(text[lead]));
    if (length != end - lead || !is_python_space(decode(text, lead, length))) break;
    end = lead;
  }
  return std::string(text.substr(begin, end - begin));
}

}  // namespace pagedllm::chat
