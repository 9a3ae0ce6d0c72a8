#include "core/chat/jinja/predicates.h"

#include <functional>
#include <map>

#include "core/chat/jinja/arguments.h"
#include "core/chat/jinja/failure.h"
#include "core/chat/jinja/operators.h"
#include "core/chat/jinja/python_text.h"

namespace pagedllm::chat::jinja {
namespace {

using Test = std::function<bool(const Value&, const CallArguments&)>;

Value other(const CallArguments& arguments, const std::string& name) {
  return bind_arguments(arguments, {"other"}, name)[0];
}

Test comparison(const std::string& op) {
  return [op](const Value& value, const CallArguments& arguments) {
    return binary_operation(op, value, other(arguments, op)).truthy();
  };
}

const std::map<std::string, Test>& tests() {
  static const std::map<std::string, Test> table = {
      {"defined", [](const Value& v, const CallArguments&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const CallArguments&) { return v.is_undefined(); }},
      {"none", [](const Value& v, const CallArguments&) { return v.is_none(); }},
      {"boolean", [](const Value& v, const CallArguments&) { return v.is_bool(); }},
      {"true", [](const Value& v, const CallArguments&) { return v.is_bool() && v.as_bool(); }},
      {"false", [](const Value& v, const CallArguments&) { return v.is_bool() && !v.as_bool(); }},
      {"integer", [](const Value& v, const CallArguments&) { return v.is_int(); }},
      {"float", [](const Value& v, const CallArguments&) { return v.is_float(); }},
      {"number", [](const Value& v, const CallArguments&) { return v.is_number(); }},
      {"string", [](const Value& v, const CallArguments&) { return v.is_string(); }},
      {"mapping", [](const Value& v, const CallArguments&) { return v.is_dict(); }},
      {"sequence", [](const Value& v, const CallArguments&) { return v.is_list() || v.is_string() || v.is_dict(); }},
      {"iterable",
       [](const Value& v, const CallArguments&) {
         return v.is_list() || v.is_string() || v.is_dict() || v.is_undefined();
       }},
      {"callable", [](const Value& v, const CallArguments&) { return v.is_function(); }},
      {"lower", [](const Value& v,
                   const CallArguments&) { return v.is_string() && python_lower(v.as_string()) == v.as_string(); }},
      {"upper", [](const Value& v,
                   const CallArguments&) { return v.is_string() && python_upper(v.as_string()) == v.as_string(); }},
      {"odd", [](const Value& v, const CallArguments&) { return binary_operation("%", v, Value(2)).as_int() == 1; }},
      {"even", [](const Value& v, const CallArguments&) { return binary_operation("%", v, Value(2)).as_int() == 0; }},
      {"divisibleby",
       [](const Value& v, const CallArguments& a) {
         return binary_operation("%", v, bind_arguments(a, {"num"}, "divisibleby")[0]).as_int() == 0;
       }},
      {"sameas",
       [](const Value& v, const CallArguments& a) {
         const Value o = other(a, "sameas");
         return (v.is_none() && o.is_none()) || (v.is_bool() && o.is_bool() && v.as_bool() == o.as_bool());
       }},
      {"in",
       [](const Value& v, const CallArguments& a) {
         return binary_operation("in", v, bind_arguments(a, {"seq"}, "in")[0]).truthy();
       }},
      {"eq", comparison("==")},
      {"equalto", comparison("==")},
      {"==", comparison("==")},
      {"ne", comparison("!=")},
      {"!=", comparison("!=")},
      {"lt", comparison("<")},
      {"lessthan", comparison("<")},
      {"<", comparison("<")},
      {"le", comparison("<=")},
      {"<=", comparison("<=")},
      {"gt", comparison(">")},
      {"greaterthan", comparison(">")},
      {">", comparison(">")},
      {"ge", comparison(">=")},
      {">=", comparison(">=")},
  };
  return table;
}

}  // namespace

bool has_test(const std::string& name) { return tests().count(name) != 0; }

bool apply_test(const std::string& name, const Value& operand, const CallArguments& arguments) {
  const auto found = tests().find(name);
  if (found == tests().end()) throw Failure("No test named '" + name + "'.");
  return found->second(operand, arguments);
}

}  // namespace pagedllm::chat::jinja
