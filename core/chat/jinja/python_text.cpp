#include "core/chat/jinja/python_text.h"

#include <algorithm>

namespace pagedllm::chat::jinja {
namespace {

constexpr std::uint32_t kEscapedByte = 0xdc00;  // surrogateescape: byte b is U+DC00 + b

std::size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xe0) == 0xc0) return 2;
  if ((lead & 0xf0) == 0xe0) return 3;
  if ((lead & 0xf8) == 0xf0) return 4;
  return 0;
}

void append_utf8(std::string& out, std::uint32_t c) {
  if (c >= kEscapedByte + 0x80 && c <= kEscapedByte + 0xff) {
    out += static_cast<char>(c - kEscapedByte);
  } else if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

bool is_ascii_letter(std::uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
std::uint32_t to_upper(std::uint32_t c) { return c >= 'a' && c <= 'z' ? c - 32 : c; }
std::uint32_t to_lower(std::uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

std::string map_code_points(std::string_view text, std::uint32_t (*map)(std::uint32_t)) {
  std::vector<std::uint32_t> points = decode_utf8(text);
  std::transform(points.begin(), points.end(), points.begin(), map);
  return encode_utf8(points);
}

}  // namespace

std::vector<std::uint32_t> decode_utf8(std::string_view text) {
  std::vector<std::uint32_t> out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const std::size_t length = sequence_length(lead);
    bool valid = length > 0 && i + length <= text.size();
    std::uint32_t value = length == 1 ? lead : length == 2 ? lead & 0x1fu : length == 3 ? lead & 0x0fu : lead & 0x07u;
    for (std::size_t k = 1; valid && k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      valid = (next & 0xc0) == 0x80;
      value = (value << 6) | (next & 0x3fu);
    }
    if (!valid) {
      out.push_back(kEscapedByte + lead);
      ++i;
    } else {
      out.push_back(value);
      i += length;
    }
  }
  return out;
}

std::string encode_utf8(const std::vector<std::uint32_t>& code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (const std::uint32_t c : code_points) append_utf8(out, c);
  return out;
}

std::size_t count_code_points(std::string_view text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

bool is_python_whitespace(std::uint32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

std::size_t python_whitespace_end(std::string_view text, std::size_t from) {
  std::size_t at = from;
  while (at < text.size()) {
    const std::size_t length = sequence_length(static_cast<unsigned char>(text[at]));
    if (length == 0 || at + length > text.size()) break;
    const std::vector<std::uint32_t> point = decode_utf8(text.substr(at, length));
    if (point.size() != 1 || !is_python_whitespace(point[0])) break;
    at += length;
  }
  return at;
}

std::string python_strip_chars(std::string_view text, const std::optional<std::string>& chars, bool left, bool right) {
  const std::vector<std::uint32_t> points = decode_utf8(text);
  const std::vector<std::uint32_t> set = chars ? decode_utf8(*chars) : std::vector<std::uint32_t>{};
  const auto strippable = [&](std::uint32_t c) {
    return chars ? std::find(set.begin(), set.end(), c) != set.end() : is_python_whitespace(c);
  };
  std::size_t begin = 0;
  std::size_t end = points.size();
  while (left && begin < end && strippable(points[begin])) ++begin;
  while (right && end > begin && strippable(points[end - 1])) --end;
  return encode_utf8(std::vector<std::uint32_t>(points.begin() + static_cast<std::ptrdiff_t>(begin),
                                                points.begin() + static_cast<std::ptrdiff_t>(end)));
}

std::vector<std::string> python_split(std::string_view text, const std::optional<std::string>& separator,
                                      long max_splits) {
  std::vector<std::string> parts;
  if (separator) {
    std::size_t start = 0;
    while (max_splits < 0 || static_cast<long>(parts.size()) < max_splits) {
      const std::size_t at = text.find(*separator, start);
      if (at == std::string_view::npos) break;
      parts.emplace_back(text.substr(start, at - start));
      start = at + separator->size();
    }
    parts.emplace_back(text.substr(start));
    return parts;
  }
  // Runs of whitespace separate; none at either end.
  const std::vector<std::uint32_t> points = decode_utf8(text);
  std::size_t i = 0;
  while (true) {
    while (i < points.size() && is_python_whitespace(points[i])) ++i;
    if (i == points.size()) break;
    if (max_splits >= 0 && static_cast<long>(parts.size()) == max_splits) {
      std::size_t end = points.size();
      while (end > i && is_python_whitespace(points[end - 1])) --end;
      parts.push_back(encode_utf8(
          {points.begin() + static_cast<std::ptrdiff_t>(i), points.begin() + static_cast<std::ptrdiff_t>(end)}));
      break;
    }
    std::size_t end = i;
    while (end < points.size() && !is_python_whitespace(points[end])) ++end;
    parts.push_back(encode_utf8(
        {points.begin() + static_cast<std::ptrdiff_t>(i), points.begin() + static_cast<std::ptrdiff_t>(end)}));
    i = end;
  }
  return parts;
}

std::string python_replace(std::string_view text, std::string_view old, std::string_view replacement, long count) {
  std::string out;
  std::size_t start = 0;
  long done = 0;
  if (old.empty()) {
    // Python inserts the replacement between every character and at both ends.
    const std::vector<std::uint32_t> points = decode_utf8(text);
    for (const std::uint32_t c : points) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
      }
      append_utf8(out, c);
    }
    if (count < 0 || done < count) out += replacement;
    return out;
  }
  while (count < 0 || done < count) {
    const std::size_t at = text.find(old, start);
    if (at == std::string_view::npos) break;
    out += text.substr(start, at - start);
    out += replacement;
    start = at + old.size();
    ++done;
  }
  out += text.substr(start);
  return out;
}

std::string python_upper(std::string_view text) { return map_code_points(text, to_upper); }
std::string python_lower(std::string_view text) { return map_code_points(text, to_lower); }

std::string python_capitalize(std::string_view text) {
  std::vector<std::uint32_t> points = decode_utf8(text);
  for (std::size_t i = 0; i < points.size(); ++i) points[i] = i == 0 ? to_upper(points[i]) : to_lower(points[i]);
  return encode_utf8(points);
}

std::string python_title(std::string_view text) {
  std::vector<std::uint32_t> points = decode_utf8(text);
  bool previous_cased = false;
  for (std::uint32_t& c : points) {
    const bool cased = is_ascii_letter(c);
    c = cased ? (previous_cased ? to_lower(c) : to_upper(c)) : c;
    previous_cased = cased;
  }
  return encode_utf8(points);
}

std::string jinja_title(std::string_view text) {
  std::vector<std::uint32_t> points = decode_utf8(text);
  bool word_start = true;
  for (std::uint32_t& c : points) {
    const bool separator = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_python_whitespace(c);
    if (separator) {
      word_start = true;
      continue;
    }
    c = word_start ? to_upper(c) : to_lower(c);
    word_start = false;
  }
  return encode_utf8(points);
}

}  // namespace pagedllm::chat::jinja
