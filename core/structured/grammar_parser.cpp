#include "core/structured/grammar_parser.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>

#include "core/structured/regex_escape.h"
#include "core/tokenizer/utf8.h"

namespace pagedllm::structured {
namespace {

constexpr int32_t kMaxRepeatBound = 1000;
constexpr int32_t kMaxGroupDepth = 200;  // parsing recurses per group

bool is_name_char(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Grammar parse() {
    skip_space();
    if (pos_ >= text_.size()) fail(pos_, "the grammar is empty; it needs a rule `root ::= ...`");
    while (pos_ < text_.size()) rule();
    for (const auto& [rule, offset] : references_) {
      if (grammar_.rules[static_cast<std::size_t>(rule)].body < 0) {
        fail(offset, "rule '" + grammar_.rules[static_cast<std::size_t>(rule)].name + "' is used but never defined");
      }
    }
    const auto root = by_name_.find("root");
    if (root == by_name_.end() || grammar_.rules[static_cast<std::size_t>(root->second)].body < 0) {
      throw GrammarError("grammar: no rule named 'root' (the start rule: `root ::= ...`)");
    }
    grammar_.root = root->second;
    return std::move(grammar_);
  }

 private:
  [[noreturn]] void fail(std::size_t offset, const std::string& problem) const {
    int32_t line = 1;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < offset && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    throw GrammarError("grammar, line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1) +
                       ": " + problem);
  }

  int peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? static_cast<unsigned char>(text_[pos_ + ahead]) : -1;
  }

  // The 1-based line of `offset`, counted on from the last offset asked (rules come in order, so a
  // grammar of many rules is read in one pass).
  int32_t line_of(std::size_t offset) {
    for (; counted_to_ < offset; ++counted_to_) lines_before_ += text_[counted_to_] == '\n' ? 1 : 0;
    return 1 + lines_before_;
  }

  // Spaces, line breaks and # comments: none of them mean anything between the grammar's tokens.
  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string name() {
    const std::size_t begin = pos_;
    while (is_name_char(peek())) ++pos_;
    return std::string(text_.substr(begin, pos_ - begin));
  }

  // Whether a rule definition (`name ::=`) starts at pos_: where the rule before it ends.
  bool at_definition() {
    if (!is_name_char(peek())) return false;
    const std::size_t saved = pos_;
    name();
    skip_space();
    const bool definition = text_.compare(pos_, 3, "::=") == 0;
    pos_ = saved;
    return definition;
  }

  int32_t rule_index(const std::string& rule_name) {
    const auto [it, inserted] = by_name_.emplace(rule_name, static_cast<int32_t>(grammar_.rules.size()));
    if (inserted) grammar_.rules.push_back(GrammarRule{rule_name, -1, 0});
    return it->second;
  }

  int32_t add(PatternExpr expr) {
    grammar_.exprs.push_back(std::move(expr));
    return static_cast<int32_t>(grammar_.exprs.size()) - 1;
  }

  void rule() {
    const std::size_t at = pos_;
    if (!is_name_char(peek())) {
      fail(at, "expected a rule name (a definition `name ::= ...`), found '" + std::string(1, text_[pos_]) + "'");
    }
    const std::string rule_name = name();
    skip_space();
    if (text_.compare(pos_, 3, "::=") != 0) {
      if (peek() == ':')
        fail(pos_, "expected '::=' after the rule name (Lark's ':' syntax is not supported; write GBNF)");
      fail(pos_, "expected '::=' after the rule name '" + rule_name + "'");
    }
    pos_ += 3;
    const int32_t index = rule_index(rule_name);
    GrammarRule& rule = grammar_.rules[static_cast<std::size_t>(index)];
    if (rule.body >= 0)
      fail(at, "rule '" + rule_name + "' is defined twice (first on line " + std::to_string(rule.line) + ")");
    rule.line = line_of(at);
    skip_space();
    const int32_t body = alternation();
    grammar_.rules[static_cast<std::size_t>(index)].body = body;
    skip_space();
    if (peek() == ')') fail(pos_, "unbalanced ')'");
  }

