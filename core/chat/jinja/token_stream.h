// The parser's view of the tokens: a cursor with jinja2's "expected token" errors. Internal to
// the parser (parser.cpp and expression_parser.cpp).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "core/chat/chat_errors.h"
#include "core/chat/jinja/lexer.h"

namespace pagedllm::chat::jinja {

class TokenStream {
 public:
  TokenStream(const std::vector<Token>& tokens, const std::string& where) : tokens_(tokens), where_(where) {}

 protected:
  const Token& current() const { return tokens_[std::min(pos_, tokens_.size() - 1)]; }
  const Token& peek() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  void next() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool is_op(const char* op) const { return current().kind == TokenKind::op && current().text == op; }
  bool is_name(const char* name) const { return current().kind == TokenKind::name && current().text == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  void expect(TokenKind kind) {
    if (current().kind != kind) {
      const Token wanted{kind, "", 0};
      fail(current(), "expected token " + quoted(wanted) + ", got " + quoted(current()));
    }
    next();
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(current(), std::string("expected token '") + op + "', got " + quoted(current()));
  }
  void expect_name(const char* name) {
    if (!skip_name(name)) fail(current(), std::string("expected token '") + name + "', got " + quoted(current()));
  }
  std::string expect_identifier() {
    if (current().kind != TokenKind::name) fail(current(), "expected token 'name', got " + quoted(current()));
    std::string name = current().text;
    next();
    return name;
  }

  static std::string quoted(const Token& token) {
    std::string text = "'";
    text += describe_token(token);
    text += '\'';
    return text;
  }

  [[noreturn]] void fail(const Token& token, const std::string& message) const {
    throw JinjaSyntaxError(where_, token.line, message);
  }

  const std::vector<Token>& tokens_;
  const std::string& where_;
  std::size_t pos_ = 0;
};

}  // namespace pagedllm::chat::jinja
