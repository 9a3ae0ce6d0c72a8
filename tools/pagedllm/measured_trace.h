// A trace of the requests as a real run served them, for the simulator to replay that run: each
// request's output length is what it generated, and with speculative decoding its own measured
// drafts and acceptance (simulated_speculation). `pagedllm trace measured`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/trace/trace.h"

namespace pagedllm::cli {

struct MeasuredTraceReport {
  int64_t num_measured = 0;     // requests given the run's output length
  int64_t num_speculating = 0;  // ... and their measured speculation
  int64_t num_failed = 0;       // requests the run failed: kept as the trace had them
};

// `trace` is the trace the run replayed (its requests in replay order: a report's "id" is the index);
// `report` a replay JSON report (`replay -o`), named `report_name` in errors. Throws
// std::invalid_argument naming the report and the entry at fault (an id outside the trace, a
// request entry without output_tokens, a repeated id).
trace::Trace measured_trace(const trace::Trace& trace, const nlohmann::json& report, const std::string& report_name,
                            MeasuredTraceReport& counts);

}  // namespace pagedllm::cli
