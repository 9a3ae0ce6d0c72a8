#include "core/tokenizer/utf8.h"

namespace pagedllm::tokenizer {
namespace {

// Well-formed sequences (Unicode table 3-7): the lead byte fixes the length and the range of
// the second byte; later bytes are 80..BF.
struct LeadByte {
  std::uint8_t length;  // 0: never starts a sequence
  std::uint8_t second_low;
  std::uint8_t second_high;
};

constexpr LeadByte lead_byte(std::uint8_t byte) noexcept {
  if (byte < 0x80) return {1, 0, 0};
  if (byte >= 0xC2 && byte <= 0xDF) return {2, 0x80, 0xBF};
  if (byte == 0xE0) return {3, 0xA0, 0xBF};
  if (byte == 0xED) return {3, 0x80, 0x9F};
  if (byte >= 0xE1 && byte <= 0xEF) return {3, 0x80, 0xBF};
  if (byte == 0xF0) return {4, 0x90, 0xBF};
  if (byte >= 0xF1 && byte <= 0xF3) return {4, 0x80, 0xBF};
  if (byte == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

enum class Scan { complete, invalid, truncated };

// Classifies the sequence at text[0]: complete (`length` bytes), invalid (its maximal subpart
// is `length` bytes), or truncated (all `length` remaining bytes are a valid prefix).
Scan scan_sequence(std::string_view text, std::size_t& length) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(text[i]); };
  const LeadByte lead = lead_byte(byte(0));
  if (lead.length == 0) {
    length = 1;
    return Scan::invalid;
  }
  for (std::size_t i = 1; i < lead.length; ++i) {
    if (i == text.size()) {
      length = i;
      return Scan::truncated;
    }
    const std::uint8_t low = i == 1 ? lead.second_low : 0x80;
    const std::uint8_t high = i == 1 ? lead.second_high : 0xBF;
    if (byte(i) < low || byte(i) > high) {
      length = i;
      return Scan::invalid;
    }
  }
  length = lead.length;
  return Scan::complete;
}

// Decodes `bytes` lossily into `out`; with `final` false stops before a truncated sequence at
// the end. Returns the number of bytes consumed.
std::size_t decode_lossy(std::string_view bytes, bool final, std::string& out) {
  std::size_t position = 0;
  while (position < bytes.size()) {
    // ASCII fast path.
    std::size_t ascii_end = position;
    while (ascii_end < bytes.size() && static_cast<std::uint8_t>(bytes[ascii_end]) < 0x80) {
      ++ascii_end;
    }
    out.append(bytes.data() + position, ascii_end - position);
    position = ascii_end;
    if (position == bytes.size()) break;

    std::size_t length = 0;
    switch (scan_sequence(bytes.substr(position), length)) {
      case Scan::complete:
        out.append(bytes.data() + position, length);
        break;
      case Scan::invalid:
        append_utf8(out, kReplacementCharacter);
        break;
      case Scan::truncated:
        if (!final) return position;
        append_utf8(out, kReplacementCharacter);
        break;
    }
    position += length;
  }
  return position;
}

}  // namespace

void append_utf8(std::string& out, char32_t code_point) {
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

std::size_t decode_utf8(std::string_view text, char32_t& code_point) noexcept {
  if (text.empty()) return 0;
  std::size_t length = 0;
  if (scan_sequence(text, length) != Scan::complete) return 0;
  const auto byte = [&](std::size_t i) { return static_cast<char32_t>(static_cast<std::uint8_t>(text[i])); };
  switch (length) {
    case 1:
      code_point = byte(0);
      break;
    case 2:
      code_point = ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
      break;
    case 3:
      code_point = ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
      break;
    default:
      code_point = ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) | (byte(3) & 0x3F);
      break;
  }
  return length;
}

bool is_valid_utf8(std::string_view text) noexcept {
  std::size_t position = 0;
  while (position < text.size()) {
    if (static_cast<std::uint8_t>(text[position]) < 0x80) {
      ++position;
      continue;
    }
    std::size_t length = 0;
    if (scan_sequence(text.substr(position), length) != Scan::complete) return false;
    position += length;
  }
  return true;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  decode_lossy(bytes, /*final=*/true, out);
  return out;
}

std::string Utf8LossyStream::push(std::string_view bytes) {
  std::string out;
  if (pending_.empty()) {
    const std::size_t consumed = decode_lossy(bytes, /*final=*/false, out);
    pending_.assign(bytes.substr(consumed));
    return out;
  }
  pending_.append(bytes);
  const std::size_t consumed = decode_lossy(pending_, /*final=*/false, out);
  pending_.erase(0, consumed);
  return out;
}

std::string Utf8LossyStream::finish() {
  std::string out;
  decode_lossy(pending_, /*final=*/true, out);
  pending_.clear();
  return out;
}

bool is_unicode_whitespace(char32_t c) noexcept {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace pagedllm::tokenizer
