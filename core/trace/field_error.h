// A problem with one field of one line of a JSON-lines trace (pagedllm's own, Mooncake's): thrown
// while the line is read, and turned by the reader into a TraceIssue for that line, which is then
// skipped or fails the load as the caller asked. (CSV readers have CsvFieldError, by column.)
#pragma once

#include <string>

namespace pagedllm::trace {

struct FieldError {
  std::string field;  // "" when the line as a whole is at fault (not JSON, not an object)
  std::string message;
};

}  // namespace pagedllm::trace