  int32_t alternation() {
    std::vector<int32_t> options{sequence()};
    while (peek() == '|') {
      ++pos_;
      skip_space();
      options.push_back(sequence());
    }
    if (options.size() == 1) return options.front();
    PatternExpr expr;
    expr.kind = PatternExpr::Kind::alternate;
    expr.children = std::move(options);
    return add(std::move(expr));
  }

  int32_t sequence() {
    PatternExpr expr;
    expr.kind = PatternExpr::Kind::concat;
    while (true) {
      skip_space();
      const int c = peek();
      if (c == -1 || c == '|' || c == ')' || at_definition()) break;
      expr.children.push_back(repeated());
    }
    if (expr.children.size() == 1) return expr.children.front();
    if (expr.children.empty()) return add(PatternExpr{});
    return add(std::move(expr));
  }

  int32_t number(std::size_t at) {
    const std::size_t begin = pos_;
    int64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      value = std::min<int64_t>(value * 10 + (peek() - '0'), int64_t{1} << 40);
      ++pos_;
    }
    if (pos_ == begin) return -1;
    if (value > kMaxRepeatBound) {
      fail(at, "repeat bound " + std::to_string(value) + " is over " + std::to_string(kMaxRepeatBound));
    }
    return static_cast<int32_t>(value);
  }

