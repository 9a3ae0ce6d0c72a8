// Jinja's filters (`x | trim`, `tools | tojson(indent=4)`) as jinja2 3.1 defines them, with
// transformers' `tojson` (json.dumps with ensure_ascii=False, no HTML escaping).
#pragma once

#include <string>

#include "core/chat/jinja/value.h"

namespace pagedllm::chat::jinja {

bool has_filter(const std::string& name);
// Throws Failure for an unknown filter ("No filter named 'x'.") or bad arguments.
Value apply_filter(const std::string& name, const Value& operand, const CallArguments& arguments);

}  // namespace pagedllm::chat::jinja
