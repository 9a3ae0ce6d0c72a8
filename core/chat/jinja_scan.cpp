#include "core/chat/jinja_scan.h"

#include <cstdint>
#include <optional>

namespace pagedllm::chat {
namespace {

enum class TagKind { variable, block, comment };

struct Tag {
  TagKind kind = TagKind::variable;
  char left = 0;   // '-' or '+' right after the opening delimiter
  char right = 0;  // '-' right before the closing delimiter
  std::string_view body;
};

struct Piece {
  bool is_tag = false;
  std::string text;  // raw text between tags
  Tag tag;
};

void append_utf8(std::string& out, std::uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xc0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3f));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xe0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code_point & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code_point & 0x3f));
  }
}

std::optional<std::uint32_t> parse_hex(std::string_view digits) {
  std::uint32_t value = 0;
  for (const char c : digits) {
    value <<= 4;
    if (c >= '0' && c <= '9')
      value |= static_cast<std::uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      value |= static_cast<std::uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      value |= static_cast<std::uint32_t>(c - 'A' + 10);
    else
      return std::nullopt;
  }
  return value;
}

// The end of a string literal opened at `start` (the index after its closing quote).
std::size_t skip_string(std::string_view source, std::size_t start) {
  const char quote = source[start];
  std::size_t i = start + 1;
  while (i < source.size() && source[i] != quote) i += source[i] == '\\' ? 2 : 1;
  return i < source.size() ? i + 1 : source.size();
}

// Splits the source into raw text and tags; an unterminated tag runs to the end.
std::vector<Piece> split(std::string_view source) {
  std::vector<Piece> pieces;
  std::string text;
  std::size_t i = 0;
  while (i < source.size()) {
    const bool opens = source[i] == '{' && i + 1 < source.size() &&
                       (source[i + 1] == '{' || source[i + 1] == '%' || source[i + 1] == '#');
    if (!opens) {
      text += source[i++];
      continue;
    }
    pieces.push_back({false, std::move(text), {}});
    text.clear();
    Tag tag;
    const char open = source[i + 1];
    tag.kind = open == '{' ? TagKind::variable : open == '%' ? TagKind::block : TagKind::comment;
    const char close = open == '{' ? '}' : open;
    std::size_t j = i + 2;
    if (j < source.size() && (source[j] == '-' || source[j] == '+')) tag.left = source[j++];
    const std::size_t body_start = j;
    while (j < source.size() && !(source[j] == close && j + 1 < source.size() && source[j + 1] == '}')) {
      j = tag.kind != TagKind::comment && (source[j] == '\'' || source[j] == '"') ? skip_string(source, j) : j + 1;
    }
    std::size_t body_end = std::min(j, source.size());
    if (body_end > body_start && source[body_end - 1] == '-') {
      tag.right = '-';
      --body_end;
    }
    tag.body = source.substr(body_start, body_end - body_start);
    pieces.push_back({true, {}, tag});
    i = std::min(j + 2, source.size());
  }
  pieces.push_back({false, std::move(text), {}});
  return pieces;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Applies the whitespace rules of the tags around a piece of raw text, as Jinja's lexer does.
// A text "starts a line" at the template start, after a newline, or right after a tag whose
// trimmed whitespace ended in a newline (lstrip_blocks then applies to its first line too).
std::string controlled_text(std::string text, const Tag* before, const Tag* after) {
  bool line_starting = before == nullptr;
  if (before != nullptr) {
    if (before->right == '-') {
      std::size_t first = 0;
      while (first < text.size() && is_space(text[first])) ++first;
      line_starting = first > 0 && text[first - 1] == '\n';
      text.erase(0, first);
    } else if (before->kind != TagKind::variable && !text.empty() && text.front() == '\n') {
      text.erase(0, 1);  // trim_blocks
      line_starting = true;
    }
  }
  if (after != nullptr) {
    if (after->left == '-') {
      while (!text.empty() && is_space(text.back())) text.pop_back();
    } else if (after->kind != TagKind::variable && after->left != '+') {
      // lstrip_blocks: whitespace between the line start and a block or comment tag.
      const std::size_t newline = text.rfind('\n');
      if (newline != std::string::npos || line_starting) {
        const std::size_t line_start = newline == std::string::npos ? 0 : newline + 1;
        bool blank = true;
        for (std::size_t i = line_start; i < text.size(); ++i) blank = blank && is_space(text[i]);
        if (blank) text.erase(line_start);
      }
    }
  }
  return text;
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Appends the tokens of a tag body to `scan`, and its string literals to the texts.
void tokenize(std::string_view body, JinjaScan& scan) {
  using TokenKind = JinjaToken::Kind;
  std::size_t i = 0;
  while (i < body.size()) {
    const char c = body[i];
    if (is_space(c)) {
      ++i;
    } else if (c == '\'' || c == '"') {
      const std::size_t end = skip_string(body, i);
      const bool closed = end > i + 1 && body[end - 1] == c;
      std::string value = decode_jinja_string(body.substr(i + 1, end - (i + 1) - (closed ? 1 : 0)));
      scan.texts.push_back(value);
      scan.tokens.push_back({TokenKind::string, std::move(value)});
      i = end;
    } else if (is_name_start(c)) {
      const std::size_t start = i;
      while (i < body.size() && (is_name_start(body[i]) || is_digit(body[i]))) ++i;
      scan.tokens.push_back({TokenKind::name, std::string(body.substr(start, i - start))});
    } else if (is_digit(c)) {
      const std::size_t start = i;
      while (i < body.size() && (is_digit(body[i]) || body[i] == '.')) ++i;
      scan.tokens.push_back({TokenKind::number, std::string(body.substr(start, i - start))});
    } else {
      static constexpr std::string_view kTwoCharOps[] = {"==", "!=", "<=", ">=", "//", "**"};
      std::size_t length = 1;
      for (const std::string_view op : kTwoCharOps) {
        if (body.substr(i, 2) == op) length = 2;
      }
      scan.tokens.push_back({TokenKind::op, std::string(body.substr(i, length))});
      i += length;
    }
  }
  scan.tokens.push_back({TokenKind::end, {}});
}

}  // namespace

std::string decode_jinja_string(std::string_view body) {
  std::string out;
  std::size_t i = 0;
  while (i < body.size()) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out += body[i++];
      continue;
    }
    const char escape = body[i + 1];
    i += 2;
    switch (escape) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case '\n':
        break;  // line continuation
      case 'x':
      case 'u':
      case 'U': {
        const std::size_t length = escape == 'x' ? 2 : escape == 'u' ? 4 : 8;
        const auto value = i + length <= body.size() ? parse_hex(body.substr(i, length)) : std::nullopt;
        if (value && *value <= 0x10ffff) {
          append_utf8(out, *value);
          i += length;
        } else {
          out += '\\';
          out += escape;
        }
        break;
      }
      default:
        if (escape >= '0' && escape <= '7') {
          std::uint32_t value = static_cast<std::uint32_t>(escape - '0');
          for (int k = 0; k < 2 && i < body.size() && body[i] >= '0' && body[i] <= '7'; ++k, ++i) {
            value = value * 8 + static_cast<std::uint32_t>(body[i] - '0');
          }
          append_utf8(out, value);
        } else {
          out += '\\';  // Python keeps unknown escapes
          out += escape;
        }
    }
  }
  return out;
}

