// BurstGPT CSV -> Trace (burstgpt_reader.h).
#include "core/trace/burstgpt_reader.h"

#include <algorithm>
#include <istream>
#include <limits>
#include <vector>

#include "core/trace/csv_reader.h"
#include "core/trace/trace_jsonl.h"

namespace pagedllm::trace {
namespace {

constexpr const char* kTimestamp = "Timestamp";
constexpr const char* kModel = "Model";
constexpr const char* kRequestTokens = "Request tokens";
constexpr const char* kResponseTokens = "Response tokens";
constexpr const char* kLogType = "Log Type";

}  // namespace

Trace read_burstgpt_trace(std::istream& in, const std::string& name, const BurstGptOptions& burstgpt,
                          const ReadOptions& options, ReadReport* report) {
  ReadContext context(name, options, report);
  CsvReader reader(in);
  CsvRecord record;
  if (!reader.next(record)) context.fatal(0, "", "empty file: no header row");
  std::vector<std::string> required{kTimestamp, kRequestTokens, kResponseTokens};
  if (!burstgpt.model.empty()) required.emplace_back(kModel);
  if (!burstgpt.log_type.empty()) required.emplace_back(kLogType);
  const CsvColumns columns(record, required, name);
  const size_t timestamp_at = columns.at(kTimestamp);
  const size_t request_at = columns.at(kRequestTokens);
  const size_t response_at = columns.at(kResponseTokens);

  Trace trace;
  trace.header.source = "burstgpt:" + name;
  double origin = std::numeric_limits<double>::infinity();
  while (reader.next(record)) {
    context.count_record();
    if (const std::string problem = columns.problem(record); !problem.empty()) {
      context.error(record.line, "", problem);
      continue;
    }
    TraceRequest request;
    try {
      const auto time = parse_csv_number(record.fields[timestamp_at]);
      if (!time) {
        throw CsvFieldError{kTimestamp,
                            "expected seconds (a finite number), found '" + record.fields[timestamp_at] + "'"};
      }
      request.arrival_time = *time;
      request.prompt_len = csv_token_count(record.fields[request_at], kRequestTokens);
      request.output_len = csv_token_count(record.fields[response_at], kResponseTokens);
    } catch (const CsvFieldError& issue) {
      context.error(record.line, issue.column, issue.message);
      continue;
    }
    origin = std::min(origin, request.arrival_time);
    if (!burstgpt.model.empty() && record.fields[columns.at(kModel)] != burstgpt.model) {
      context.drop("skipped: Model is not '" + burstgpt.model + "' (filter)", record.line, kModel);
      continue;
    }
    if (!burstgpt.log_type.empty() && record.fields[columns.at(kLogType)] != burstgpt.log_type) {
      context.drop("skipped: Log Type is not '" + burstgpt.log_type + "' (filter)", record.line, kLogType);
      continue;
    }
    if (request.output_len == 0) {
      context.drop("skipped: Response tokens is 0 (a failed request in BurstGPT)", record.line, kResponseTokens);
      continue;
    }
    if (request.prompt_len == 0) {
      context.drop("skipped: Request tokens is 0 (no prompt to replay)", record.line, kRequestTokens);
      continue;
    }
    request.prompt_kind = PromptKind::length;
    request.source_line = record.line;
    trace.requests.push_back(std::move(request));
  }
  for (TraceRequest& request : trace.requests) request.arrival_time -= origin;
  context.finish(trace);
  return trace;
}

Trace read_burstgpt_trace(const std::string& path, const BurstGptOptions& burstgpt, const ReadOptions& options,
                          ReadReport* report) {
  std::ifstream in = open_trace_input(path);
  return read_burstgpt_trace(in, path, burstgpt, options, report);
}

}  // namespace pagedllm::trace
