#include "core/chat/jinja/parser.h"

#include <algorithm>
#include <initializer_list>

#include "core/chat/chat_errors.h"
#include "core/chat/jinja/filters.h"
#include "core/chat/jinja/predicates.h"

namespace pagedllm::chat::jinja {
namespace {

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const std::string& where) : tokens_(tokens), where_(where) {}

  Body run() {
    std::string end_tag;
    Body body = parse_body({}, "", end_tag);
    return body;
  }

 private:
  // --- statements ------------------------------------------------------------------------------

  // Statements up to a block tag named in `end_tags` (consumed up to the tag's name, which is
  // returned in `end_tag`), or to the end of input when `end_tags` is empty.
  Body parse_body(std::initializer_list<const char*> end_tags, const char* innermost, std::string& end_tag) {
    if (end_tags.size() > 0) open_blocks_.push_back({looking_for(end_tags), innermost});
    Body body = parse_body_until(end_tags, innermost, end_tag);
    if (end_tags.size() > 0) open_blocks_.pop_back();
    return body;
  }

  static std::string looking_for(std::initializer_list<const char*> end_tags) {
    std::string wanted;
    for (const char* tag : end_tags) wanted += (wanted.empty() ? "'" : " or '") + std::string(tag) + "'";
    return wanted;
  }

  Body parse_body_until(std::initializer_list<const char*> end_tags, const char* innermost, std::string& end_tag) {
    Body body;
    while (true) {
      const Token& token = current();
      if (token.kind == TokenKind::end_of_input) {
        if (end_tags.size() == 0) return body;
        fail(token, "Unexpected end of template. Jinja was looking for the following tags: " + looking_for(end_tags) +
                        ". The innermost block that needs to be closed is '" + innermost + "'.");
      }
      if (token.kind == TokenKind::text) {
        body.push_back({token.line, TextStmt{token.text}});
        next();
      } else if (token.kind == TokenKind::variable_begin) {
        next();
        ExpressionPtr expression = parse_tuple(true);
        expect(TokenKind::variable_end);
        body.push_back({token.line, OutputStmt{std::move(expression)}});
      } else {
        next();  // {%
        const Token& name = current();
        if (name.kind != TokenKind::name) fail(name, "tag name expected");
        if (std::any_of(end_tags.begin(), end_tags.end(), [&](const char* tag) { return name.text == tag; })) {
          end_tag = name.text;
          next();
          return body;
        }
        parse_statement(body);
      }
    }
  }

