// Names and messages of the trace types (trace.h).
#include "core/trace/trace.h"

namespace pagedllm::trace {

const char* to_string(PromptKind kind) {
  switch (kind) {
    case PromptKind::text:
      return "text";
    case PromptKind::tokens:
      return "tokens";
    case PromptKind::length:
      return "length";
  }
  return "unknown";
}

std::string TraceIssue::to_string() const {
  // "file:line: field: message", leaving out what is not known.
  std::string out = file;
  if (line > 0) out += (out.empty() ? "line " : ":") + std::to_string(line);
  if (!out.empty()) out += ": ";
  if (!field.empty()) out += field + ": ";
  out += message;
  return out;
}

}  // namespace pagedllm::trace
