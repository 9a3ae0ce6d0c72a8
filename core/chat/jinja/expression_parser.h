// Parsing Jinja expressions, with jinja2's precedence (lowest first): conditional `a if c else
// b`, or, and, not, comparisons and `in`, + -, ~, * / // %, **, unary - +, then a primary with
// its postfixes (.name, [index], [a:b:c], calls) and its filters and tests, which bind tighter
// than arithmetic: `a + b | trim` is `a + (b | trim)`. Internal to the parser.
#pragma once

#include <string>
#include <vector>

#include "core/chat/jinja/ast.h"
#include "core/chat/jinja/token_stream.h"

namespace pagedllm::chat::jinja {

class ExpressionParser : protected TokenStream {
 public:
  using TokenStream::TokenStream;

 protected:
  // Comma-separated expressions: one alone is itself, more (or a trailing comma) a tuple.
  ExpressionPtr parse_tuple(bool with_conditional);
  ExpressionPtr parse_expression(bool with_conditional);
  bool starts_expression() const;

 private:
  ExpressionPtr make(int line, auto node) {
    auto expression = std::make_unique<Expression>();
    expression->line = line;
    expression->node = std::move(node);
    return expression;
  }
  ExpressionPtr binary(int line, std::string op, ExpressionPtr left, ExpressionPtr right);
  ExpressionPtr parse_or();
  ExpressionPtr parse_and();
  ExpressionPtr parse_not();
  ExpressionPtr parse_compare();
  ExpressionPtr parse_math1();
  ExpressionPtr parse_concat();
  ExpressionPtr parse_math2();
  ExpressionPtr parse_pow();
  ExpressionPtr parse_unary(bool with_filter);
  ExpressionPtr parse_primary();
  ExpressionPtr parse_postfix(ExpressionPtr expression);
  ExpressionPtr parse_subscript(int line, ExpressionPtr object);
  std::vector<Argument> parse_arguments();
  ExpressionPtr parse_call(ExpressionPtr callee);
  ExpressionPtr parse_filters(ExpressionPtr expression);
  bool starts_test_argument() const;
};

}  // namespace pagedllm::chat::jinja
