#include "core/chat/jinja/operators.h"

#include <cmath>
#include <cstdio>
#include <string_view>

#include "core/chat/jinja/failure.h"
#include "core/chat/jinja/methods.h"
#include "core/chat/jinja/python_text.h"

namespace pagedllm::chat::jinja {
namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& left, const Value& right) {
  throw Failure("unsupported operand type(s) for " + op + ": '" + left.type_name() + "' and '" + right.type_name() +
                "'");
}

Value repeat(const Value& sequence, std::int64_t times) {
  // Python's bound is memory; ours is explicit, as jinja2's sandbox bounds range().
  constexpr std::int64_t kMaxRepeatedSize = std::int64_t{1} << 24;
  const auto size =
      static_cast<std::int64_t>(sequence.is_string() ? sequence.as_string().size() : sequence.as_list().size());
  if (times > 0 && size > 0 && times > kMaxRepeatedSize / size) {
    throw Failure("sequence repetition too large (the result would exceed 16 Mi elements)");
  }
  if (sequence.is_string()) {
    std::string out;
    for (std::int64_t i = 0; i < times; ++i) out += sequence.as_string();
    return Value(std::move(out));
  }
  ValueList out;
  for (std::int64_t i = 0; i < times; ++i) out.insert(out.end(), sequence.as_list().begin(), sequence.as_list().end());
  return Value(std::move(out), sequence.is_tuple());
}

// Python's ints are unbounded; ours are 64-bit, and an overflow is an error rather than a wrong
// number.
[[noreturn]] void integer_overflow() { throw Failure("integer overflow (pagedllm's template integers are 64-bit)"); }

std::int64_t checked_add(std::int64_t x, std::int64_t y) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(x, y, &sum)) integer_overflow();
  return sum;
}

std::int64_t checked_sub(std::int64_t x, std::int64_t y) {
  std::int64_t difference = 0;
  if (__builtin_sub_overflow(x, y, &difference)) integer_overflow();
  return difference;
}

std::int64_t checked_mul(std::int64_t x, std::int64_t y) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(x, y, &product)) integer_overflow();
  return product;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  const bool integers = !a.is_float() && !b.is_float();
  if (op == "+") return integers ? Value(checked_add(a.as_int(), b.as_int())) : Value(a.as_double() + b.as_double());
  if (op == "-") return integers ? Value(checked_sub(a.as_int(), b.as_int())) : Value(a.as_double() - b.as_double());
  if (op == "*") return integers ? Value(checked_mul(a.as_int(), b.as_int())) : Value(a.as_double() * b.as_double());
  if (op == "/") {
    if (b.as_double() == 0.0) throw Failure("division by zero");
    return Value(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (b.as_double() == 0.0) throw Failure(integers ? "integer division or modulo by zero" : "float modulo");
    if (integers) {
      // Python floors the quotient; the remainder takes the divisor's sign.
      const std::int64_t x = a.as_int(), y = b.as_int();
      if (y == -1) return op == "//" ? Value(checked_sub(0, x)) : Value(std::int64_t{0});  // INT64_MIN / -1 traps
      std::int64_t quotient = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) --quotient;
      return op == "//" ? Value(quotient) : Value(x - quotient * y);
    }
    const double x = a.as_double(), y = b.as_double();
    const double quotient = std::floor(x / y);
    return op == "//" ? Value(quotient) : Value(x - quotient * y);
  }
  // **
  if (integers && b.as_int() >= 0) {  // by squaring: the exponent's bits, not its value, bound the work
    std::int64_t power = 1;
    std::int64_t base = a.as_int();
    for (std::int64_t exponent = b.as_int(); exponent > 0; exponent >>= 1) {
      if (exponent & 1) power = checked_mul(power, base);
      if (exponent > 1) base = checked_mul(base, base);
    }
    return Value(power);
  }
  return Value(std::pow(a.as_double(), b.as_double()));
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) {
      throw Failure("'in <string>' requires string as left operand, not " + item.type_name());
    }
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_dict()) return item.is_string() && container.find(item.as_string()) != nullptr;
  if (container.is_namespace()) throw Failure("argument of type 'Namespace' is not iterable");
  for (const Value& element : iterate(container)) {
    if (element == item) return true;
  }
  return false;
}

std::int64_t normalise_index(std::int64_t index, std::size_t size) {
  return index < 0 ? index + static_cast<std::int64_t>(size) : index;
}

