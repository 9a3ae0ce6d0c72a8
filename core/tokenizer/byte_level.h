// The byte <-> character map of byte-level BPE (GPT-2's bytes_to_unicode): every byte becomes
// one printable character, so a vocabulary of strings can hold any byte sequence. Printable
// Latin-1 bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) map to themselves; the other 68 bytes map, in
// increasing order, to U+0100..U+0143 (so ' ' is 'Ġ' U+0120 and '\n' is 'Ċ' U+010A).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pagedllm::tokenizer {

char32_t byte_to_code_point(std::uint8_t byte) noexcept;
// The byte a character stands for; nullopt for a character outside the map.
std::optional<std::uint8_t> code_point_to_byte(char32_t code_point) noexcept;

// Appends the byte-level form of `bytes` (each byte one character).
void append_byte_level(std::string& out, std::string_view bytes);
std::string to_byte_level(std::string_view bytes);
// The bytes a byte-level string stands for; nullopt when it holds a character outside the map
// (or is not valid UTF-8).
std::optional<std::string> from_byte_level(std::string_view text);

}  // namespace pagedllm::tokenizer
