#include "core/chat/jinja/lexer.h"

#include <cctype>

#include "core/chat/chat_errors.h"
#include "core/chat/jinja/python_text.h"
#include "core/chat/jinja/value.h"
#include "core/chat/jinja_scan.h"

namespace pagedllm::chat::jinja {
namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// jinja2 splits the source at "\r\n", "\r" and "\n" and joins with "\n", dropping one trailing newline.
std::string normalise_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view source, const std::string& where) : source_(normalise_source(source)), where_(where) {}

  std::vector<Token> run() {
    while (pos_ < source_.size()) {
      const std::size_t tag = find_tag(pos_);
      std::string text = source_.substr(pos_, tag - pos_);
      if (tag == source_.size()) {
        emit_text(std::move(text));
        break;
      }
      const char kind = source_[tag + 1];
      const char sign =
          tag + 2 < source_.size() && (source_[tag + 2] == '-' || source_[tag + 2] == '+') ? source_[tag + 2] : '\0';
      if (sign == '-') {
        text = python_rstrip(text);
      } else if (sign != '+' && kind != '{') {
        lstrip_block(text);
      }
      emit_text(std::move(text));
      advance_to(tag + 2 + (sign != '\0' ? 1 : 0));
      if (kind == '#') {
        comment();
      } else if (kind == '%' && raw_block()) {
        continue;
      } else {
        tag_body(kind == '{');
      }
    }
    tokens_.push_back({TokenKind::end_of_input, "", line_});
    return std::move(tokens_);
  }

 private:
  std::size_t find_tag(std::size_t from) const {
    for (std::size_t at = source_.find('{', from); at != std::string::npos; at = source_.find('{', at + 1)) {
      if (at + 1 < source_.size() && (source_[at + 1] == '{' || source_[at + 1] == '%' || source_[at + 1] == '#')) {
        return at;
      }
    }
    return source_.size();
  }

  // lstrip_blocks: drop the spaces and tabs between the line's start and a block or comment tag.
  void lstrip_block(std::string& text) const {
    const std::size_t line_start = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
    if (line_start == 0 && !line_starting_) return;
    if (line_start == text.size()) return;
    if (text.find_first_not_of(" \t\v\f", line_start) == std::string::npos) text.resize(line_start);
  }

  void emit_text(std::string text) {
    if (!text.empty()) tokens_.push_back({TokenKind::text, std::move(text), line_});
  }

  // Moves to `to`, counting the lines passed; `line_starting_` remembers whether the last thing
  // consumed ended a line (lstrip_blocks applies to a tag right after it).
  void advance_to(std::size_t to) {
    for (std::size_t i = pos_; i < to; ++i) {
      if (source_[i] == '\n') ++line_;
    }
    line_starting_ = to > pos_ && source_[to - 1] == '\n';
    pos_ = to;
  }

  // After a tag's closing characters: "-" strips all whitespace; trim_blocks drops one newline
  // after a block or comment tag.
  void after_tag_end(std::size_t end, bool strip, bool trim_newline) {
    if (strip) {
      end = python_whitespace_end(source_, end);
    } else if (trim_newline && end < source_.size() && source_[end] == '\n') {
      ++end;
    }
    advance_to(end);
  }

  void comment() {
    const std::size_t end = source_.find("#}", pos_);
    if (end == std::string::npos) fail("Missing end of comment tag");
    const bool strip = end > pos_ && source_[end - 1] == '-';
    after_tag_end(end + 2, strip, true);
  }

  // {% raw %}...{% endraw %}: the text between, untouched.
  bool raw_block() {
    std::size_t at = skip_spaces(pos_);
    if (source_.compare(at, 3, "raw") != 0 || (at + 3 < source_.size() && is_name_char(source_[at + 3]))) return false;
    at = skip_spaces(at + 3);
    const bool strip_after_begin = at < source_.size() && source_[at] == '-';
    if (strip_after_begin) ++at;
    if (source_.compare(at, 2, "%}") != 0) return false;
    std::size_t body = at + 2;
    if (strip_after_begin) {
      body = python_whitespace_end(source_, body);
    } else if (body < source_.size() && source_[body] == '\n') {
      ++body;
    }
    for (std::size_t tag = source_.find("{%", body); tag != std::string::npos; tag = source_.find("{%", tag + 2)) {
      std::size_t word = tag + 2;
      const bool strip_before = word < source_.size() && source_[word] == '-';
      if (strip_before || (word < source_.size() && source_[word] == '+')) ++word;
      word = skip_spaces(word);
      if (source_.compare(word, 6, "endraw") != 0) continue;
      std::size_t end = skip_spaces(word + 6);
      const bool strip_after = end < source_.size() && source_[end] == '-';
      if (strip_after) ++end;
      if (source_.compare(end, 2, "%}") != 0) continue;
      std::string text = source_.substr(body, tag - body);
      if (strip_before) text = python_rstrip(text);
      advance_to(body);
      emit_text(std::move(text));
      after_tag_end(end + 2, strip_after, true);
      return true;
    }
    fail("Missing end of raw directive");
  }

  std::size_t skip_spaces(std::size_t at) const {
    while (at < source_.size() && std::isspace(static_cast<unsigned char>(source_[at])) != 0) ++at;
    return at;
  }

  // The tokens of one {{ }} or {% %} tag, and its end.
  void tag_body(bool variable) {
    tokens_.push_back({variable ? TokenKind::variable_begin : TokenKind::block_begin, "", line_});
    int depth = 0;  // an end marker only counts outside brackets: {{ {'a': {'b': 1}} }}
    while (true) {
      advance_to(skip_spaces(pos_));
      if (pos_ >= source_.size())
        fail(variable ? "unexpected end of template, expected 'end of print statement'"
                      : "unexpected end of template, expected 'end of statement block'");
      if (depth == 0 && tag_end(variable)) return;
      const char c = source_[pos_];
      if (is_name_start(c)) {
        std::size_t end = pos_;
        while (end < source_.size() && is_name_char(source_[end])) ++end;
        push(TokenKind::name, source_.substr(pos_, end - pos_), end);
      } else if (is_digit(c)) {
        number();
      } else if (c == '\'' || c == '"') {
        string_literal(c);
      } else {
        op(depth);
      }
    }
  }

  bool tag_end(bool variable) {
    const std::string close = variable ? "}}" : "%}";
    std::size_t at = pos_;
    const bool strip = source_[at] == '-';
    const bool keep_newline = !variable && source_[at] == '+';  // "+%}" turns trim_blocks off
    if (strip || keep_newline) ++at;
    if (source_.compare(at, 2, close) != 0) return false;
    tokens_.push_back({variable ? TokenKind::variable_end : TokenKind::block_end, "", line_});
    after_tag_end(at + 2, strip, !variable && !keep_newline);
    return true;
  }

  void push(TokenKind kind, std::string text, std::size_t end) {
    tokens_.push_back({kind, std::move(text), line_});
    advance_to(end);
  }

  void number() {
    std::size_t end = pos_;
    const auto digits = [&] {
      while (end < source_.size() && (is_digit(source_[end]) || source_[end] == '_')) ++end;
    };
    digits();
    // After a dot (`foo.0.1`) a number is an index, never a float.
    const bool after_dot = !tokens_.empty() && tokens_.back().kind == TokenKind::op && tokens_.back().text == ".";
    bool is_float = false;
    if (!after_dot && end + 1 < source_.size() && source_[end] == '.' && is_digit(source_[end + 1])) {
      ++end;
      digits();
      is_float = true;
    }
    if (!after_dot && end < source_.size() && (source_[end] == 'e' || source_[end] == 'E')) {
      std::size_t exponent = end + 1;
      if (exponent < source_.size() && (source_[exponent] == '+' || source_[exponent] == '-')) ++exponent;
      if (exponent < source_.size() && is_digit(source_[exponent])) {
        end = exponent;
        digits();
        is_float = true;
      }
    }
    std::string text;
    for (std::size_t i = pos_; i < end; ++i) {
      if (source_[i] != '_') text += source_[i];
    }
    push(is_float ? TokenKind::floating : TokenKind::integer, std::move(text), end);
  }

  void string_literal(char quote) {
    std::size_t end = pos_ + 1;
    while (end < source_.size() && source_[end] != quote) end += source_[end] == '\\' ? 2 : 1;
    if (end >= source_.size()) unexpected_char();
    push(TokenKind::string, decode_jinja_string(std::string_view(source_).substr(pos_ + 1, end - pos_ - 1)), end + 1);
  }

  void op(int& depth) {
    static const char* const kTwoCharacter[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* candidate : kTwoCharacter) {
      if (source_.compare(pos_, 2, candidate) == 0) {
        push(TokenKind::op, candidate, pos_ + 2);
        return;
      }
    }
    const char c = source_[pos_];
    if (std::string_view("+-*/%~[](){}<>=.:|,;").find(c) == std::string_view::npos) {
      unexpected_char();
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) fail(std::string("unexpected '") + c + "'");
      --depth;
    }
    push(TokenKind::op, std::string(1, c), pos_ + 1);
  }

  [[noreturn]] void fail(const std::string& message) const { throw JinjaSyntaxError(where_, line_, message); }

  // jinja2's words: unexpected char "'" at 3 (the offset in the source).
  [[noreturn]] void unexpected_char() const {
    fail("unexpected char " + python_string_repr(source_.substr(pos_, 1)) + " at " + std::to_string(pos_));
  }

  std::string source_;
  const std::string& where_;
  std::size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& where) { return Lexer(source, where).run(); }

std::string describe_token(const Token& token) {
  switch (token.kind) {
    case TokenKind::variable_end:
      return "end of print statement";
    case TokenKind::block_end:
      return "end of statement block";
    case TokenKind::end_of_input:
      return "end of template";
    case TokenKind::text:
      return "template data";
    default:
      return token.text;
  }
}

}  // namespace pagedllm::chat::jinja
