// The values a Jinja template computes with, with Python's semantics where templates rely on them
// (truthiness, equality, str() and repr(), dicts that keep insertion order).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace pagedllm::chat::jinja {

class Value;
struct CallArguments;

using ValueList = std::vector<Value>;
// A dict in insertion order (Python's); templates' dicts are small, so lookups are linear.
using ValueDict = std::vector<std::pair<std::string, Value>>;
using NativeFunction = std::function<Value(CallArguments&)>;

// jinja2's Undefined: what a missing name, key or attribute evaluates to. It renders as "", is
// false and iterates as empty; most other uses raise UndefinedError with `hint`.
struct Undefined {
  std::string hint;  // "'x' is undefined", "'dict object' has no attribute 'x'"
};

struct None {};

struct List {
  ValueList items;
  bool is_tuple = false;  // printed as (a, b)
};

// namespace(): the one mutable object templates have ({% set ns.x = ... %}).
struct Namespace {
  ValueDict attributes;
};

struct Function {
  std::string name;
  NativeFunction call;
};

class Value {
 public:
  using Storage =
      std::variant<Undefined, None, bool, std::int64_t, double, std::string, std::shared_ptr<const List>,
                   std::shared_ptr<const ValueDict>, std::shared_ptr<Namespace>, std::shared_ptr<const Function>>;

  Value() : storage_(Undefined{}) {}
  Value(None) : storage_(None{}) {}
  Value(bool value) : storage_(value) {}
  Value(int value) : storage_(std::int64_t{value}) {}
  Value(std::int64_t value) : storage_(value) {}
  Value(std::size_t value) : storage_(static_cast<std::int64_t>(value)) {}
  Value(double value) : storage_(value) {}
  Value(std::string value) : storage_(std::move(value)) {}
  Value(std::string_view value) : storage_(std::string(value)) {}
  Value(const char* value) : storage_(std::string(value)) {}
  Value(ValueList items, bool is_tuple = false)
      : storage_(std::make_shared<const List>(List{std::move(items), is_tuple})) {}
  Value(ValueDict entries) : storage_(std::make_shared<const ValueDict>(std::move(entries))) {}
  Value(std::shared_ptr<Namespace> ns) : storage_(std::move(ns)) {}
  Value(std::string name, NativeFunction call)
      : storage_(std::make_shared<const Function>(Function{std::move(name), std::move(call)})) {}

  static Value undefined(std::string hint) { return Value(Storage(Undefined{std::move(hint)})); }
  static Value from_json(const nlohmann::ordered_json& json);
  static Value from_json(const nlohmann::json& json);

  bool is_undefined() const { return std::holds_alternative<Undefined>(storage_); }
  bool is_none() const { return std::holds_alternative<None>(storage_); }
  bool is_bool() const { return std::holds_alternative<bool>(storage_); }
  bool is_int() const { return std::holds_alternative<std::int64_t>(storage_); }
  bool is_float() const { return std::holds_alternative<double>(storage_); }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
  bool is_string() const { return std::holds_alternative<std::string>(storage_); }
  bool is_list() const { return std::holds_alternative<std::shared_ptr<const List>>(storage_); }
  bool is_dict() const { return std::holds_alternative<std::shared_ptr<const ValueDict>>(storage_); }
  bool is_namespace() const { return std::holds_alternative<std::shared_ptr<Namespace>>(storage_); }
  bool is_function() const { return std::holds_alternative<std::shared_ptr<const Function>>(storage_); }

  bool as_bool() const { return std::get<bool>(storage_); }
  std::int64_t as_int() const;  // ints and bools
  double as_double() const;     // any number
  const std::string& as_string() const { return std::get<std::string>(storage_); }
  const ValueList& as_list() const { return std::get<std::shared_ptr<const List>>(storage_)->items; }
  bool is_tuple() const { return is_list() && std::get<std::shared_ptr<const List>>(storage_)->is_tuple; }
  const ValueDict& as_dict() const { return *std::get<std::shared_ptr<const ValueDict>>(storage_); }
  Namespace& as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(storage_); }
  const Function& as_function() const { return *std::get<std::shared_ptr<const Function>>(storage_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(storage_).hint; }

  // The dict's value for `key`, or nullptr.
  const Value* find(std::string_view key) const;

  // Python's bool(); an undefined value is false.
  bool truthy() const;
  // Python's ==, as Jinja compares (1 == 1.0 == True; lists and dicts deeply).
  friend bool operator==(const Value& a, const Value& b);
  // Python's str() (what {{ value }} prints; undefined prints as "") and repr().
  std::string str() const;
  std::string repr() const;
  // Python's type name, as jinja2's messages quote it: 'dict object', 'list object', None.
  std::string type_description() const;
  std::string type_name() const;  // "dict", "str", "int", "NoneType", ...

  nlohmann::ordered_json to_json() const;  // throws std::invalid_argument naming the type

 private:
  explicit Value(Storage storage) : storage_(std::move(storage)) {}
  Storage storage_;
};

// The arguments of a call: positional, then keyword, in the order written.
struct CallArguments {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Python float repr: shortest round trip, "1.0", "1e-05", "1e+16", "inf", "nan".
std::string python_float_repr(double value);
// Python repr of a str: single quotes unless the text holds ' and no ".
std::string python_string_repr(std::string_view text);

}  // namespace pagedllm::chat::jinja
