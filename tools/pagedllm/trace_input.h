// Reading a trace from the command line, shared by `trace convert|stats`, `replay` and
// `simulate`: the format, the converters' options, strictness, and the report of what was
// skipped (file, line, field) on stderr.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

#include "core/trace/trace.h"

namespace pagedllm::cli {

struct TraceInputOptions {
  std::string path;
  std::string format = "pagedllm";   // pagedllm | sharegpt | azure | burstgpt | mooncake
  bool strict = false;               // the first bad line is fatal
  bool refuse_out_of_order = false;  // else arrivals are sorted with a warning
  int64_t max_requests = 0;          // keep the first N (by arrival); 0 = all
  bool sharegpt_no_filter = false;
  std::string burstgpt_model;
  std::string burstgpt_log_type;
  int32_t mooncake_block_tokens = trace::kDefaultPrefixBlockTokens;
};

// Adds --trace (when `path_option`), --format, --strict, ... to `description`.
void add_trace_input_options(boost::program_options::options_description& description, TraceInputOptions& options,
                             bool path_option = true);

// --strict and --refuse-out-of-order as the readers take them.
trace::ReadOptions read_options(const TraceInputOptions& options);
// The report's errors and warnings, at most `max_issues` of each, to `log`.
void print_read_report(const trace::ReadReport& report, std::ostream& log, size_t max_issues = 20);

// Reads the trace; `count_tokens` is the tokenizer ShareGPT needs (null: ShareGPT is refused with
// a message saying so). Prints the report's errors and warnings (at most `max_issues` of each)
// to `log`; throws trace::TraceError under --strict or for an unreadable file.
trace::Trace read_trace_input(const TraceInputOptions& options, std::function<int32_t(std::string_view)> count_tokens,
                              trace::ReadReport& report, std::ostream& log, size_t max_issues = 20);

}  // namespace pagedllm::cli
