// The Jinja lexer, with Hugging Face's environment fixed: trim_blocks (a newline right after a
// block or comment tag is dropped), lstrip_blocks (spaces and tabs before a block or comment tag
// on its own line are dropped), "-" and "+" whitespace control on either side of a tag, and
// keep_trailing_newline off. Line breaks in the source are normalised to "\n" as jinja2 does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagedllm::chat::jinja {

enum class TokenKind {
  text,            // template text between tags, whitespace control applied
  variable_begin,  // {{
  variable_end,    // }}
  block_begin,     // {%
  block_end,       // %}
  name,
  string,  // the decoded value
  integer,
  floating,
  op,  // + - * / // % ** ~ == != < <= > >= = . : | , ( ) [ ] { }
  end_of_input,
};

struct Token {
  TokenKind kind = TokenKind::end_of_input;
  std::string text;
  int line = 1;
};

// Throws JinjaSyntaxError naming `where` and the line (an unterminated tag, string or comment, a
// character no token starts with).
std::vector<Token> tokenize(std::string_view source, const std::string& where);

// How parse errors name a token (they quote it): "end of print statement", "x".
std::string describe_token(const Token& token);

}  // namespace pagedllm::chat::jinja
