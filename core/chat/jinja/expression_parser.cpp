#include "core/chat/jinja/expression_parser.h"

#include "core/chat/jinja/filters.h"
#include "core/chat/jinja/predicates.h"

namespace pagedllm::chat::jinja {

// Comma-separated expressions: one alone is itself, more (or a trailing comma) a tuple.
ExpressionPtr ExpressionParser::parse_tuple(bool with_conditional) {
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

ExpressionPtr ExpressionParser::parse_expression(bool with_conditional) {
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

ExpressionPtr ExpressionParser::binary(int line, std::string op, ExpressionPtr left, ExpressionPtr right) {
  return make(line, BinaryExpr{std::move(op), std::move(left), std::move(right)});
}

ExpressionPtr ExpressionParser::parse_or() {
  ExpressionPtr left = parse_and();
  while (is_name("or")) {
    const int line = current().line;
    next();
    left = binary(line, "or", std::move(left), parse_and());
  }
  return left;
}

ExpressionPtr ExpressionParser::parse_and() {
  ExpressionPtr left = parse_not();
  while (is_name("and")) {
    const int line = current().line;
    next();
    left = binary(line, "and", std::move(left), parse_not());
  }
  return left;
}

ExpressionPtr ExpressionParser::parse_not() {
  if (is_name("not")) {
    const int line = current().line;
    next();
    return make(line, UnaryExpr{"not", parse_not()});
  }
  return parse_compare();
}

ExpressionPtr ExpressionParser::parse_compare() {
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

ExpressionPtr ExpressionParser::parse_math1() {
  ExpressionPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token op = current();
    next();
    left = binary(op.line, op.text, std::move(left), parse_concat());
  }
  return left;
}

ExpressionPtr ExpressionParser::parse_concat() {
  ExpressionPtr left = parse_math2();
  while (is_op("~")) {
    const int line = current().line;
    next();
    left = binary(line, "~", std::move(left), parse_math2());
  }
  return left;
}

ExpressionPtr ExpressionParser::parse_math2() {
  ExpressionPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token op = current();
    next();
    left = binary(op.line, op.text, std::move(left), parse_pow());
  }
  return left;
}

ExpressionPtr ExpressionParser::parse_pow() {
  ExpressionPtr left = parse_unary(true);
  while (is_op("**")) {
    const int line = current().line;
    next();
    left = binary(line, "**", std::move(left), parse_unary(true));
  }
  return left;
}

ExpressionPtr ExpressionParser::parse_unary(bool with_filter) {
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

ExpressionPtr ExpressionParser::parse_primary() {
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

ExpressionPtr ExpressionParser::parse_postfix(ExpressionPtr expression) {
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

ExpressionPtr ExpressionParser::parse_subscript(int line, ExpressionPtr object) {
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

std::vector<Argument> ExpressionParser::parse_arguments() {
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

ExpressionPtr ExpressionParser::parse_call(ExpressionPtr callee) {
  const int line = current().line;
  return make(line, CallExpr{std::move(callee), parse_arguments()});
}

ExpressionPtr ExpressionParser::parse_filters(ExpressionPtr expression) {
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
bool ExpressionParser::starts_test_argument() const {
  const Token& token = current();
  if (token.kind == TokenKind::name) {
    return token.text != "else" && token.text != "or" && token.text != "and" && token.text != "if" &&
           token.text != "in" && token.text != "not" && token.text != "is";
  }
  return token.kind == TokenKind::string || token.kind == TokenKind::integer || token.kind == TokenKind::floating ||
         is_op("[") || is_op("{");
}

bool ExpressionParser::starts_expression() const {
  const Token& token = current();
  return token.kind == TokenKind::name || token.kind == TokenKind::string || token.kind == TokenKind::integer ||
         token.kind == TokenKind::floating || is_op("(") || is_op("[") || is_op("{") || is_op("-") || is_op("+");
}

}  // namespace pagedllm::chat::jinja
