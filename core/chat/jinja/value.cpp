#include "core/chat/jinja/value.h"

#include "core/chat/jinja/failure.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace pagedllm::chat::jinja {
namespace {

template <typename Json>
Value value_from_json(const Json& json) {
  switch (json.type()) {
    case nlohmann::json::value_t::null:
      return Value(None{});
    case nlohmann::json::value_t::boolean:
      return Value(json.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value(json.template get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return Value(static_cast<std::int64_t>(json.template get<std::uint64_t>()));
    case nlohmann::json::value_t::number_float:
      return Value(json.template get<double>());
    case nlohmann::json::value_t::string:
      return Value(json.template get<std::string>());
    case nlohmann::json::value_t::array: {
      ValueList items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(value_from_json(item));
      return Value(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      ValueDict entries;
      entries.reserve(json.size());
      for (auto it = json.begin(); it != json.end(); ++it) entries.emplace_back(it.key(), value_from_json(it.value()));
      return Value(std::move(entries));
    }
    default:
      throw std::invalid_argument("a JSON value of an unsupported type (binary or discarded)");
  }
}

void append_repr_list(std::string& out, const ValueList& items, bool is_tuple) {
  out += is_tuple ? '(' : '[';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += items[i].repr();
  }
  if (is_tuple && items.size() == 1) out += ',';
  out += is_tuple ? ')' : ']';
}

}  // namespace

Value Value::from_json(const nlohmann::ordered_json& json) { return value_from_json(json); }
Value Value::from_json(const nlohmann::json& json) { return value_from_json(json); }

std::int64_t Value::as_int() const {
  if (is_bool()) return as_bool() ? 1 : 0;
  // A filter or method given another type where it needs an integer: a template error, not a crash.
  if (!is_int()) throw Failure("'" + type_name() + "' object cannot be interpreted as an integer");
  return std::get<std::int64_t>(storage_);
}

double Value::as_double() const {
  if (is_float()) return std::get<double>(storage_);
  return static_cast<double>(as_int());
}

const Value* Value::find(std::string_view key) const {
  for (const auto& [name, value] : as_dict()) {
    if (name == key) return &value;
  }
  return nullptr;
}

bool Value::truthy() const {
  return std::visit(
      [](const auto& held) -> bool {
        using T = std::decay_t<decltype(held)>;
        if constexpr (std::is_same_v<T, Undefined> || std::is_same_v<T, None>) {
          return false;
        } else if constexpr (std::is_same_v<T, bool>) {
          return held;
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          return held != 0;
        } else if constexpr (std::is_same_v<T, double>) {
          return held != 0.0;
        } else if constexpr (std::is_same_v<T, std::string>) {
          return !held.empty();
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const List>>) {
          return !held->items.empty();
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const ValueDict>>) {
          return !held->empty();
        } else {
          return true;
        }
      },
      storage_);
}

bool operator==(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.storage_.index() != b.storage_.index()) return false;
  if (a.is_undefined() || a.is_none()) return true;
  if (a.is_string()) return a.as_string() == b.as_string();
  if (a.is_list()) {
    const ValueList& x = a.as_list();
    const ValueList& y = b.as_list();
    if (x.size() != y.size() || a.is_tuple() != b.is_tuple()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!(x[i] == y[i])) return false;
    }
    return true;
  }
  if (a.is_dict()) {
    const ValueDict& x = a.as_dict();
    if (x.size() != b.as_dict().size()) return false;
    for (const auto& [key, value] : x) {
      const Value* other = b.find(key);
      if (other == nullptr || !(value == *other)) return false;
    }
    return true;
  }
  if (a.is_namespace()) return &a.as_namespace() == &b.as_namespace();
  return &a.as_function() == &b.as_function();
}

std::string Value::str() const {
  if (is_undefined()) return "";
  if (is_string()) return as_string();
  return repr();
}

std::string Value::repr() const {
  if (is_undefined()) return "Undefined";
  if (is_none()) return "None";
  if (is_bool()) return as_bool() ? "True" : "False";
  if (is_int()) return std::to_string(as_int());
  if (is_float()) return python_float_repr(as_double());
  if (is_string()) return python_string_repr(as_string());
  std::string out;
  if (is_list()) {
    append_repr_list(out, as_list(), is_tuple());
  } else if (is_dict()) {
    out += '{';
    bool first = true;
    for (const auto& [key, value] : as_dict()) {
      if (!first) out += ", ";
      first = false;
      out += python_string_repr(key) + ": " + value.repr();
    }
    out += '}';
  } else if (is_namespace()) {
    out += "<Namespace ";
    ValueDict copy = as_namespace().attributes;
    out += Value(std::move(copy)).repr() + ">";
  } else {
    out += "<function " + as_function().name + ">";
  }
  return out;
}

std::string Value::type_name() const {
  if (is_undefined()) return "Undefined";
  if (is_none()) return "NoneType";
  if (is_bool()) return "bool";
  if (is_int()) return "int";
  if (is_float()) return "float";
  if (is_string()) return "str";
  if (is_list()) return is_tuple() ? "tuple" : "list";
  if (is_dict()) return "dict";
  if (is_namespace()) return "Namespace";
  return "function";
}

std::string Value::type_description() const {
  if (is_none()) return "None";
  std::string description = "'";
  description += type_name();
  description += " object'";
  return description;
}

nlohmann::ordered_json Value::to_json() const {
  if (is_none()) return nullptr;
  if (is_bool()) return as_bool();
  if (is_int()) return as_int();
  if (is_float()) return as_double();
  if (is_string()) return as_string();
  if (is_list()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const Value& item : as_list()) out.push_back(item.to_json());
    return out;
  }
  if (is_dict()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& [key, value] : as_dict()) out[key] = value.to_json();
    return out;
  }
  throw std::invalid_argument("Object of type " + type_name() + " is not JSON serializable");
}

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  // The shortest digits that round-trip, then Python's layout: exponent form below 1e-4 and
  // from 1e16 up.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  const std::string scientific(buffer, result.ptr);
  const std::size_t e = scientific.find('e');
  std::string mantissa = scientific.substr(0, e);
  const int exponent = std::stoi(scientific.substr(e + 1));
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (const char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    char exponent_text[16];
    std::snprintf(exponent_text, sizeof exponent_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exponent_text;
  }
  if (exponent < 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-exponent - 1), '0');
    return out + digits;
  }
  const std::size_t integer_digits = static_cast<std::size_t>(exponent) + 1;
  if (digits.size() <= integer_digits) {
    return out + digits + std::string(integer_digits - digits.size(), '0') + ".0";
  }
  return out + digits.substr(0, integer_digits) + "." + digits.substr(integer_digits);
}

std::string python_string_repr(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char escaped[16];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xa0) {
      // U+0080..U+009F (C1 controls) are not printable: Python writes \x80..\x9f.
      char escaped[16];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(text[i + 1]));
      out += escaped;
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

}  // namespace pagedllm::chat::jinja
