// The Python methods templates call on values: str (strip, split, startswith, format, ...), dict
// (get, items, keys, values) and list. Mutating methods (list.append, dict.update, ...) are
// refused as jinja2's ImmutableSandboxedEnvironment refuses them, which is what transformers runs.
#pragma once

#include <optional>
#include <string>

#include "core/chat/jinja/value.h"

namespace pagedllm::chat::jinja {

// `object.name` as a bound method, or nullopt when the type has no such method.
std::optional<Value> find_method(const Value& object, const std::string& name);

}  // namespace pagedllm::chat::jinja
