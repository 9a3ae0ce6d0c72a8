// Runs a parsed template: statements write text, expressions compute Values, with jinja2's
// scoping (a for loop's body and a macro's body get scopes of their own, each iteration afresh;
// if and set do not; namespace() carries values out of loops).
#pragma once

#include <deque>
#include <string>

#include "core/chat/jinja/ast.h"
#include "core/chat/jinja/value.h"

namespace pagedllm::chat::jinja {

// Variables of one scope; a lookup walks out to the enclosing scopes.
class Scope {
 public:
  explicit Scope(const Scope* parent) : parent_(parent) {}
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value value);

 private:
  const Scope* parent_;
  ValueDict variables_;
};

class Evaluator {
 public:
  // `where` names the template in errors ("chat template").
  explicit Evaluator(std::string where) : where_(std::move(where)) {}

  // Renders `body` with `variables` (and the builtins) in the outermost scope. Throws
  // JinjaRuntimeError with the line of the failing expression, or TemplateRaisedError.
  std::string render(const Body& body, const ValueDict& variables);

 private:
  enum class Flow { normal, break_loop, continue_loop };

  Flow execute(const Body& body, Scope& scope, std::string& out);
  Flow execute(const Statement& statement, Scope& scope, std::string& out);
  void execute_for(const ForStmt& loop, int line, Scope& scope, std::string& out);
  void execute_set(const SetStmt& set, int line, Scope& scope);
  Value make_macro(const MacroStmt& macro, Scope& scope);
  Value call_macro(const MacroStmt& macro, const Scope& defining, CallArguments& arguments);
  // A macro's parameters bound in a new scope under `defining`; `caller` is taken as given.
  Scope& bind_parameters(const std::string& name, const std::vector<MacroParameter>& parameters, const Scope& defining,
                         CallArguments& arguments);
  std::string execute_call_block(const CallBlockStmt& call, Scope& scope);
  std::string render_macro_body(const std::string& name, const Body& body, Scope& scope);

  Value evaluate(const Expression& expression, Scope& scope);
  Value evaluate_node(const Expression& expression, Scope& scope);
  CallArguments evaluate_arguments(const std::vector<Argument>& arguments, Scope& scope);
  void assign(Scope& scope, const std::vector<std::string>& targets, const Value& value, int line);

  Scope& new_scope(const Scope* parent);
  [[noreturn]] void fail(int line, const std::string& message) const;

  std::string where_;
  std::deque<Scope> scopes_;  // every scope of this render; macros keep pointers to theirs
  int call_depth_ = 0;
};

}  // namespace pagedllm::chat::jinja
