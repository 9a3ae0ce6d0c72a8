#include "core/structured/regex_compiler.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "core/structured/code_point_set.h"
#include "core/structured/regex_escape.h"
#include "core/structured/thompson_nfa.h"
#include "core/tokenizer/utf8.h"

namespace pagedllm::structured {
namespace {

// --- syntax tree (PatternExpr, thompson_nfa.h) ------------------------------------------------------

constexpr int32_t kMaxRepeatBound = 1000;
constexpr int32_t kMaxGroupDepth = 500;  // parsing recurses per group

CodePointSet ascii_class(char which) {
  CodePointSet set;
  switch (which) {
    case 'd':
      set.add('0', '9');
      break;
    case 'w':
      set.add('0', '9');
      set.add('A', 'Z');
      set.add('a', 'z');
      set.add('_', '_');
      break;
    default:  // 's'
      set.add(' ', ' ');
      set.add('\t', '\r');  // \t \n \v \f \r
      break;
  }
  return set;
}

class Parser {
 public:
  explicit Parser(std::string_view pattern) : text_(pattern) {}

  std::vector<PatternExpr> parse(int32_t& root) {
    if (peek() == '^') ++pos_;
    root = alternation();
    if (pos_ < text_.size()) {
      if (text_[pos_] == ')') fail(pos_, "unbalanced ')'");
      fail(pos_, "unexpected '" + std::string(1, text_[pos_]) + "'");
    }
    return std::move(nodes_);
  }

 private:
  [[noreturn]] static void fail(std::size_t offset, const std::string& problem) { throw RegexError(offset, problem); }

  int peek() const { return pos_ < text_.size() ? static_cast<unsigned char>(text_[pos_]) : -1; }

  int32_t add(PatternExpr node) {
    nodes_.push_back(std::move(node));
    return static_cast<int32_t>(nodes_.size()) - 1;
  }

  int32_t alternation() {
    std::vector<int32_t> options{concatenation()};
    while (peek() == '|') {
      ++pos_;
      options.push_back(concatenation());
    }
    if (options.size() == 1) return options.front();
    PatternExpr node;
    node.kind = PatternExpr::Kind::alternate;
    node.children = std::move(options);
    return add(std::move(node));
  }

  int32_t concatenation() {
    PatternExpr node;
    node.kind = PatternExpr::Kind::concat;
    while (pos_ < text_.size() && peek() != '|' && peek() != ')') {
      if (peek() == '$' && pos_ + 1 == text_.size()) {  // a trailing $: the match is whole anyway
        ++pos_;
        break;
      }
      node.children.push_back(repeated());
    }
    if (node.children.size() == 1) return node.children.front();
    if (node.children.empty()) return add(PatternExpr{});
    return add(std::move(node));
  }

  // {n}, {n,} or {n,m} at pos_, or nothing (then the brace is a literal, as in Python's re).
  std::optional<std::pair<int32_t, int32_t>> counted_bounds() {
    std::size_t at = pos_ + 1;
    const auto number = [&]() -> std::optional<int32_t> {
      const std::size_t begin = at;
      int64_t value = 0;
      while (at < text_.size() && text_[at] >= '0' && text_[at] <= '9') {
        value = std::min<int64_t>(value * 10 + (text_[at] - '0'), int64_t{1} << 40);
        ++at;
      }
      if (at == begin) return std::nullopt;
      if (value > kMaxRepeatBound)
        fail(begin, "repeat bound " + std::to_string(value) + " is over " + std::to_string(kMaxRepeatBound));
      return static_cast<int32_t>(value);
    };
    const std::optional<int32_t> low = number();
    if (!low) return std::nullopt;
    int32_t high = *low;
    if (at < text_.size() && text_[at] == ',') {
      ++at;
      const std::optional<int32_t> given = number();
      high = given ? *given : -1;
    }
    if (at >= text_.size() || text_[at] != '}') return std::nullopt;
    if (high >= 0 && high < *low)
      fail(pos_, "repeat bounds {" + std::to_string(*low) + "," + std::to_string(high) + "} are out of order");
    pos_ = at + 1;
    return std::pair{*low, high};
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
        const auto bounds = counted_bounds();
        if (!bounds) break;
        std::tie(min, max) = *bounds;
      } else {
        break;
      }
      if (quantified) fail(at, "multiple repeat (a quantifier after a quantifier)");
      quantified = true;
      if (peek() == '?')
        ++pos_;  // lazy: the same texts match
      else if (peek() == '+')
        fail(pos_, "possessive quantifiers are not supported");
      PatternExpr repeat;
      repeat.kind = PatternExpr::Kind::repeat;
      repeat.children = {node};
      repeat.min = min;
      repeat.max = max;
      node = add(std::move(repeat));
    }
    return node;
  }

