// Binding a call's arguments to a builtin's parameters, Python style.
#pragma once

#include <string>
#include <vector>

#include "core/chat/jinja/failure.h"
#include "core/chat/jinja/value.h"

namespace pagedllm::chat::jinja {

// The values of `parameters` in order, from positional then keyword arguments; a parameter not
// given is undefined. Throws Failure for an unknown keyword or too many positional arguments.
inline std::vector<Value> bind_arguments(const CallArguments& arguments, const std::vector<std::string>& parameters,
                                         const std::string& function) {
  if (arguments.positional.size() > parameters.size()) {
    throw Failure(function + "() takes at most " + std::to_string(parameters.size()) + " argument(s) (" +
                  std::to_string(arguments.positional.size()) + " given)");
  }
  std::vector<Value> values(parameters.size());
  for (std::size_t i = 0; i < arguments.positional.size(); ++i) values[i] = arguments.positional[i];
  for (const auto& [keyword, value] : arguments.keyword) {
    std::size_t i = 0;
    while (i < parameters.size() && parameters[i] != keyword) ++i;
    if (i == parameters.size()) throw Failure(function + "() got an unexpected keyword argument '" + keyword + "'");
    values[i] = value;
  }
  return values;
}

// The value, or `fallback` when it was not given.
inline Value or_default(const Value& value, Value fallback) { return value.is_undefined() ? fallback : value; }

}  // namespace pagedllm::chat::jinja
