#include "core/trace/request_stream.h"

#include <utility>

namespace pagedllm::trace {

TraceRequestStream::TraceRequestStream(TraceStreamConfig config)
    : config_(std::move(config)),
      reader_(config_.path, config_.read, &read_report_),
      materializer_(config_.materialize, reader_.header().prefix_block_tokens, config_.path) {}

std::optional<sched::Request> TraceRequestStream::next() {
  for (;;) {
    if (config_.max_requests > 0 && num_read_ >= config_.max_requests) return std::nullopt;
    std::optional<TraceRequest> entry = reader_.next();
    if (!entry) {
      reader_.finish();
      return std::nullopt;
    }
    if (reader_.first_out_of_order_line() == entry->source_line) {
      reader_.context().fatal(entry->source_line, "arrival_time",
                              "arrival precedes the previous request's: a trace read as a stream must be in arrival "
                              "order (`pagedllm trace convert` writes it sorted)");
    }
    const auto index = static_cast<size_t>(num_read_++);
    std::optional<sched::Request> request = materializer_.materialize(*entry, index);
    if (!request) continue;  // left out: materialize_report() names it
    if (config_.arrivals_at_zero) request->arrival_time = 0.0;
    return request;
  }
}

TraceScan scan_trace_jsonl(const std::string& path, const ReadOptions& options) {
  TraceScan scan;
  JsonlTraceReader reader(path, options, &scan.report);
  while (reader.next()) {
  }
  reader.finish();
  scan.first_out_of_order_line = reader.first_out_of_order_line();
  return scan;
}

}  // namespace pagedllm::trace