  // One UTF-8 character of the pattern, as a code point.
  char32_t literal() {
    char32_t code_point = 0;
    const std::size_t length = tokenizer::decode_utf8(text_.substr(pos_), code_point);
    if (length == 0) fail(pos_, "the pattern is not valid UTF-8");
    pos_ += length;
    return code_point;
  }

  char32_t hex_digits(std::size_t count, std::size_t escape_at) {
    const std::optional<char32_t> value = read_hex_digits(text_, pos_, count);
    if (!value) fail(escape_at, "a hexadecimal escape needs " + std::to_string(count) + " hex digits");
    return *value;
  }

  // An escape after its backslash: a set (one member for a single character).
  CodePointSet escape(bool in_class) {
    const std::size_t at = pos_ - 1;
    if (pos_ >= text_.size()) fail(at, "the pattern ends in a lone backslash");
    const char c = text_[pos_++];
    switch (c) {
      case 'd':
      case 'w':
      case 's':
        return ascii_class(c);
      case 'D':
      case 'W':
      case 'S':
        return ascii_class(static_cast<char>(c - 'A' + 'a')).complement();
      case 'n':
        return CodePointSet::of('\n', '\n');
      case 't':
        return CodePointSet::of('\t', '\t');
      case 'r':
        return CodePointSet::of('\r', '\r');
      case 'f':
        return CodePointSet::of('\f', '\f');
      case 'v':
        return CodePointSet::of('\v', '\v');
      case '0':
        return CodePointSet::of(0, 0);
      case 'x': {
        const char32_t value = hex_digits(2, at);
        return CodePointSet::of(value, value);
      }
      case 'u': {
        char32_t value = 0;
        if (peek() == '{') {
          ++pos_;
          const std::size_t digits_at = pos_;
          while (peek() != '}' && peek() != -1) ++pos_;
          if (peek() != '}' || pos_ == digits_at || pos_ - digits_at > 6) fail(at, "\\u{...} needs 1 to 6 hex digits");
          pos_ = digits_at;
          value = hex_digits(static_cast<std::size_t>(text_.find('}', digits_at) - digits_at), at);
          ++pos_;
        } else {
          value = hex_digits(4, at);
        }
        if (value > kMaxCodePoint) fail(at, "code point past U+10FFFF");
        return CodePointSet::of(value, value);
      }
      case 'b':
        if (in_class) return CodePointSet::of('\b', '\b');
        fail(at, "word boundaries (\\b) are not supported");
      case 'B':
        fail(at, "word boundaries (\\B) are not supported");
      case 'A':
      case 'Z':
      case 'z':
        fail(at, "anchors (\\" + std::string(1, c) + ") are not supported; the match is always whole");
      case 'p':
      case 'P':
        fail(at, "Unicode property classes (\\" + std::string(1, c) + "{...}) are not supported");
      default:
        break;
    }
    if (c >= '1' && c <= '9') fail(at, "backreferences are not supported");
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) fail(at, "unknown escape \\" + std::string(1, c));
    --pos_;
    const char32_t code_point = literal();  // escaped punctuation, or any other character
    return CodePointSet::of(code_point, code_point);
  }

  CodePointSet bracket_class() {
    const std::size_t at = pos_ - 1;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CodePointSet set;
    bool first = true;
    while (true) {
      if (pos_ >= text_.size()) fail(at, "missing ']' for the class opened here");
      if (peek() == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      const std::size_t item_at = pos_;
      CodePointSet item;
      if (peek() == '\\') {
        ++pos_;
        item = escape(true);
      } else if (text_.compare(pos_, 2, "[:") == 0) {
        fail(pos_, "POSIX classes ([:name:]) are not supported");
      } else {
        const char32_t c = literal();
        item = CodePointSet::of(c, c);
      }
      const bool single = item.ranges().size() == 1 && item.ranges()[0].first == item.ranges()[0].second;
      if (single && peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        CodePointSet upper;
        if (peek() == '\\') {
          ++pos_;
          upper = escape(true);
        } else {
          const char32_t c = literal();
          upper = CodePointSet::of(c, c);
        }
        if (upper.ranges().size() != 1 || upper.ranges()[0].first != upper.ranges()[0].second) {
          fail(item_at, "a range's end must be a single character");
        }
        const char32_t lo = item.ranges()[0].first;
        const char32_t hi = upper.ranges()[0].first;
        if (hi < lo) fail(item_at, "range out of order");
        set.add(lo, hi);
      } else {
        set.add(item);
      }
    }
    return negated ? set.complement() : set;
  }

  int32_t atom() {
    const std::size_t at = pos_;
    const int c = peek();
    PatternExpr node;
    node.kind = PatternExpr::Kind::set;
    switch (c) {
      case '(': {
        if (++group_depth_ > kMaxGroupDepth) {
          fail(at, "groups nest more than " + std::to_string(kMaxGroupDepth) + " deep");
        }
        ++pos_;
        if (peek() == '?') {
          if (pos_ + 1 < text_.size() && text_[pos_ + 1] == ':') {
            pos_ += 2;
          } else if (pos_ + 1 < text_.size() &&
                     (text_[pos_ + 1] == '=' || text_[pos_ + 1] == '!' || text_[pos_ + 1] == '<')) {
            const bool named =
                text_[pos_ + 1] == '<' && pos_ + 2 < text_.size() && text_[pos_ + 2] != '=' && text_[pos_ + 2] != '!';
            fail(at, named ? "named groups are not supported; use (...) or (?:...)"
                           : "lookaround assertions are not supported");
          } else {
            fail(at, "group syntax (?" + std::string(pos_ + 1 < text_.size() ? 1 : 0, text_[pos_ + 1]) +
                         "...) is not supported");
          }
        }
        const int32_t inner = alternation();
        if (peek() != ')') fail(at, "missing ')' for the group opened here");
        ++pos_;
        --group_depth_;
        return inner;
      }
      case '[':
        ++pos_;
        node.set = bracket_class();
        return add(std::move(node));
      case '.':
        ++pos_;
        node.set = CodePointSet::of('\n', '\n').complement();
        return add(std::move(node));
      case '\\':
        ++pos_;
        node.set = escape(false);
        return add(std::move(node));
      case '*':
      case '+':
      case '?':
        fail(at, "nothing to repeat before '" + std::string(1, static_cast<char>(c)) + "'");
      case '^':
        fail(at, "'^' inside the pattern: the match is always whole, so only a leading '^' is accepted");
      case '$':
        fail(at, "'$' inside the pattern: the match is always whole, so only a trailing '$' is accepted");
      default: {
        const char32_t code_point = literal();
        node.set = CodePointSet::of(code_point, code_point);
        return add(std::move(node));
      }
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int32_t group_depth_ = 0;
  std::vector<PatternExpr> nodes_;
};

// Sends every transition into a state that cannot reach a match to kDead, so that a refused
// prefix is refused at its first byte (a token mask must not allow a token that leads nowhere).
void prune_dead_ends(ByteDfa& dfa) {
  const std::size_t n = dfa.next.size();
  std::vector<std::vector<int32_t>> incoming(n);
  for (std::size_t s = 0; s < n; ++s) {
    for (const int32_t to : dfa.next[s]) {
      if (to != ByteDfa::kDead) incoming[static_cast<std::size_t>(to)].push_back(static_cast<int32_t>(s));
    }
  }
  std::vector<char> live(n, 0);
  std::vector<int32_t> stack;
  for (std::size_t s = 0; s < n; ++s) {
    if (dfa.accepting[s]) {
      live[s] = 1;
      stack.push_back(static_cast<int32_t>(s));
    }
  }
  while (!stack.empty()) {
    const int32_t s = stack.back();
    stack.pop_back();
    for (const int32_t from : incoming[static_cast<std::size_t>(s)]) {
      if (!live[static_cast<std::size_t>(from)]) {
        live[static_cast<std::size_t>(from)] = 1;
        stack.push_back(from);
      }
    }
  }
  for (std::array<int32_t, 256>& row : dfa.next) {
    for (int32_t& to : row) {
      if (to != ByteDfa::kDead && !live[static_cast<std::size_t>(to)]) to = ByteDfa::kDead;
    }
  }
}

}  // namespace

ByteDfa compile_regex(std::string_view pattern, const RegexLimits& limits) {
  int32_t root = 0;
  const std::vector<PatternExpr> nodes = Parser(pattern).parse(root);
  ByteDfa dfa;
  try {
    int32_t nfa_states_left = limits.max_nfa_states;
    ThompsonNfa builder(nodes, limits.max_nfa_states, nfa_states_left);
    const ThompsonNfa::Fragment whole = builder.build(root);
    const std::vector<NfaState> nfa = builder.take();
    int32_t dfa_states_left = limits.max_dfa_states;
    dfa = determinize(nfa, whole.start, whole.end, limits.max_dfa_states, dfa_states_left).dfa;
  } catch (const AutomatonLimitError& error) {
    throw RegexError(0, std::string("the pattern is ") + error.what());
  }
  prune_dead_ends(dfa);
  return dfa;
}

}  // namespace pagedllm::structured
