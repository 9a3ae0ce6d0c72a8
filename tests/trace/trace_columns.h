// One field of every request of a trace, in order, for comparing a read against what a file holds.
#pragma once

#include <cstdint>
#include <vector>

#include "core/trace/trace.h"

namespace pagedllm::trace::testing {

// The 1-based line (or record) each request came from.
inline std::vector<int64_t> source_lines(const Trace& trace) {
  std::vector<int64_t> lines;
  for (const TraceRequest& request : trace.requests) lines.push_back(request.source_line);
  return lines;
}

}  // namespace pagedllm::trace::testing
