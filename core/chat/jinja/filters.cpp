#include "core/chat/jinja/filters.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "core/chat/jinja/arguments.h"
#include "core/chat/jinja/failure.h"
#include "core/chat/jinja/json_dumps.h"
#include "core/chat/jinja/operators.h"
#include "core/chat/jinja/predicates.h"
#include "core/chat/jinja/python_text.h"

namespace pagedllm::chat::jinja {
namespace {

using Filter = std::function<Value(const Value&, const CallArguments&)>;

std::vector<Value> bind(const CallArguments& arguments, std::vector<std::string> parameters, const char* filter) {
  return bind_arguments(arguments, parameters, filter);
}

// A filter of the string form of its operand (jinja2 applies str() first; undefined is "").
Filter text_filter(std::string (*function)(std::string_view)) {
  return [function](const Value& value, const CallArguments& arguments) {
    bind(arguments, {}, "filter");
    return Value(function(value.str()));
  };
}

// `attribute` as jinja2's make_attrgetter reads it: "a.b" or "a.0" walk into nested values.
Value attribute_of(const Value& item, const Value& attribute) {
  if (attribute.is_number()) return get_item(item, attribute);
  Value current = item;
  const std::string path = attribute.str();
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool is_index =
        !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    current = is_index ? get_item(current, Value(static_cast<std::int64_t>(std::stoll(part))))
                       : get_item(current, Value(part));
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

// The rest of a filter's positional arguments, from `first`, as a test's arguments.
CallArguments rest_of(const CallArguments& arguments, std::size_t first) {
  CallArguments rest;
  for (std::size_t i = first; i < arguments.positional.size(); ++i) rest.positional.push_back(arguments.positional[i]);
  rest.keyword = arguments.keyword;
  return rest;
}

// select / reject / selectattr / rejectattr.
Value select_items(const Value& value, const CallArguments& arguments, bool by_attribute, bool keep) {
  const std::size_t test_at = by_attribute ? 1 : 0;
  if (by_attribute && arguments.positional.empty()) throw Failure("selectattr / rejectattr need an attribute");
  ValueList out;
  for (const Value& item : iterate(value)) {
    const Value tested = by_attribute ? attribute_of(item, arguments.positional[0]) : item;
    bool passed;
    if (arguments.positional.size() <= test_at) {
      passed = tested.truthy();
    } else {
      passed = apply_test(arguments.positional[test_at].str(), tested, rest_of(arguments, test_at + 1));
    }
    if (passed == keep) out.push_back(item);
  }
  return Value(std::move(out));
}

Value map_items(const Value& value, const CallArguments& arguments) {
  ValueList out;
  Value attribute;
  Value fallback;
  for (const auto& [keyword, given] : arguments.keyword) {
    if (keyword == "attribute") attribute = given;
    if (keyword == "default") fallback = given;
  }
  for (const Value& item : iterate(value)) {
    if (!attribute.is_undefined()) {
      const Value found = attribute_of(item, attribute);
      out.push_back(found.is_undefined() && !fallback.is_undefined() ? fallback : found);
    } else {
      if (arguments.positional.empty()) throw Failure("map() needs a filter name or attribute=");
      out.push_back(apply_filter(arguments.positional[0].str(), item, rest_of(arguments, 1)));
    }
  }
  return Value(std::move(out));
}

// The key jinja2 sorts and compares by: lower-cased strings unless case-sensitive.
Value sort_key(const Value& value, bool case_sensitive) {
  return value.is_string() && !case_sensitive ? Value(python_lower(value.as_string())) : value;
}

Value sort_items(const Value& value, const CallArguments& arguments) {
  const std::vector<Value> a = bind(arguments, {"reverse", "case_sensitive", "attribute"}, "sort");
  const bool case_sensitive = a[1].truthy();
  ValueList items = iterate(value);
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const Value kx = sort_key(a[2].is_undefined() ? x : attribute_of(x, a[2]), case_sensitive);
    const Value ky = sort_key(a[2].is_undefined() ? y : attribute_of(y, a[2]), case_sensitive);
    return a[0].truthy() ? less_than(ky, kx) : less_than(kx, ky);
  });
  return Value(std::move(items));
}

Value dictsort(const Value& value, const CallArguments& arguments) {
  const std::vector<Value> a = bind(arguments, {"case_sensitive", "by", "reverse"}, "dictsort");
  if (!value.is_dict()) throw Failure("dictsort expects a mapping, got " + value.type_name());
  const std::size_t by = a[1].is_undefined() || a[1].str() == "key" ? 0 : a[1].str() == "value" ? 1 : 2;
  if (by == 2) throw Failure("You can only sort by either \"key\" or \"value\"");
  ValueList pairs;
  for (const auto& [key, item] : value.as_dict()) pairs.emplace_back(ValueList{Value(key), item}, true);
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    const Value kx = sort_key(x.as_list()[by], a[0].truthy());
    const Value ky = sort_key(y.as_list()[by], a[0].truthy());
    return a[2].truthy() ? less_than(ky, kx) : less_than(kx, ky);
  });
  return Value(std::move(pairs));
}

