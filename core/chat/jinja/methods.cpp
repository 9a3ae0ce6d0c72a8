#include "core/chat/jinja/methods.h"

#include <algorithm>
#include <array>

#include "core/chat/jinja/arguments.h"
#include "core/chat/jinja/failure.h"
#include "core/chat/jinja/operators.h"
#include "core/chat/jinja/python_text.h"

namespace pagedllm::chat::jinja {
namespace {

std::optional<std::string> optional_text(const Value& value, const std::string& function) {
  if (value.is_undefined() || value.is_none()) return std::nullopt;
  if (!value.is_string()) throw Failure(function + " arg must be None or str");
  return value.as_string();
}

long optional_count(const Value& value) { return value.is_number() ? static_cast<long>(value.as_int()) : -1; }

// prefix may be a str or a tuple of them.
bool matches_affix(const std::string& text, const Value& affix, bool at_start, const std::string& function) {
  if (affix.is_list()) {
    return std::any_of(affix.as_list().begin(), affix.as_list().end(),
                       [&](const Value& each) { return matches_affix(text, each, at_start, function); });
  }
  if (!affix.is_string())
    throw Failure(function + " first arg must be str or a tuple of str, not " + affix.type_name());
  const std::string& part = affix.as_string();
  if (part.size() > text.size()) return false;
  return at_start ? text.compare(0, part.size(), part) == 0
                  : text.compare(text.size() - part.size(), part.size(), part) == 0;
}

// str.format: "{}" / "{0}" / "{name}" fields, "{{" and "}}" escapes; no format specs.
std::string python_format(const std::string& text, const CallArguments& arguments) {
  std::string out;
  std::size_t next_index = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') throw Failure("Single '}' encountered in format string");
    if (c != '{') {
      out += c;
      continue;
    }
    const std::size_t close = text.find('}', i);
    if (close == std::string::npos) throw Failure("Single '{' encountered in format string");
    const std::string field = text.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!.[") != std::string::npos)
      throw Failure("format specs are not supported: {" + field + "}");
    const Value* value = nullptr;
    if (field.empty() || std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      const std::size_t index = field.empty() ? next_index++ : std::stoul(field);
      if (index >= arguments.positional.size()) {
        throw Failure("Replacement index " + std::to_string(index) + " out of range for positional args tuple");
      }
      value = &arguments.positional[index];
    } else {
      for (const auto& [keyword, given] : arguments.keyword) {
        if (keyword == field) value = &given;
      }
      if (value == nullptr) throw Failure("KeyError: '" + field + "'");
    }
    out += value->str();
    i = close;
  }
  return out;
}

Value string_method(const std::string& text, const std::string& name, const CallArguments& arguments) {
  const std::string function = "str." + name;
  const auto args = [&](std::vector<std::string> parameters) {
    return bind_arguments(arguments, parameters, function);
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const auto chars = optional_text(args({"chars"})[0], function);
    return Value(python_strip_chars(text, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split") {
    const std::vector<Value> values = args({"sep", "maxsplit"});
    const auto separator = optional_text(values[0], function);
    if (separator && separator->empty()) throw Failure("empty separator");
    ValueList parts;
    for (std::string& part : python_split(text, separator, optional_count(values[1])))
      parts.emplace_back(std::move(part));
    return Value(std::move(parts));
  }
  if (name == "splitlines") {
    ValueList lines;
    for (std::string& line : python_split(text, std::string("\n"), -1)) lines.emplace_back(std::move(line));
    if (!lines.empty() && lines.back().as_string().empty()) lines.pop_back();
    return Value(std::move(lines));
  }
  if (name == "startswith" || name == "endswith") {
    return Value(matches_affix(text, args({"prefix"})[0], name == "startswith", function));
  }
  if (name == "upper") return Value(python_upper(text));
  if (name == "lower") return Value(python_lower(text));
  if (name == "title") return Value(python_title(text));
  if (name == "capitalize") return Value(python_capitalize(text));
  if (name == "replace") {
    const std::vector<Value> values = args({"old", "new", "count"});
    if (!values[0].is_string() || !values[1].is_string()) throw Failure("replace() arguments must be str");
    return Value(python_replace(text, values[0].as_string(), values[1].as_string(), optional_count(values[2])));
  }
  if (name == "find" || name == "count") {
    const Value part = args({"sub"})[0];
    if (!part.is_string()) throw Failure("must be str, not " + part.type_name());
    if (name == "find") {
      const std::size_t at = text.find(part.as_string());
      return at == std::string::npos ? Value(std::int64_t{-1}) : Value(count_code_points(text.substr(0, at)));
    }
    if (part.as_string().empty()) return Value(count_code_points(text) + 1);
    std::int64_t count = 0;
    for (std::size_t at = text.find(part.as_string()); at != std::string::npos;
         at = text.find(part.as_string(), at + part.as_string().size())) {
      ++count;
    }
    return Value(count);
  }
  if (name == "join") {
    std::string out;
    bool first = true;
    for (const Value& item : iterate(args({"iterable"})[0])) {
      if (!item.is_string()) throw Failure("sequence item: expected str instance, " + item.type_name() + " found");
      if (!first) out += text;
      first = false;
      out += item.as_string();
    }
    return Value(std::move(out));
  }
  if (name == "format") return Value(python_format(text, arguments));
  throw Failure("'str' object has no attribute '" + name + "'");
}

Value dict_method(const Value& dict, const std::string& name, const CallArguments& arguments) {
  const std::string function = "dict." + name;
  if (name == "get") {
    const std::vector<Value> values = bind_arguments(arguments, {"key", "default"}, function);
    if (values[0].is_string()) {
      if (const Value* found = dict.find(values[0].as_string())) return *found;
    }
    return or_default(values[1], Value(None{}));
  }
  bind_arguments(arguments, {}, function);
  ValueList out;
  for (const auto& [key, value] : dict.as_dict()) {
    if (name == "keys") {
      out.emplace_back(key);
    } else if (name == "values") {
      out.push_back(value);
    } else {
      out.emplace_back(ValueList{Value(key), value}, true);
    }
  }
  return Value(std::move(out));
}

constexpr std::array kStringMethods = {"strip",    "lstrip", "rstrip", "split", "splitlines", "startswith",
                                       "endswith", "upper",  "lower",  "title", "capitalize", "replace",
                                       "find",     "count",  "join",   "format"};
constexpr std::array kDictMethods = {"get", "items", "keys", "values"};
constexpr std::array kMutatingListMethods = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"};
constexpr std::array kMutatingDictMethods = {"update", "pop", "popitem", "setdefault", "clear"};

template <std::size_t N>
bool one_of(const std::array<const char*, N>& names, const std::string& name) {
  return std::any_of(names.begin(), names.end(), [&](const char* each) { return name == each; });
}

Value refused(const Value& object, const std::string& name) {
  const std::string message = "access to attribute '" + name + "' of '" + object.type_name() + "' object is unsafe.";
  return Value(object.type_name() + "." + name, [message](CallArguments&) -> Value { throw Failure(message); });
}

}  // namespace

std::optional<Value> find_method(const Value& object, const std::string& name) {
  if (object.is_string() && one_of(kStringMethods, name)) {
    const std::string text = object.as_string();
    return Value("str." + name,
                 [text, name](CallArguments& arguments) { return string_method(text, name, arguments); });
  }
  if (object.is_dict()) {
    if (one_of(kDictMethods, name)) {
      return Value("dict." + name,
                   [object, name](CallArguments& arguments) { return dict_method(object, name, arguments); });
    }
    if (one_of(kMutatingDictMethods, name)) return refused(object, name);
  }
  if (object.is_list() && !object.is_tuple() && one_of(kMutatingListMethods, name)) return refused(object, name);
  return std::nullopt;
}

}  // namespace pagedllm::chat::jinja
