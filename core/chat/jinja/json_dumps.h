// Python's json.dumps over Values, as transformers' `tojson` filter calls it (ensure_ascii=False,
// indent, separators, sort_keys=False by default): the same bytes, floats in Python's repr.
#pragma once

#include <optional>
#include <string>

#include "core/chat/jinja/value.h"

namespace pagedllm::chat::jinja {

struct JsonDumpOptions {
  std::optional<std::string> indent;  // json.dumps's indent as text: 2 -> "  "; none: one line
  std::string item_separator = ", ";  // json.dumps defaults: ", " and ": ", or "," with an indent
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// Throws Failure ("Object of type Undefined is not JSON serializable").
std::string python_json_dumps(const Value& value, const JsonDumpOptions& options);

}  // namespace pagedllm::chat::jinja
