#include "core/chat/jinja/builtins.h"

#include <ctime>
#include <memory>

#include "core/chat/jinja/arguments.h"
#include "core/chat/jinja/failure.h"

namespace pagedllm::chat::jinja {
namespace {

Value range(CallArguments& arguments) {
  if (!arguments.keyword.empty()) throw Failure("range() takes no keyword arguments");
  std::vector<std::int64_t> bounds;
  for (const Value& value : arguments.positional) {
    if (!value.is_number() || value.is_float()) {
      throw Failure("'" + value.type_name() + "' object cannot be interpreted as an integer");
    }
    bounds.push_back(value.as_int());
  }
  if (bounds.empty() || bounds.size() > 3) throw Failure("range expected 1 to 3 arguments");
  const std::int64_t start = bounds.size() == 1 ? 0 : bounds[0];
  const std::int64_t stop = bounds.size() == 1 ? bounds[0] : bounds[1];
  const std::int64_t step = bounds.size() == 3 ? bounds[2] : 1;
  if (step == 0) throw Failure("range() arg 3 must not be zero");
  constexpr std::int64_t kMaxRange = 100000;  // jinja2's sandbox: MAX_RANGE
  ValueList items;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop;) {
    if (static_cast<std::int64_t>(items.size()) >= kMaxRange) {
      throw Failure("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    }
    items.emplace_back(i);
    if (__builtin_add_overflow(i, step, &i)) break;  // past the 64-bit range: nothing more is in range
  }
  return Value(std::move(items));
}

// The keyword arguments (after an optional dict positional) as a dict's entries.
ValueDict entries_of(CallArguments& arguments, const char* function) {
  ValueDict entries;
  if (arguments.positional.size() > 1)
    throw Failure(std::string(function) + "() takes at most one positional argument");
  if (!arguments.positional.empty()) {
    if (!arguments.positional[0].is_dict()) throw Failure(std::string(function) + "() expects a mapping");
    entries = arguments.positional[0].as_dict();
  }
  for (auto& [keyword, value] : arguments.keyword) {
    bool replaced = false;
    for (auto& entry : entries) {
      if (entry.first == keyword) {
        entry.second = value;
        replaced = true;
      }
    }
    if (!replaced) entries.emplace_back(keyword, value);
  }
  return entries;
}

Value strftime_now(CallArguments& arguments) {
  const Value format = bind_arguments(arguments, {"format"}, "strftime_now")[0];
  if (!format.is_string()) throw Failure("strftime_now() expects a format string");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[256];
  const std::size_t length = std::strftime(text, sizeof text, format.as_string().c_str(), &local);
  return Value(std::string(text, length));
}

}  // namespace

ValueDict builtin_globals() {
  ValueDict globals;
  globals.emplace_back("range", Value("range", range));
  globals.emplace_back("namespace", Value("namespace", [](CallArguments& arguments) {
                         return Value(std::make_shared<Namespace>(Namespace{entries_of(arguments, "namespace")}));
                       }));
  globals.emplace_back("dict",
                       Value("dict", [](CallArguments& arguments) { return Value(entries_of(arguments, "dict")); }));
  globals.emplace_back("raise_exception", Value("raise_exception", [](CallArguments& arguments) -> Value {
                         const Value message = bind_arguments(arguments, {"message"}, "raise_exception")[0];
                         throw RaisedByTemplate(message.str());
                       }));
  globals.emplace_back("strftime_now", Value("strftime_now", strftime_now));
  return globals;
}

}  // namespace pagedllm::chat::jinja
