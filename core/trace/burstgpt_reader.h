// The BurstGPT trace (HPMLL/BurstGPT, BurstGPT_*.csv): columns Timestamp, Model, Request tokens,
// Response tokens, Total tokens, Log Type; Timestamp in seconds from the trace's start.
//
// Mapping: arrival = Timestamp - the earliest Timestamp; prompt = a length-only prompt of Request
// tokens; output_len = Response tokens. Skipped (counted, one warning per rule): rows of another
// Model or Log Type than asked for, Response tokens 0 (requests that failed in BurstGPT) and
// Request tokens 0 (no prompt to replay).
#pragma once

#include <iosfwd>
#include <string>

#include "core/trace/trace.h"

namespace pagedllm::trace {

struct BurstGptOptions {
  std::string model;     // keep only this Model ("ChatGPT", "GPT-4"); empty = every model
  std::string log_type;  // keep only this Log Type ("Conversation log", "API log"); empty = both
};

Trace read_burstgpt_trace(const std::string& path, const BurstGptOptions& burstgpt = {},
                          const ReadOptions& options = {}, ReadReport* report = nullptr);
// `name` stands for the file in issues and in header.source ("burstgpt:<name>").
Trace read_burstgpt_trace(std::istream& in, const std::string& name, const BurstGptOptions& burstgpt = {},
                          const ReadOptions& options = {}, ReadReport* report = nullptr);

}  // namespace pagedllm::trace
