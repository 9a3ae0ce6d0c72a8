// The global functions a chat template can call: range, namespace, dict, and transformers'
// raise_exception(message) and strftime_now(format).
#pragma once

#include "core/chat/jinja/value.h"

namespace pagedllm::chat::jinja {

// name -> Function, to be put in the template's outermost scope.
ValueDict builtin_globals();

}  // namespace pagedllm::chat::jinja