  int32_t repeated() {
    int32_t node = atom();
    bool quantified = false;
    while (true) {
      const std::size_t at = pos_;
      int32_t min = 0;
      int32_t max = -1;
      const int c = peek();
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        min = 1;
        ++pos_;
      } else if (c == '?') {
        max = 1;
        ++pos_;
      } else if (c == '{') {
        ++pos_;
        skip_space();
        const int32_t low = number(at);
        skip_space();
        int32_t high = low;
        if (peek() == ',') {
          ++pos_;
          skip_space();
          high = number(at);
          skip_space();
        } else if (low < 0) {
          fail(at, "a counted repeat needs a bound: {n}, {n,}, {n,m} or {,m}");
        }
        if (peek() != '}') fail(at, "missing '}' for the counted repeat opened here");
        ++pos_;
        min = std::max(low, 0);
        max = high;
        if (max >= 0 && max < min) {
          fail(at, "repeat bounds {" + std::to_string(min) + "," + std::to_string(max) + "} are out of order");
        }
      } else {
        break;
      }
      if (quantified) fail(at, "a quantifier after a quantifier; group the first: (x*)?");
      quantified = true;
      PatternExpr repeat;
      repeat.kind = PatternExpr::Kind::repeat;
      repeat.children = {node};
      repeat.min = min;
      repeat.max = max;
      node = add(std::move(repeat));
    }
    return node;
  }

  char32_t hex_digits(std::size_t count, std::size_t escape_at) {
    const std::optional<char32_t> value = read_hex_digits(text_, pos_, count);
    if (!value) fail(escape_at, "the escape needs " + std::to_string(count) + " hexadecimal digits");
    return *value;
  }

  // One character of a string or class, its escapes read (GBNF's: \n \t \r \\ \" \' \[ \] \- \^
  // \xHH \uHHHH \UHHHHHHHH).
  char32_t character() {
    const std::size_t at = pos_;
    if (peek() != '\\') {
      char32_t code_point = 0;
      const std::size_t length = tokenizer::decode_utf8(text_.substr(pos_), code_point);
      if (length == 0) fail(at, "the grammar is not valid UTF-8");
      pos_ += length;
      return code_point;
    }
    ++pos_;
    const int c = peek();
    ++pos_;
    char32_t value = 0;
    switch (c) {
      case 'n':
        return '\n';
      case 't':
        return '\t';
      case 'r':
        return '\r';
      case '\\':
      case '"':
      case '\'':
      case '[':
      case ']':
      case '-':
      case '^':
        return static_cast<char32_t>(c);
      case 'x':
        value = hex_digits(2, at);
        break;
      case 'u':
        value = hex_digits(4, at);
        break;
      case 'U':
        value = hex_digits(8, at);
        break;
      case -1:
        fail(at, "the grammar ends in a lone backslash");
      default:
        fail(at, "unknown escape \\" + std::string(1, static_cast<char>(c)));
    }
    if (value > kMaxCodePoint || (value >= 0xD800 && value <= 0xDFFF)) {
      fail(at, "the escape is not a Unicode scalar value (a surrogate, or past U+10FFFF)");
    }
    return value;
  }

  int32_t set_expr(CodePointSet set) {
    PatternExpr expr;
    expr.kind = PatternExpr::Kind::set;
    expr.set = std::move(set);
    return add(std::move(expr));
  }

  int32_t string_literal() {
    const std::size_t at = pos_;
    ++pos_;  // the opening quote
    PatternExpr expr;
    expr.kind = PatternExpr::Kind::concat;
    while (peek() != '"') {
      if (peek() == -1) fail(at, "missing '\"' for the string opened here");
      if (peek() == '\n') fail(pos_, "a line break inside a string (write \\n)");
      const char32_t c = character();
      expr.children.push_back(set_expr(CodePointSet::of(c, c)));
    }
    ++pos_;
    if (expr.children.size() == 1) return expr.children.front();
    if (expr.children.empty()) return add(PatternExpr{});
    return add(std::move(expr));
  }

  int32_t char_class() {
    const std::size_t at = pos_;
    ++pos_;  // [
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CodePointSet set;
    while (peek() != ']') {
      if (peek() == -1) fail(at, "missing ']' for the class opened here");
      const std::size_t item_at = pos_;
      const char32_t lo = character();
      char32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && peek(1) != -1) {
        ++pos_;
        hi = character();
        if (hi < lo) fail(item_at, "range out of order");
      }
      // Surrogates are never characters: a range over them keeps the scalar values around them.
      if (lo < 0xD800 || hi > 0xDFFF) {
        if (lo < 0xD800) set.add(lo, std::min<char32_t>(hi, 0xD7FF));
        if (hi > 0xDFFF) set.add(std::max<char32_t>(lo, 0xE000), hi);
      }
    }
    ++pos_;
    if (negated) set = set.complement();
    if (set.empty()) fail(at, "the character class matches no character");
    return set_expr(std::move(set));
  }

  int32_t atom() {
    const std::size_t at = pos_;
    const int c = peek();
    switch (c) {
      case '"':
        return string_literal();
      case '[':
        return char_class();
      case '.':
        ++pos_;
        return set_expr(CodePointSet::of(0, kMaxCodePoint));
      case '(': {
        if (++group_depth_ > kMaxGroupDepth) {
          fail(at, "groups nest more than " + std::to_string(kMaxGroupDepth) + " deep");
        }
        ++pos_;
        skip_space();
        if (peek() == '=' || peek() == '!') fail(at, "lookahead assertions are not supported");
        const int32_t inner = alternation();
        skip_space();
        if (peek() != ')') fail(at, "missing ')' for the group opened here");
        ++pos_;
        --group_depth_;
        return inner;
      }
      case '*':
      case '+':
      case '?':
      case '{':
        fail(at, "nothing to repeat before '" + std::string(1, static_cast<char>(c)) + "'");
      case '\'':
        fail(at, "strings are written in double quotes (\"...\")");
      default:
        break;
    }
    if (!is_name_char(c)) fail(at, "unexpected '" + std::string(1, static_cast<char>(c)) + "'");
    PatternExpr expr;
    expr.kind = PatternExpr::Kind::rule_ref;
    expr.rule = rule_index(name());
    references_.emplace_back(expr.rule, at);
    return add(std::move(expr));
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int32_t group_depth_ = 0;
  std::size_t counted_to_ = 0;  // line_of: the newlines in text_[0, counted_to_)
  int32_t lines_before_ = 0;
  Grammar grammar_;
  std::unordered_map<std::string, int32_t> by_name_;
  std::vector<std::pair<int32_t, std::size_t>> references_;  // (rule, offset of the use)
};

}  // namespace

Grammar parse_grammar(std::string_view text) { return Parser(text).parse(); }

}  // namespace pagedllm::structured