Value unique_items(const Value& value, const CallArguments& arguments) {
  const std::vector<Value> a = bind(arguments, {"case_sensitive", "attribute"}, "unique");
  ValueList out;
  ValueList seen;
  for (const Value& item : iterate(value)) {
    const Value key = sort_key(a[1].is_undefined() ? item : attribute_of(item, a[1]), a[0].truthy());
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value(std::move(out));
}

Value tojson(const Value& value, const CallArguments& arguments) {
  const std::vector<Value> a = bind(arguments, {"ensure_ascii", "indent", "separators", "sort_keys"}, "tojson");
  JsonDumpOptions options;
  options.ensure_ascii = a[0].truthy();
  if (a[1].is_int()) {
    options.indent = std::string(static_cast<std::size_t>(std::max<std::int64_t>(0, a[1].as_int())), ' ');
  } else if (a[1].is_string()) {
    options.indent = a[1].as_string();
  }
  if (options.indent) options.item_separator = ",";
  if (a[2].is_list() && a[2].as_list().size() == 2) {
    options.item_separator = a[2].as_list()[0].str();
    options.key_separator = a[2].as_list()[1].str();
  }
  options.sort_keys = a[3].truthy();
  return Value(python_json_dumps(value, options));
}

// jinja2's indent: lines after the first (and the first with first=True) get `width` spaces;
// blank lines only with blank=True.
Value indent(const Value& value, const CallArguments& arguments) {
  const std::vector<Value> a = bind(arguments, {"width", "first", "blank"}, "indent");
  const std::string prefix = a[0].is_string() ? a[0].as_string()
                                              : std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(
                                                                or_default(a[0], Value(4)).as_int(), 0, 4096)),
                                                            ' ');  // Python: a negative width is no indent
  std::vector<std::string> lines = python_split(value.str() + "\n", std::string("\n"), -1);
  lines.pop_back();  // the "\n" jinja2 adds so that splitlines() keeps a trailing empty line
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    const bool indented = (i > 0 || a[1].truthy()) && (a[2].truthy() || !lines[i].empty());
    out += (indented ? prefix : "") + lines[i];
  }
  return Value(std::move(out));
}

// jinja2's round: "common" is Python's round() (half to even; an int stays an int), "ceil" and
// "floor" always give a float.
Value round_number(const Value& value, const CallArguments& arguments) {
  const std::vector<Value> a = bind(arguments, {"precision", "method"}, "round");
  require_defined(value);
  const std::int64_t precision = or_default(a[0], Value(0)).as_int();
  const std::string method = or_default(a[1], Value("common")).str();
  if (method != "common" && method != "ceil" && method != "floor") {
    throw Failure("method must be 'common', 'ceil' or 'floor'");
  }
  if (method == "common" && !value.is_float() && precision >= 0) return Value(value.as_int());
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = value.as_double() * scale;
  const double rounded = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
  return Value(rounded / scale);
}