JinjaScan scan_jinja(std::string_view source) {
  // Jinja normalises newlines and drops one trailing newline (keep_trailing_newline=False).
  std::string normalized;
  normalized.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      normalized += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      normalized += source[i];
    }
  }
  if (!normalized.empty() && normalized.back() == '\n') normalized.pop_back();

  const std::vector<Piece> pieces = split(normalized);
  JinjaScan scan;
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    const Piece& piece = pieces[k];
    if (piece.is_tag) {
      if (piece.tag.kind == TagKind::comment) continue;
      tokenize(piece.tag.body, scan);
      continue;
    }
    const Tag* before = k > 0 ? &pieces[k - 1].tag : nullptr;
    const Tag* after = k + 1 < pieces.size() ? &pieces[k + 1].tag : nullptr;
    std::string text = controlled_text(piece.text, before, after);
    if (!text.empty()) scan.texts.push_back(std::move(text));
  }
  return scan;
}

std::vector<std::vector<std::string>> find_all_tokens(const std::vector<JinjaToken>& tokens,
                                                      const std::vector<TokenPattern>& patterns) {
  std::vector<std::vector<std::string>> matches;
  for (std::size_t start = 0; start + patterns.size() <= tokens.size(); ++start) {
    std::vector<std::string> captures;
    bool matched = true;
    for (std::size_t k = 0; k < patterns.size() && matched; ++k) {
      const JinjaToken& token = tokens[start + k];
      matched = token.kind == patterns[k].kind && (patterns[k].text.empty() || token.text == patterns[k].text);
      if (matched && patterns[k].capture) captures.push_back(token.text);
    }
    if (matched) matches.push_back(std::move(captures));
  }
  return matches;
}

std::optional<std::vector<std::string>> find_tokens(const std::vector<JinjaToken>& tokens,
                                                    const std::vector<TokenPattern>& patterns) {
  std::vector<std::vector<std::string>> matches = find_all_tokens(tokens, patterns);
  if (matches.empty()) return std::nullopt;
  return std::move(matches.front());
}

}  // namespace pagedllm::chat