// One printf conversion, sized first.
template <typename T>
std::string c_format(const std::string& format, T value) {
  const int size = std::snprintf(nullptr, 0, format.c_str(), value);
  if (size < 0) throw Failure("bad format '" + format + "'");
  std::string out(static_cast<std::size_t>(size), '\0');
  std::snprintf(out.data(), out.size() + 1, format.c_str(), value);
  return out;
}

// Python's `text % values` for the conversions templates use: %s %r %d %i %f %% with optional
// flags, width and precision. `values` is a tuple of them, or one value.
std::string printf_format(const std::string& text, const Value& values) {
  const ValueList arguments = values.is_tuple() ? values.as_list() : ValueList{values};
  std::size_t next = 0;
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    const std::size_t spec_start = i + 1;
    std::size_t end = spec_start;
    while (end < text.size() && std::string_view("-+ 0#.123456789").find(text[end]) != std::string_view::npos) ++end;
    if (end >= text.size()) throw Failure("incomplete format");
    const char conversion = text[end];
    const std::string spec = text.substr(spec_start, end - spec_start);
    i = end;
    if (conversion == '%') {
      out += '%';
      continue;
    }
    if (std::string_view("srdif").find(conversion) == std::string_view::npos) {
      throw Failure(std::string("unsupported format character '") + conversion + "'");
    }
    if (next >= arguments.size()) throw Failure("not enough arguments for format string");
    const Value& argument = arguments[next++];
    require_defined(argument);
    if (conversion == 's' || conversion == 'r') {
      out += c_format("%" + spec + "s", (conversion == 's' ? argument.str() : argument.repr()).c_str());
    } else if (!argument.is_number()) {
      throw Failure(std::string("%") + conversion + " format: a real number is required, not " + argument.type_name());
    } else if (conversion == 'f') {
      out += c_format("%" + spec + "f", argument.as_double());
    } else {
      const auto integer =
          static_cast<long long>(argument.is_float() ? float_to_int(argument.as_double()) : argument.as_int());
      out += c_format("%" + spec + "lld", integer);
    }
  }
  if (next < arguments.size()) throw Failure("not all arguments converted during string formatting");
  return out;
}

}  // namespace

void require_defined(const Value& value) {
  if (value.is_undefined()) throw Failure(value.undefined_hint());
}

