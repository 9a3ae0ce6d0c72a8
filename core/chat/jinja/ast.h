// The syntax tree of a Jinja template: expressions and statements, each with its source line.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/chat/jinja/value.h"

namespace pagedllm::chat::jinja {

struct Expression;
using ExpressionPtr = std::unique_ptr<Expression>;

struct Argument {
  std::string keyword;  // empty: positional
  ExpressionPtr value;
};

struct LiteralExpr {
  Value value;
};
struct NameExpr {
  std::string name;
};
struct ListExpr {
  std::vector<ExpressionPtr> items;
  bool is_tuple = false;
};
struct DictExpr {
  std::vector<std::pair<ExpressionPtr, ExpressionPtr>> entries;
};
struct AttributeExpr {  // object.name
  ExpressionPtr object;
  std::string name;
};
struct ItemExpr {  // object[index]
  ExpressionPtr object;
  ExpressionPtr index;
};
struct SliceExpr {  // object[start:stop:step], each part optional
  ExpressionPtr object;
  ExpressionPtr start;
  ExpressionPtr stop;
  ExpressionPtr step;
};
struct UnaryExpr {
  std::string op;  // "not", "-", "+"
  ExpressionPtr operand;
};
struct BinaryExpr {
  std::string op;  // or and == != < <= > >= in "not in" + - * / // % ** ~
  ExpressionPtr left;
  ExpressionPtr right;
};
struct ConditionalExpr {  // then if condition else otherwise (otherwise may be absent)
  ExpressionPtr condition;
  ExpressionPtr then;
  ExpressionPtr otherwise;
};
struct CallExpr {
  ExpressionPtr callee;
  std::vector<Argument> arguments;
};
struct FilterExpr {  // operand | name(arguments)
  ExpressionPtr operand;
  std::string name;
  std::vector<Argument> arguments;
};
struct TestExpr {  // operand is [not] name(arguments)
  ExpressionPtr operand;
  std::string name;
  std::vector<Argument> arguments;
  bool negated = false;
};

struct Expression {
  int line = 0;
  std::variant<LiteralExpr, NameExpr, ListExpr, DictExpr, AttributeExpr, ItemExpr, SliceExpr, UnaryExpr, BinaryExpr,
               ConditionalExpr, CallExpr, FilterExpr, TestExpr>
      node;
};

struct Statement;
using Body = std::vector<Statement>;

struct TextStmt {
  std::string text;
};
struct OutputStmt {  // {{ expression }}
  ExpressionPtr expression;
};
struct IfStmt {
  std::vector<std::pair<ExpressionPtr, Body>> branches;  // if, then each elif
  Body otherwise;
};
struct ForStmt {
  std::vector<std::string> targets;  // one name, or names to unpack each item into
  ExpressionPtr iterable;
  ExpressionPtr condition;  // `for x in xs if condition`; may be null
  Body body;
  Body otherwise;  // runs when nothing was iterated
};
// {% set name = value %}, {% set a, b = value %}, {% set ns.attribute = value %}, or the block
// form {% set name %}body{% endset %}.
struct SetStmt {
  std::vector<std::string> targets;
  std::string attribute;  // non-empty: targets[0] is a namespace, set this attribute of it
  ExpressionPtr value;    // null in the block form
  Body body;
};
struct MacroParameter {
  std::string name;
  ExpressionPtr default_value;  // may be null
};
struct MacroStmt {
  std::string name;
  std::vector<MacroParameter> parameters;
  Body body;
};
// {% call(params) macro(args) %}body{% endcall %}: calls the macro with `caller`, a macro
// rendering the body.
struct CallBlockStmt {
  std::vector<MacroParameter> parameters;
  ExpressionPtr call;  // a CallExpr
  Body body;
};
struct BreakStmt {};
struct ContinueStmt {};

struct Statement {
  int line = 0;
  std::variant<TextStmt, OutputStmt, IfStmt, ForStmt, SetStmt, MacroStmt, CallBlockStmt, BreakStmt, ContinueStmt> node;
};

}  // namespace pagedllm::chat::jinja