  void parse_statement(Body& body) {
    const Token& tag = current();
    const int line = tag.line;
    const std::string name = tag.text;
    next();
    if (name == "if") {
      body.push_back({line, parse_if()});
    } else if (name == "for") {
      body.push_back({line, parse_for()});
    } else if (name == "set") {
      body.push_back({line, parse_set()});
    } else if (name == "macro") {
      body.push_back({line, parse_macro()});
    } else if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) fail(tag, "'" + name + "' outside loop");
      expect(TokenKind::block_end);
      if (name == "break") {
        body.push_back({line, BreakStmt{}});
      } else {
        body.push_back({line, ContinueStmt{}});
      }
    } else if (name == "generation") {
      // transformers' AssistantTracker: marks the assistant's text for masks; renders the body.
      expect(TokenKind::block_end);
      std::string end_tag;
      Body inner = parse_body({"endgeneration"}, "generation", end_tag);
      expect(TokenKind::block_end);
      for (Statement& statement : inner) body.push_back(std::move(statement));
    } else if (name == "call" || name == "filter" || name == "block" || name == "extends" || name == "include" ||
               name == "import" || name == "from" || name == "with" || name == "autoescape" || name == "do") {
      fail(tag, "'" + name + "' tags are not supported by pagedllm's Jinja interpreter");
    } else {
      std::string message = "Encountered unknown tag '" + name + "'.";
      if (!open_blocks_.empty()) {
        message += " Jinja was looking for the following tags: " + open_blocks_.back().first +
                   ". The innermost block that needs to be closed is '" + open_blocks_.back().second + "'.";
      }
      fail(tag, message);
    }
  }

  IfStmt parse_if() {
    IfStmt statement;
    ExpressionPtr condition = parse_tuple(false);
    while (true) {
      expect(TokenKind::block_end);
      std::string end_tag;
      Body branch = parse_body({"elif", "else", "endif"}, "if", end_tag);
      statement.branches.emplace_back(std::move(condition), std::move(branch));
      if (end_tag == "elif") {
        condition = parse_tuple(false);
        continue;
      }
      if (end_tag == "else") {
        expect(TokenKind::block_end);
        statement.otherwise = parse_body({"endif"}, "if", end_tag);
      }
      expect(TokenKind::block_end);
      return statement;
    }
  }

  ForStmt parse_for() {
    ForStmt statement;
    statement.targets = parse_targets();
    expect_name("in");
    statement.iterable = parse_tuple(false);
    if (skip_name("if")) statement.condition = parse_expression(true);
    if (is_name("recursive")) fail(current(), "recursive loops are not supported");
    expect(TokenKind::block_end);
    ++loop_depth_;
    std::string end_tag;
    statement.body = parse_body({"endfor", "else"}, "for", end_tag);
    --loop_depth_;
    if (end_tag == "else") {
      expect(TokenKind::block_end);
      statement.otherwise = parse_body({"endfor"}, "for", end_tag);
    }
    expect(TokenKind::block_end);
    return statement;
  }

  // name | name, name, ... | (name, name)
  std::vector<std::string> parse_targets() {
    std::vector<std::string> targets;
    const bool parenthesised = skip_op("(");
    do {
      if (parenthesised && is_op(")")) break;
      targets.push_back(expect_identifier());
    } while (skip_op(","));
    if (parenthesised) expect_op(")");
    return targets;
  }

  SetStmt parse_set() {
    SetStmt statement;
    const std::string first = expect_identifier();
    if (skip_op(".")) {
      statement.targets = {first};
      statement.attribute = expect_identifier();
    } else {
      statement.targets = {first};
      while (skip_op(",")) statement.targets.push_back(expect_identifier());
    }
    if (skip_op("=")) {
      statement.value = parse_tuple(true);
      expect(TokenKind::block_end);
      return statement;
    }
    if (statement.targets.size() != 1 || !statement.attribute.empty()) expect_op("=");
    expect(TokenKind::block_end);
    std::string end_tag;
    statement.body = parse_body({"endset"}, "set", end_tag);
    expect(TokenKind::block_end);
    return statement;
  }

  MacroStmt parse_macro() {
    MacroStmt statement;
    statement.name = expect_identifier();
    expect_op("(");
    while (!skip_op(")")) {
      if (!statement.parameters.empty()) expect_op(",");
      if (skip_op(")")) break;
      MacroParameter parameter{expect_identifier(), nullptr};
      if (skip_op("=")) {
        parameter.default_value = parse_expression(true);
      } else if (!statement.parameters.empty() && statement.parameters.back().default_value) {
        fail(current(), "non-default argument follows default argument");
      }
      statement.parameters.push_back(std::move(parameter));
    }
    expect(TokenKind::block_end);
    const int saved_loop_depth = std::exchange(loop_depth_, 0);
    std::string end_tag;
    statement.body = parse_body({"endmacro"}, "macro", end_tag);
    loop_depth_ = saved_loop_depth;
    expect(TokenKind::block_end);
    return statement;
  }

  // --- expressions ----------------------------------------------------------------------------

  ExpressionPtr make(int line, auto node) {
    auto expression = std::make_unique<Expression>();
    expression->line = line;
    expression->node = std::move(node);
    return expression;
  }

  // Comma-separated expressions: one alone is itself, more (or a trailing comma) a tuple.
  ExpressionPtr parse_tuple(bool with_conditional) {
    const int line = current().line;
    std::vector<ExpressionPtr> items;
    bool trailing_comma = false;
    while (true) {
      if (!items.empty()) {
        if (!skip_op(",")) break;
        trailing_comma = true;
        if (!starts_expression()) break;
      }
      items.push_back(parse_expression(with_conditional));
      trailing_comma = false;
    }
    if (items.size() == 1 && !trailing_comma) return std::move(items.front());
    return make(line, ListExpr{std::move(items), true});
  }

  ExpressionPtr parse_expression(bool with_conditional) {
    ExpressionPtr expression = parse_or();
    if (!with_conditional) return expression;
    while (is_name("if")) {
      const int line = current().line;
      next();
      ExpressionPtr condition = parse_or();
      ExpressionPtr otherwise = skip_name("else") ? parse_expression(true) : nullptr;
      expression = make(line, ConditionalExpr{std::move(condition), std::move(expression), std::move(otherwise)});
    }
    return expression;
  }

  ExpressionPtr binary(int line, std::string op, ExpressionPtr left, ExpressionPtr right) {
    return make(line, BinaryExpr{std::move(op), std::move(left), std::move(right)});
  }

  ExpressionPtr parse_or() {
    ExpressionPtr left = parse_and();
    while (is_name("or")) {
      const int line = current().line;
      next();
      left = binary(line, "or", std::move(left), parse_and());
    }
    return left;
  }

  ExpressionPtr parse_and() {
    ExpressionPtr left = parse_not();
    while (is_name("and")) {
      const int line = current().line;
      next();
      left = binary(line, "and", std::move(left), parse_not());
    }
    return left;
  }

  ExpressionPtr parse_not() {
    if (is_name("not")) {
      const int line = current().line;
      next();
      return make(line, UnaryExpr{"not", parse_not()});
    }
    return parse_compare();
  }

  ExpressionPtr parse_compare() {
    ExpressionPtr left = parse_math1();
    while (true) {
      const int line = current().line;
      std::string op;
      if (current().kind == TokenKind::op &&
          (is_op("==") || is_op("!=") || is_op("<") || is_op("<=") || is_op(">") || is_op(">="))) {
        op = current().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && peek().kind == TokenKind::name && peek().text == "in") {
        op = "not in";
        next();
        next();
      } else {
        return left;
      }
      left = binary(line, op, std::move(left), parse_math1());
    }
  }

  ExpressionPtr parse_math1() {
    ExpressionPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token op = current();
      next();
      left = binary(op.line, op.text, std::move(left), parse_concat());
    }
    return left;
  }

  ExpressionPtr parse_concat() {
    ExpressionPtr left = parse_math2();
    while (is_op("~")) {
      const int line = current().line;
      next();
      left = binary(line, "~", std::move(left), parse_math2());
    }
    return left;
  }

  ExpressionPtr parse_math2() {
    ExpressionPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token op = current();
      next();
      left = binary(op.line, op.text, std::move(left), parse_pow());
    }
    return left;
  }

  ExpressionPtr parse_pow() {
    ExpressionPtr left = parse_unary(true);
    while (is_op("**")) {
      const int line = current().line;
      next();
      left = binary(line, "**", std::move(left), parse_unary(true));
    }
    return left;
  }

  ExpressionPtr parse_unary(bool with_filter) {
    const int line = current().line;
    ExpressionPtr expression;
    if (is_op("-") || is_op("+")) {
      const std::string op = current().text;
      next();
      expression = make(line, UnaryExpr{op, parse_unary(false)});
    } else {
      expression = parse_postfix(parse_primary());
    }
    return with_filter ? parse_filters(std::move(expression)) : std::move(expression);
  }

  ExpressionPtr parse_primary() {
    const Token& token = current();
    const int line = token.line;
    switch (token.kind) {
      case TokenKind::name: {
        next();
        if (token.text == "true" || token.text == "True") return make(line, LiteralExpr{Value(true)});
        if (token.text == "false" || token.text == "False") return make(line, LiteralExpr{Value(false)});
        if (token.text == "none" || token.text == "None") return make(line, LiteralExpr{Value(None{})});
        return make(line, NameExpr{token.text});
      }
      case TokenKind::string: {
        std::string text;
        while (current().kind == TokenKind::string) {  // adjacent literals join, as in Python
          text += current().text;
          next();
        }
        return make(line, LiteralExpr{Value(std::move(text))});
      }
      case TokenKind::integer: {
        next();
        try {
          return make(line, LiteralExpr{Value(static_cast<std::int64_t>(std::stoll(token.text)))});
        } catch (const std::out_of_range&) {
          fail(token, "integer literal out of range: " + token.text);
        }
      }
      case TokenKind::floating:
        next();
        return make(line, LiteralExpr{Value(std::stod(token.text))});
      default:
        break;
    }
    if (skip_op("(")) {
      if (skip_op(")")) return make(line, ListExpr{{}, true});
      ExpressionPtr inner = parse_tuple(true);
      expect_op(")");
      return inner;
    }
    if (skip_op("[")) {
      ListExpr list;
      while (!skip_op("]")) {
        if (!list.items.empty()) expect_op(",");
        if (skip_op("]")) break;
        list.items.push_back(parse_expression(true));
      }
      return make(line, std::move(list));
    }
    if (skip_op("{")) {
      DictExpr dict;
      while (!skip_op("}")) {
        if (!dict.entries.empty()) expect_op(",");
        if (skip_op("}")) break;
        ExpressionPtr key = parse_expression(true);
        expect_op(":");
        dict.entries.emplace_back(std::move(key), parse_expression(true));
      }
      return make(line, std::move(dict));
    }
    fail(token, "Expected an expression, got " + quoted(token));
  }

  ExpressionPtr parse_postfix(ExpressionPtr expression) {
    while (true) {
      const int line = current().line;
      if (skip_op(".")) {
        const Token& token = current();
        if (token.kind == TokenKind::name) {
          next();
          expression = make(line, AttributeExpr{std::move(expression), token.text});
        } else if (token.kind == TokenKind::integer) {
          next();
          expression =
              make(line, ItemExpr{std::move(expression),
                                  make(line, LiteralExpr{Value(static_cast<std::int64_t>(std::stoll(token.text)))})});
        } else {
          fail(token, "expected name or number");
        }
      } else if (skip_op("[")) {
        expression = parse_subscript(line, std::move(expression));
      } else if (is_op("(")) {
        expression = parse_call(std::move(expression));
      } else {
        return expression;
      }
    }
  }

  ExpressionPtr parse_subscript(int line, ExpressionPtr object) {
    ExpressionPtr start = is_op(":") ? nullptr : parse_expression(true);
    if (!skip_op(":")) {
      expect_op("]");
      return make(line, ItemExpr{std::move(object), std::move(start)});
    }
    ExpressionPtr stop = is_op(":") || is_op("]") ? nullptr : parse_expression(true);
    ExpressionPtr step;
    if (skip_op(":") && !is_op("]")) step = parse_expression(true);
    expect_op("]");
    return make(line, SliceExpr{std::move(object), std::move(start), std::move(stop), std::move(step)});
  }

  std::vector<Argument> parse_arguments() {
    expect_op("(");
    std::vector<Argument> arguments;
    while (!skip_op(")")) {
      if (!arguments.empty()) expect_op(",");
      if (skip_op(")")) break;
      std::string keyword;
      if (current().kind == TokenKind::name && peek().kind == TokenKind::op && peek().text == "=") {
        keyword = current().text;
        next();
        next();
      } else if (!arguments.empty() && !arguments.back().keyword.empty()) {
        fail(current(), "invalid syntax for function call expression");
      }
      arguments.push_back({std::move(keyword), parse_expression(true)});
    }
    return arguments;
  }

  ExpressionPtr parse_call(ExpressionPtr callee) {
    const int line = current().line;
    return make(line, CallExpr{std::move(callee), parse_arguments()});
  }

  ExpressionPtr parse_filters(ExpressionPtr expression) {
    while (true) {
      const int line = current().line;
      if (skip_op("|")) {
        const Token& name_token = current();
        std::string name = expect_identifier();
        while (skip_op(".")) {
          name += '.';
          name += expect_identifier();
        }
        if (!has_filter(name)) fail(name_token, "No filter named '" + name + "'.");
        std::vector<Argument> arguments;
        if (is_op("(")) arguments = parse_arguments();
        expression = make(line, FilterExpr{std::move(expression), std::move(name), std::move(arguments)});
      } else if (is_name("is")) {
        next();
        const bool negated = skip_name("not");
        const Token& name_token = current();
        std::string name = expect_identifier();
        if (!has_test(name)) fail(name_token, "No test named '" + name + "'.");
        std::vector<Argument> arguments;
        if (is_op("(")) {
          arguments = parse_arguments();
        } else if (starts_test_argument()) {
          arguments.push_back({"", parse_postfix(parse_primary())});
        }
        expression = make(line, TestExpr{std::move(expression), std::move(name), std::move(arguments), negated});
      } else if (is_op("(")) {
        expression = parse_call(std::move(expression));
      } else {
        return expression;
      }
    }
  }

  // `x is divisibleby 3`, `x is sameas none`: one argument without parentheses.
  bool starts_test_argument() const {
    const Token& token = current();
    if (token.kind == TokenKind::name) {
      return token.text != "else" && token.text != "or" && token.text != "and" && token.text != "if" &&
             token.text != "in" && token.text != "not" && token.text != "is";
    }
    return token.kind == TokenKind::string || token.kind == TokenKind::integer || token.kind == TokenKind::floating ||
           is_op("[") || is_op("{");
  }

  bool starts_expression() const {
    const Token& token = current();
    return token.kind == TokenKind::name || token.kind == TokenKind::string || token.kind == TokenKind::integer ||
           token.kind == TokenKind::floating || is_op("(") || is_op("[") || is_op("{") || is_op("-") || is_op("+");
  }

  // --- tokens ---------------------------------------------------------------------------------

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

  static std::string quoted(const Token& token) { return "'" + describe_token(token) + "'"; }

  [[noreturn]] void fail(const Token& token, const std::string& message) const {
    throw JinjaSyntaxError(where_, token.line, message);
  }

  const std::vector<Token>& tokens_;
  const std::string& where_;
  std::size_t pos_ = 0;
  int loop_depth_ = 0;
  std::vector<std::pair<std::string, std::string>> open_blocks_;  // (the end tags wanted, the block)
};

}  // namespace

Body parse_template(const std::vector<Token>& tokens, const std::string& where) { return Parser(tokens, where).run(); }

}  // namespace pagedllm::chat::jinja
