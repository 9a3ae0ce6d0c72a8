// A lexical scan of a Jinja template, enough to recognise a chat template's family and pull out
// the strings it emits; no expression is evaluated.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm::chat {

// One token of the expressions inside {{ }} and {% %} tags. String tokens hold the decoded value;
// `end` separates tags, so that no match spans two of them.
struct JinjaToken {
  enum class Kind { name, string, number, op, end };
  Kind kind = Kind::op;
  std::string text;
};

struct JinjaScan {
  // The template's text pieces in source order: decoded string literals of {{ }} and {% %} tags,
  // and the text between tags as Hugging Face's environment emits it (trim_blocks,
  // lstrip_blocks, "-" whitespace control, keep_trailing_newline off).
  std::vector<std::string> texts;
  // The tokens of every tag, comments left out: for finding identifiers and short expressions
  // ("bos_token", "| trim", "loop.last and system_message").
  std::vector<JinjaToken> tokens;
};

// What a JinjaToken must be to match: its kind, and its text unless `text` is empty; `capture`
// asks for the text to be returned.
struct TokenPattern {
  JinjaToken::Kind kind = JinjaToken::Kind::op;
  std::string text;
  bool capture = false;
};

// The captured texts of every run of tokens matching `patterns` in order, in source order.
std::vector<std::vector<std::string>> find_all_tokens(const std::vector<JinjaToken>& tokens,
                                                      const std::vector<TokenPattern>& patterns);
// The first of them; nullopt if none.
std::optional<std::vector<std::string>> find_tokens(const std::vector<JinjaToken>& tokens,
                                                    const std::vector<TokenPattern>& patterns);

JinjaScan scan_jinja(std::string_view source);

// The value of a Jinja string literal's body (between the quotes): Python escapes (\n, \t,
// \\, \', \", \xhh, \uXXXX, \UXXXXXXXX, octal) decoded to UTF-8; unknown escapes kept as is.
std::string decode_jinja_string(std::string_view body);

}  // namespace pagedllm::chat
