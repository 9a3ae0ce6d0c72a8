#include "core/tokenizer/byte_level.h"

#include <array>

#include "core/tokenizer/utf8.h"

namespace pagedllm::tokenizer {
namespace {

constexpr bool is_printable_byte(unsigned byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
}

constexpr unsigned kNumMapped = 0x100 + 68;  // code points below this may stand for a byte

struct ByteMap {
  std::array<char32_t, 256> to_code_point{};
  std::array<std::int16_t, kNumMapped> to_byte{};  // -1: not in the map
  std::array<std::array<char, 2>, 256> utf8{};     // every mapped character is 1 or 2 bytes
  std::array<std::uint8_t, 256> utf8_length{};
};

constexpr ByteMap make_byte_map() {
  ByteMap map;
  for (auto& entry : map.to_byte) entry = -1;
  unsigned next_extra = 0x100;
  for (unsigned byte = 0; byte < 256; ++byte) {
    const char32_t code_point = is_printable_byte(byte) ? byte : next_extra++;
    map.to_code_point[byte] = code_point;
    map.to_byte[code_point] = static_cast<std::int16_t>(byte);
    if (code_point < 0x80) {
      map.utf8[byte] = {static_cast<char>(code_point), 0};
      map.utf8_length[byte] = 1;
    } else {
      map.utf8[byte] = {static_cast<char>(0xC0 | (code_point >> 6)), static_cast<char>(0x80 | (code_point & 0x3F))};
      map.utf8_length[byte] = 2;
    }
  }
  return map;
}

constexpr ByteMap kByteMap = make_byte_map();

}  // namespace

char32_t byte_to_code_point(std::uint8_t byte) noexcept { return kByteMap.to_code_point[byte]; }

std::optional<std::uint8_t> code_point_to_byte(char32_t code_point) noexcept {
  if (code_point >= kNumMapped || kByteMap.to_byte[code_point] < 0) return std::nullopt;
  return static_cast<std::uint8_t>(kByteMap.to_byte[code_point]);
}

void append_byte_level(std::string& out, std::string_view bytes) {
  for (const char c : bytes) {
    const auto byte = static_cast<std::uint8_t>(c);
    out.append(kByteMap.utf8[byte].data(), kByteMap.utf8_length[byte]);
  }
}

std::string to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  append_byte_level(out, bytes);
  return out;
}

std::optional<std::string> from_byte_level(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    char32_t code_point = 0;
    const std::size_t length = decode_utf8(text, code_point);
    if (length == 0) return std::nullopt;
    const auto byte = code_point_to_byte(code_point);
    if (!byte) return std::nullopt;
    out.push_back(static_cast<char>(*byte));
    text.remove_prefix(length);
  }
  return out;
}

}  // namespace pagedllm::tokenizer