bool less_than(const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  if (a.is_number() && b.is_number()) {
    return a.is_float() || b.is_float() ? a.as_double() < b.as_double() : a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list()) {
    const ValueList& x = a.as_list();
    const ValueList& y = b.as_list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!(x[i] == y[i])) return less_than(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  throw Failure("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

Value binary_operation(const std::string& op, const Value& left, const Value& right) {
  if (op == "==") return Value(left == right);
  if (op == "!=") return Value(!(left == right));
  if (op == "~") return Value(left.str() + right.str());
  if (op == "in" || op == "not in") {
    require_defined(left);
    if (right.is_none()) throw Failure("argument of type 'NoneType' is not iterable");
    return Value(contains(right, left) == (op == "in"));
  }
  require_defined(left);
  require_defined(right);
  if (op == "<") return Value(less_than(left, right));
  if (op == ">") return Value(less_than(right, left));
  if (op == "<=") return Value(!less_than(right, left));
  if (op == ">=") return Value(!less_than(left, right));
  if (left.is_number() && right.is_number()) return arithmetic(op, left, right);
  if (op == "+") {
    if (left.is_string() && right.is_string()) return Value(left.as_string() + right.as_string());
    if (left.is_list() && right.is_list() && left.is_tuple() == right.is_tuple()) {
      ValueList items = left.as_list();
      items.insert(items.end(), right.as_list().begin(), right.as_list().end());
      return Value(std::move(items), left.is_tuple());
    }
    if (left.is_string() || (left.is_list() && !left.is_tuple())) {
      throw Failure("can only concatenate " + left.type_name() + " (not \"" + right.type_name() + "\") to " +
                    left.type_name());
    }
  }
  if (op == "%" && left.is_string()) return Value(printf_format(left.as_string(), right));
  if (op == "*") {
    if ((left.is_string() || left.is_list()) && right.is_int()) return repeat(left, right.as_int());
    if ((right.is_string() || right.is_list()) && left.is_int()) return repeat(right, left.as_int());
  }
  unsupported(op, left, right);
}

Value negate(const Value& operand) {
  require_defined(operand);
  if (operand.is_float()) return Value(-operand.as_double());
  if (operand.is_number()) return Value(checked_sub(0, operand.as_int()));
  throw Failure("bad operand type for unary -: '" + operand.type_name() + "'");
}

Value get_attribute(const Value& object, const std::string& name) {
  require_defined(object);
  if (std::optional<Value> method = find_method(object, name)) return *method;
  if (object.is_dict()) {
    if (const Value* value = object.find(name)) return *value;
  } else if (object.is_namespace()) {
    for (const auto& [key, value] : object.as_namespace().attributes) {
      if (key == name) return value;
    }
  }
  return Value::undefined(object.type_description() + " has no attribute '" + name + "'");
}

Value get_item(const Value& object, const Value& index) {
  require_defined(object);
  if (object.is_dict() && index.is_string()) {
    if (const Value* value = object.find(index.as_string())) return *value;
  } else if ((object.is_list() || object.is_string()) && index.is_number() && !index.is_float()) {
    if (object.is_list()) {
      const std::int64_t at = normalise_index(index.as_int(), object.as_list().size());
      if (at >= 0 && at < static_cast<std::int64_t>(object.as_list().size())) {
        return object.as_list()[static_cast<std::size_t>(at)];
      }
    } else {
      const std::vector<std::uint32_t> points = decode_utf8(object.as_string());
      const std::int64_t at = normalise_index(index.as_int(), points.size());
      if (at >= 0 && at < static_cast<std::int64_t>(points.size())) {
        return Value(encode_utf8({points[static_cast<std::size_t>(at)]}));
      }
    }
  }
  if (index.is_string()) {
    const Value attribute = get_attribute(object, index.as_string());
    if (!attribute.is_undefined()) return attribute;
    return Value::undefined(object.type_description() + " has no attribute '" + index.as_string() + "'");
  }
  return Value::undefined(object.type_description() + " has no element " + index.repr());
}

Value slice(const Value& object, const Value& start, const Value& stop, const Value& step) {
  require_defined(object);
  const auto integer_or_none = [](const Value& value) {
    if (!value.is_undefined() && !value.is_none() && (!value.is_number() || value.is_float())) {
      throw Failure("slice indices must be integers or None");
    }
    return value;
  };
  const Value first = integer_or_none(start), last = integer_or_none(stop), stride = integer_or_none(step);
  const std::int64_t step_by = stride.is_number() ? stride.as_int() : 1;
  if (step_by == 0) throw Failure("slice step cannot be zero");
  std::vector<std::uint32_t> points;
  const bool is_string = object.is_string();
  if (is_string) {
    points = decode_utf8(object.as_string());
  } else if (!object.is_list()) {
    throw Failure("'" + object.type_name() + "' object is not subscriptable");
  }
  const auto size = static_cast<std::int64_t>(is_string ? points.size() : object.as_list().size());
  // Python's slice.indices().
  const auto clamp = [&](const Value& bound, std::int64_t fallback) {
    if (!bound.is_number()) return fallback;
    std::int64_t at = bound.as_int();
    if (at < 0) at += size;
    if (at < 0) return step_by < 0 ? std::int64_t{-1} : std::int64_t{0};
    if (at >= size) return step_by < 0 ? size - 1 : size;
    return at;
  };
  const std::int64_t from = clamp(first, step_by < 0 ? size - 1 : 0);
  const std::int64_t to = clamp(last, step_by < 0 ? -1 : size);
  std::vector<std::size_t> picked;
  for (std::int64_t i = from; step_by > 0 ? i < to : i > to;) {
    picked.push_back(static_cast<std::size_t>(i));
    if (__builtin_add_overflow(i, step_by, &i)) break;  // a step past the 64-bit range ends the slice
  }
  if (is_string) {
    std::vector<std::uint32_t> out;
    for (const std::size_t i : picked) out.push_back(points[i]);
    return Value(encode_utf8(out));
  }
  ValueList out;
  for (const std::size_t i : picked) out.push_back(object.as_list()[i]);
  return Value(std::move(out), object.is_tuple());
}

ValueList iterate(const Value& value) {
  if (value.is_undefined()) return {};
  if (value.is_list()) return value.as_list();
  if (value.is_dict()) {
    ValueList keys;
    for (const auto& entry : value.as_dict()) keys.emplace_back(entry.first);
    return keys;
  }
  if (value.is_string()) {
    ValueList characters;
    for (const std::uint32_t c : decode_utf8(value.as_string())) characters.emplace_back(encode_utf8({c}));
    return characters;
  }
  throw Failure("'" + value.type_name() + "' object is not iterable");
}

std::size_t length_of(const Value& value) {
  if (value.is_undefined()) return 0;
  if (value.is_string()) return count_code_points(value.as_string());
  if (value.is_list()) return value.as_list().size();
  if (value.is_dict()) return value.as_dict().size();
  throw Failure("object of type '" + value.type_name() + "' has no len()");
}

}  // namespace pagedllm::chat::jinja