Value to_int(const Value& value, const CallArguments& arguments) {
  const std::vector<Value> a = bind(arguments, {"default", "base"}, "int");
  const Value fallback = or_default(a[0], Value(0));
  if (value.is_float()) return Value(float_to_int(value.as_double()));
  if (value.is_number()) return Value(value.as_int());
  if (!value.is_string()) return fallback;
  const std::string text = python_strip_chars(value.as_string(), std::nullopt, true, true);
  try {
    std::size_t used = 0;
    const long long parsed = std::stoll(text, &used, static_cast<int>(or_default(a[1], Value(10)).as_int()));
    if (used == text.size()) return Value(static_cast<std::int64_t>(parsed));
    const double real = std::stod(text, &used);
    if (used == text.size() && std::isfinite(real) && std::fabs(real) < 9.2e18) {
      return Value(static_cast<std::int64_t>(real));
    }
  } catch (const std::exception&) {
  }
  return fallback;
}

Value to_float(const Value& value, const CallArguments& arguments) {
  const Value fallback = or_default(bind(arguments, {"default"}, "float")[0], Value(0.0));
  if (value.is_number()) return Value(value.as_double());
  if (!value.is_string()) return fallback;
  try {
    std::size_t used = 0;
    const std::string text = python_strip_chars(value.as_string(), std::nullopt, true, true);
    const double parsed = std::stod(text, &used);
    if (used == text.size()) return Value(parsed);
  } catch (const std::exception&) {
  }
  return fallback;
}

Value batch(const Value& value, const CallArguments& arguments) {
  const std::vector<Value> a = bind(arguments, {"linecount", "fill_with"}, "batch");
  const std::int64_t size = a[0].is_number() ? a[0].as_int() : 0;
  if (size <= 0) throw Failure("batch size must be positive");
  ValueList out;
  ValueList current;
  for (const Value& item : iterate(value)) {
    current.push_back(item);
    if (static_cast<std::int64_t>(current.size()) == size) out.emplace_back(std::exchange(current, {}));
  }
  if (!current.empty()) {
    while (!a[1].is_undefined() && static_cast<std::int64_t>(current.size()) < size) current.push_back(a[1]);
    out.emplace_back(std::move(current));
  }
  return Value(std::move(out));
}

Value join(const Value& value, const CallArguments& arguments) {
  const std::vector<Value> a = bind(arguments, {"d", "attribute"}, "join");
  std::string out;
  bool first = true;
  for (const Value& item : iterate(value)) {
    if (!first) out += or_default(a[0], Value("")).str();
    first = false;
    out += (a[1].is_undefined() ? item : attribute_of(item, a[1])).str();
  }
  return Value(std::move(out));
}

Value first_or_last(const Value& value, bool first) {
  const ValueList items = iterate(value);
  if (items.empty())
    return Value::undefined(std::string("No ") + (first ? "first" : "last") + " item, sequence was empty.");
  return first ? items.front() : items.back();
}

Value default_value(const Value& value, const CallArguments& arguments) {
  const std::vector<Value> a = bind(arguments, {"default_value", "boolean"}, "default");
  const bool replace = value.is_undefined() || (a[1].truthy() && !value.truthy());
  return replace ? or_default(a[0], Value("")) : value;
}

Value items(const Value& value) {
  if (value.is_undefined()) return Value(ValueList{});
  if (!value.is_dict()) throw Failure("Can only get item pairs from a mapping.");
  ValueList pairs;
  for (const auto& [key, item] : value.as_dict()) pairs.emplace_back(ValueList{Value(key), item}, true);
  return Value(std::move(pairs));
}

Value replace(const Value& value, const CallArguments& arguments) {
  const std::vector<Value> a = bind(arguments, {"old", "new", "count"}, "replace");
  const long count = a[2].is_number() ? static_cast<long>(a[2].as_int()) : -1;
  return Value(python_replace(value.str(), a[0].str(), a[1].str(), count));
}

Value sum_items(const Value& value, const CallArguments& arguments) {
  const std::vector<Value> a = bind(arguments, {"attribute", "start"}, "sum");
  Value total = or_default(a[1], Value(0));
  for (const Value& item : iterate(value)) {
    total = binary_operation("+", total, a[0].is_undefined() ? item : attribute_of(item, a[0]));
  }
  return total;
}

