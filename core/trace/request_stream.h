// A pagedllm JSONL trace turned into engine requests as they are pulled: one line read, parsed
// and materialized per request, so that a simulation of a trace of any length holds only the
// requests in flight (issue 22). The requests are exactly those read_trace_jsonl +
// materialize_requests make (ids counted over the accepted lines, prompts written at once), as
// long as the file's arrivals are in order: a stream cannot sort, so an arrival out of order is
// an error here. Callers that want the whole-file behaviour for such a file check first with a
// scan (scan_trace_jsonl) and read it whole instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/engine/request_source.h"
#include "core/trace/materialize.h"
#include "core/trace/trace.h"
#include "core/trace/trace_jsonl.h"

namespace pagedllm::trace {

struct TraceStreamConfig {
  std::string path{};
  ReadOptions read{};
  MaterializeConfig materialize{};
  int64_t max_requests = 0;       // stop after this many accepted requests; 0 = all
  bool arrivals_at_zero = false;  // every request arrives at time 0 (`--time fast`)
  int64_t expected_count = 0;     // for progress (a scan's count); 0 = unknown
};

class TraceRequestStream final : public engine::RequestSource {
 public:
  // Opens the file and reads its header; throws TraceError (unopenable file, bad header) or
  // std::invalid_argument (a bad MaterializeConfig).
  explicit TraceRequestStream(TraceStreamConfig config);

  // Throws TraceError naming the line for an arrival that precedes the one before it, and for
  // the first bad line under OnError::fail.
  std::optional<sched::Request> next() override;
  int64_t expected_count() const override { return config_.expected_count; }

  const ReadReport& read_report() const { return read_report_; }
  const MaterializeReport& materialize_report() const { return materializer_.report(); }

 private:
  TraceStreamConfig config_;
  ReadReport read_report_;
  JsonlTraceReader reader_;
  RequestMaterializer materializer_;
  int64_t num_read_ = 0;  // accepted trace requests so far: the next one's id
};

// What a full pass over a JSONL trace shows, without keeping its requests: the reader's report
// (requests_accepted counts every well-formed line) and the first arrival out of order, if any.
struct TraceScan {
  ReadReport report;
  int64_t first_out_of_order_line = 0;  // 0 = the arrivals are in order: the file can stream
};
// Throws TraceError as read_trace_jsonl does.
TraceScan scan_trace_jsonl(const std::string& path, const ReadOptions& options);

}  // namespace pagedllm::trace
