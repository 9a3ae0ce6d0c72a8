// Jinja's tests (`x is defined`, `x is not none`, `x is eq(y)`), as jinja2 defines them.
#pragma once

#include <string>

#include "core/chat/jinja/value.h"

namespace pagedllm::chat::jinja {

bool has_test(const std::string& name);
// Throws Failure for an unknown test ("No test named 'x'.") or bad arguments.
bool apply_test(const std::string& name, const Value& operand, const CallArguments& arguments);

}  // namespace pagedllm::chat::jinja