Value min_or_max(const Value& value, const CallArguments& arguments, bool want_max) {
  const std::vector<Value> a = bind(arguments, {"case_sensitive", "attribute"}, want_max ? "max" : "min");
  const ValueList items = iterate(value);
  if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
  const Value* best = &items.front();
  for (const Value& item : items) {
    const Value key = sort_key(a[1].is_undefined() ? item : attribute_of(item, a[1]), a[0].truthy());
    const Value best_key = sort_key(a[1].is_undefined() ? *best : attribute_of(*best, a[1]), a[0].truthy());
    if (want_max ? less_than(best_key, key) : less_than(key, best_key)) best = &item;
  }
  return *best;
}

const std::map<std::string, Filter>& filters() {
  using A = const CallArguments&;
  static const std::map<std::string, Filter> table = {
      {"trim",
       [](const Value& v, A a) {
         const Value chars = bind(a, {"chars"}, "trim")[0];
         return Value(python_strip_chars(v.str(), chars.is_string() ? std::optional(chars.as_string()) : std::nullopt,
                                         true, true));
       }},
      {"tojson", tojson},
      {"length", [](const Value& v, A) { return Value(length_of(v)); }},
      {"count", [](const Value& v, A) { return Value(length_of(v)); }},
      {"lower", text_filter(python_lower)},
      {"upper", text_filter(python_upper)},
      {"title", text_filter(jinja_title)},
      {"capitalize", text_filter(python_capitalize)},
      {"replace", replace},
      {"join", join},
      {"first", [](const Value& v, A) { return first_or_last(v, true); }},
      {"last", [](const Value& v, A) { return first_or_last(v, false); }},
      {"default", default_value},
      {"d", default_value},
      {"list", [](const Value& v, A) { return Value(iterate(v)); }},
      {"items", [](const Value& v, A) { return items(v); }},
      {"string", [](const Value& v, A) { return Value(v.str()); }},
      {"safe", [](const Value& v, A) { return v; }},
      {"int", to_int},
      {"float", to_float},
      {"abs",
       [](const Value& v, A) {
         require_defined(v);
         if (!v.is_number()) throw Failure("bad operand type for abs(): '" + v.type_name() + "'");
         if (v.is_float()) return Value(std::fabs(v.as_double()));
         if (v.as_int() == std::numeric_limits<std::int64_t>::min()) {
           throw Failure("integer overflow (pagedllm's template integers are 64-bit)");
         }
         return Value(static_cast<std::int64_t>(std::llabs(v.as_int())));
       }},
      {"round", round_number},
      {"select", [](const Value& v, A a) { return select_items(v, a, false, true); }},
      {"reject", [](const Value& v, A a) { return select_items(v, a, false, false); }},
      {"selectattr", [](const Value& v, A a) { return select_items(v, a, true, true); }},
      {"rejectattr", [](const Value& v, A a) { return select_items(v, a, true, false); }},
      {"map", map_items},
      {"unique", unique_items},
      {"indent", indent},
      {"dictsort", dictsort},
      {"sort", sort_items},
      {"batch", batch},
      {"reverse",
       [](const Value& v, A) {
         if (v.is_string()) {
           std::vector<std::uint32_t> points = decode_utf8(v.as_string());
           std::reverse(points.begin(), points.end());
           return Value(encode_utf8(points));
         }
         ValueList items = iterate(v);
         std::reverse(items.begin(), items.end());
         return Value(std::move(items));
       }},
      {"sum", sum_items},
      {"min", [](const Value& v, A a) { return min_or_max(v, a, false); }},
      {"max", [](const Value& v, A a) { return min_or_max(v, a, true); }},
  };
  return table;
}

}  // namespace

bool has_filter(const std::string& name) { return filters().count(name) != 0; }

Value apply_filter(const std::string& name, const Value& operand, const CallArguments& arguments) {
  const auto found = filters().find(name);
  if (found == filters().end()) throw Failure("No filter named '" + name + "'.");
  return found->second(operand, arguments);
}

}  // namespace pagedllm::chat::jinja
