#include "core/chat/jinja/evaluator.h"

#include <memory>

#include "core/chat/chat_errors.h"
#include "core/chat/jinja/builtins.h"
#include "core/chat/jinja/failure.h"
#include "core/chat/jinja/filters.h"
#include "core/chat/jinja/operators.h"
#include "core/chat/jinja/predicates.h"

namespace pagedllm::chat::jinja {
namespace {

constexpr int kMaxCallDepth = 200;  // macros calling macros; deeper is a runaway recursion

template <typename... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
// C++20 deduces this for aggregates; clang before 17 (the asan build's) needs it written.
template <typename... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// The `loop` variable of one iteration.
Value loop_value(const ValueList& items, std::size_t i) {
  const std::size_t n = items.size();
  ValueDict loop;
  loop.emplace_back("index", Value(i + 1));
  loop.emplace_back("index0", Value(i));
  loop.emplace_back("revindex", Value(n - i));
  loop.emplace_back("revindex0", Value(n - i - 1));
  loop.emplace_back("first", Value(i == 0));
  loop.emplace_back("last", Value(i + 1 == n));
  loop.emplace_back("length", Value(n));
  loop.emplace_back("depth", Value(1));
  loop.emplace_back("depth0", Value(0));
  loop.emplace_back("previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
  loop.emplace_back("nextitem", i + 1 < n ? items[i + 1] : Value::undefined("there is no next item"));
  loop.emplace_back("cycle", Value("loop.cycle", [i](CallArguments& arguments) {
                      if (arguments.positional.empty()) throw Failure("no items for cycling given");
                      return arguments.positional[i % arguments.positional.size()];
                    }));
  return Value(std::move(loop));
}

}  // namespace

const Value* Scope::find(const std::string& name) const {
  for (const Scope* scope = this; scope != nullptr; scope = scope->parent_) {
    for (const auto& [key, value] : scope->variables_) {
      if (key == name) return &value;
    }
  }
  return nullptr;
}

void Scope::set(const std::string& name, Value value) {
  for (auto& [key, held] : variables_) {
    if (key == name) {
      held = std::move(value);
      return;
    }
  }
  variables_.emplace_back(name, std::move(value));
}

Scope& Evaluator::new_scope(const Scope* parent) { return scopes_.emplace_back(parent); }

void Evaluator::fail(int line, const std::string& message) const { throw JinjaRuntimeError(where_, line, message); }

std::string Evaluator::render(const Body& body, const ValueDict& variables) {
  Scope& globals = new_scope(nullptr);
  for (auto& [name, value] : builtin_globals()) globals.set(name, std::move(value));
  Scope& root = new_scope(&globals);
  for (const auto& [name, value] : variables) root.set(name, value);
  std::string out;
  execute(body, root, out);
  scopes_.clear();
  return out;
}

Evaluator::Flow Evaluator::execute(const Body& body, Scope& scope, std::string& out) {
  for (const Statement& statement : body) {
    const Flow flow = execute(statement, scope, out);
    if (flow != Flow::normal) return flow;
  }
  return Flow::normal;
}

Evaluator::Flow Evaluator::execute(const Statement& statement, Scope& scope, std::string& out) {
  const int line = statement.line;
  return std::visit(Overloaded{
                        [&](const TextStmt& text) {
                          out += text.text;
                          return Flow::normal;
                        },
                        [&](const OutputStmt& output) {
                          out += evaluate(*output.expression, scope).str();
                          return Flow::normal;
                        },
                        [&](const IfStmt& branches) {
                          for (const auto& [condition, body] : branches.branches) {
                            if (evaluate(*condition, scope).truthy()) return execute(body, scope, out);
                          }
                          return execute(branches.otherwise, scope, out);
                        },
                        [&](const ForStmt& loop) {
                          execute_for(loop, line, scope, out);
                          return Flow::normal;
                        },
                        [&](const SetStmt& set) {
                          execute_set(set, line, scope);
                          return Flow::normal;
                        },
                        [&](const MacroStmt& macro) {
                          scope.set(macro.name, make_macro(macro, scope));
                          return Flow::normal;
                        },
                        [&](const CallBlockStmt& call) {
                          out += execute_call_block(call, scope);
                          return Flow::normal;
                        },
                        [&](const BreakStmt&) { return Flow::break_loop; },
                        [&](const ContinueStmt&) { return Flow::continue_loop; },
                    },
                    statement.node);
}

void Evaluator::execute_for(const ForStmt& loop, int line, Scope& scope, std::string& out) {
  const Value iterable = evaluate(*loop.iterable, scope);
  ValueList items;
  try {
    items = iterate(iterable);
  } catch (const Failure& failure) {
    fail(line, failure.what());
  }
  if (loop.condition) {  // `for x in xs if c`: the loop sees only the items that pass
    ValueList kept;
    for (const Value& item : items) {
      Scope& filter_scope = new_scope(&scope);
      assign(filter_scope, loop.targets, item, line);
      if (evaluate(*loop.condition, filter_scope).truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    Scope& iteration = new_scope(&scope);
    iteration.set("loop", loop_value(items, i));
    assign(iteration, loop.targets, items[i], line);
    if (execute(loop.body, iteration, out) == Flow::break_loop) break;
  }
  if (items.empty()) execute(loop.otherwise, scope, out);
}

void Evaluator::assign(Scope& scope, const std::vector<std::string>& targets, const Value& value, int line) {
  if (targets.size() == 1) {
    scope.set(targets[0], value);
    return;
  }
  ValueList parts;
  try {
    parts = iterate(value);
  } catch (const Failure& failure) {
    fail(line, "cannot unpack non-iterable " + value.type_name() + " object");
  }
  if (parts.size() != targets.size()) {
    fail(line, parts.size() > targets.size()
                   ? "too many values to unpack (expected " + std::to_string(targets.size()) + ")"
                   : "not enough values to unpack (expected " + std::to_string(targets.size()) + ", got " +
                         std::to_string(parts.size()) + ")");
  }
  for (std::size_t i = 0; i < targets.size(); ++i) scope.set(targets[i], parts[i]);
}

void Evaluator::execute_set(const SetStmt& set, int line, Scope& scope) {
  Value value;
  if (set.value) {
    value = evaluate(*set.value, scope);
  } else {
    std::string text;
    Scope& block = new_scope(&scope);
    execute(set.body, block, text);
    value = Value(std::move(text));
  }
  if (set.attribute.empty()) {
    assign(scope, set.targets, value, line);
    return;
  }
  const Value* target = scope.find(set.targets[0]);
  if (target == nullptr || !target->is_namespace()) fail(line, "cannot assign attribute on non-namespace object");
  for (auto& [key, held] : target->as_namespace().attributes) {
    if (key == set.attribute) {
      held = value;
      return;
    }
  }
  target->as_namespace().attributes.emplace_back(set.attribute, value);
}

Value Evaluator::make_macro(const MacroStmt& macro, Scope& scope) {
  const Scope* defining = &scope;
  return Value(macro.name,
               [this, &macro, defining](CallArguments& arguments) { return call_macro(macro, *defining, arguments); });
}

Scope& Evaluator::bind_parameters(const std::string& name, const std::vector<MacroParameter>& parameters,
                                  const Scope& defining, CallArguments& arguments) {
  if (arguments.positional.size() > parameters.size()) {
    throw Failure("macro '" + name + "' takes not more than " + std::to_string(parameters.size()) + " argument(s)");
  }
  Scope& scope = new_scope(&defining);
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const MacroParameter& parameter = parameters[i];
    Value value = i < arguments.positional.size() ? arguments.positional[i] : Value();
    for (const auto& [keyword, given] : arguments.keyword) {
      if (keyword == parameter.name) value = given;
    }
    if (value.is_undefined()) {
      value = parameter.default_value ? evaluate(*parameter.default_value, scope)
                                      : Value::undefined("parameter '" + parameter.name + "' was not provided");
    }
    scope.set(parameter.name, std::move(value));
  }
  for (const auto& [keyword, given] : arguments.keyword) {
    bool known = keyword == "caller";  // from a {% call %} block
    for (const MacroParameter& parameter : parameters) known = known || parameter.name == keyword;
    if (!known) throw Failure("macro '" + name + "' takes no keyword argument '" + keyword + "'");
    if (keyword == "caller") scope.set("caller", given);
  }
  return scope;
}

std::string Evaluator::render_macro_body(const std::string& name, const Body& body, Scope& scope) {
  if (call_depth_ >= kMaxCallDepth) throw Failure("macro '" + name + "': calls nested too deeply");
  ++call_depth_;
  std::string out;
  try {
    execute(body, scope, out);
  } catch (...) {
    --call_depth_;
    throw;
  }
  --call_depth_;
  return out;
}

Value Evaluator::call_macro(const MacroStmt& macro, const Scope& defining, CallArguments& arguments) {
  Scope& scope = bind_parameters(macro.name, macro.parameters, defining, arguments);
  return Value(render_macro_body(macro.name, macro.body, scope));
}

std::string Evaluator::execute_call_block(const CallBlockStmt& call, Scope& scope) {
  const CallExpr& expression = std::get<CallExpr>(call.call->node);
  const Scope* defining = &scope;
  Value caller("caller", [this, &call, defining](CallArguments& arguments) {
    Scope& body_scope = bind_parameters("caller", call.parameters, *defining, arguments);
    return Value(render_macro_body("caller", call.body, body_scope));
  });
  try {
    const Value callee = evaluate(*expression.callee, scope);
    require_defined(callee);
    if (!callee.is_function()) throw Failure("'" + callee.type_name() + "' object is not callable");
    CallArguments arguments = evaluate_arguments(expression.arguments, scope);
    arguments.keyword.emplace_back("caller", std::move(caller));
    return callee.as_function().call(arguments).str();
  } catch (const Failure& failure) {
    fail(call.call->line, failure.what());
  }
}

CallArguments Evaluator::evaluate_arguments(const std::vector<Argument>& arguments, Scope& scope) {
  CallArguments values;
  for (const Argument& argument : arguments) {
    if (argument.keyword.empty()) {
      values.positional.push_back(evaluate(*argument.value, scope));
    } else {
      values.keyword.emplace_back(argument.keyword, evaluate(*argument.value, scope));
    }
  }
  return values;
}

Value Evaluator::evaluate(const Expression& expression, Scope& scope) {
  try {
    return evaluate_node(expression, scope);
  } catch (const Failure& failure) {
    fail(expression.line, failure.what());
  } catch (const RaisedByTemplate& raised) {
    throw TemplateRaisedError(raised.what(), expression.line);
  }
}

Value Evaluator::evaluate_node(const Expression& expression, Scope& scope) {
  return std::visit(
      Overloaded{
          [&](const LiteralExpr& literal) { return literal.value; },
          [&](const NameExpr& name) {
            const Value* value = scope.find(name.name);
            return value != nullptr ? *value : Value::undefined("'" + name.name + "' is undefined");
          },
          [&](const ListExpr& list) {
            ValueList items;
            for (const ExpressionPtr& item : list.items) items.push_back(evaluate(*item, scope));
            return Value(std::move(items), list.is_tuple);
          },
          [&](const DictExpr& dict) {
            ValueDict entries;
            for (const auto& [key_expression, value_expression] : dict.entries) {
              const Value key = evaluate(*key_expression, scope);
              if (!key.is_string()) throw Failure("dict keys must be strings, got " + key.type_name());
              Value value = evaluate(*value_expression, scope);
              bool replaced = false;
              for (auto& entry : entries) {
                if (entry.first == key.as_string()) {
                  entry.second = value;
                  replaced = true;
                }
              }
              if (!replaced) entries.emplace_back(key.as_string(), std::move(value));
            }
            return Value(std::move(entries));
          },
          [&](const AttributeExpr& attribute) {
            return get_attribute(evaluate(*attribute.object, scope), attribute.name);
          },
          [&](const ItemExpr& item) { return get_item(evaluate(*item.object, scope), evaluate(*item.index, scope)); },
          [&](const SliceExpr& part) {
            const auto bound = [&](const ExpressionPtr& e) { return e ? evaluate(*e, scope) : Value(None{}); };
            return slice(evaluate(*part.object, scope), bound(part.start), bound(part.stop), bound(part.step));
          },
          [&](const UnaryExpr& unary) {
            const Value operand = evaluate(*unary.operand, scope);
            if (unary.op == "not") return Value(!operand.truthy());
            if (unary.op == "-") return negate(operand);
            require_defined(operand);
            return operand;
          },
          [&](const BinaryExpr& binary) {
            const Value left = evaluate(*binary.left, scope);
            if (binary.op == "and") return left.truthy() ? evaluate(*binary.right, scope) : left;
            if (binary.op == "or") return left.truthy() ? left : evaluate(*binary.right, scope);
            return binary_operation(binary.op, left, evaluate(*binary.right, scope));
          },
          [&](const ConditionalExpr& conditional) {
            if (evaluate(*conditional.condition, scope).truthy()) return evaluate(*conditional.then, scope);
            if (conditional.otherwise) return evaluate(*conditional.otherwise, scope);
            return Value::undefined("the inline if-expression on line " + std::to_string(expression.line) +
                                    " evaluated to false and no else section was defined.");
          },
          [&](const CallExpr& call) {
            const Value callee = evaluate(*call.callee, scope);
            require_defined(callee);
            if (!callee.is_function()) throw Failure("'" + callee.type_name() + "' object is not callable");
            CallArguments arguments = evaluate_arguments(call.arguments, scope);
            return callee.as_function().call(arguments);
          },
          [&](const FilterExpr& filter) {
            const Value operand = evaluate(*filter.operand, scope);
            return apply_filter(filter.name, operand, evaluate_arguments(filter.arguments, scope));
          },
          [&](const TestExpr& test) {
            const Value operand = evaluate(*test.operand, scope);
            const bool passed = apply_test(test.name, operand, evaluate_arguments(test.arguments, scope));
            return Value(passed != test.negated);
          },
      },
      expression.node);
}

}  // namespace pagedllm::chat::jinja
