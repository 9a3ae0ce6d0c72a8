// pagedllm's own trace format (docs/TRACE_FORMAT.md): JSONL, an optional header line, then one
// request per line. Also the bookkeeping every reader shares (ReadContext), so that each
// converter reports issues, counts and out-of-order arrivals the same way.
#pragma once

#include <cstdint>
#include <fstream>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/trace.h"

namespace pagedllm::trace {

// Reads a JSONL trace. Throws TraceError when the file cannot be opened, for a header that is not
// ours (an unknown version, a bad field), under OnError::fail at the first bad line, and under
// OutOfOrder::refuse at the first arrival that precedes the one before it. `report` may be null.
Trace read_trace_jsonl(const std::string& path, const ReadOptions& options = {}, ReadReport* report = nullptr);
// The same from a stream; `name` stands for the file in issues and in header.source.
Trace read_trace_jsonl(std::istream& in, const std::string& name, const ReadOptions& options = {},
                       ReadReport* report = nullptr);

// Writes the header line, then one line per request with only the fields that are set (or differ
// from their defaults). Numbers are written so that reading the output gives `trace` back exactly.
// Throws TraceError if a prompt text is not valid UTF-8 (JSON cannot carry it).
void write_trace_jsonl(const Trace& trace, std::ostream& out);
// Throws TraceError naming the path if it cannot be opened or written.
void write_trace_jsonl(const Trace& trace, const std::string& path);

// --- Shared by every reader ----------------------------------------------------------------

// One reader's bookkeeping for one input: routes issues under ReadOptions into a ReadReport
// (the caller's, or a private one when the caller passes none) and finishes the trace.
class ReadContext {
 public:
  ReadContext(std::string file, const ReadOptions& options, ReadReport* report);
  ReadContext(const ReadContext&) = delete;  // may point into itself
  ReadContext& operator=(const ReadContext&) = delete;

  const std::string& file() const { return file_; }
  const ReadReport& report() const { return *report_; }

  // A data record (line, row or entry) was seen.
  void count_record() { ++report_->lines_read; }
  // A malformed record: under OnError::fail throws TraceError, otherwise it is listed in
  // report.errors and counted as skipped.
  void error(int64_t line, std::string field, std::string message);
  // The input as a whole cannot be read (whatever OnError says).
  [[noreturn]] void fatal(int64_t line, std::string field, std::string message) const;
  void warning(int64_t line, std::string field, std::string message);
  // A well-formed record dropped by a documented rule (skipped) or kept with a remark: counted per
  // rule and reported as one warning per rule, with its count and first line, by finish().
  void drop(const std::string& rule, int64_t line, const std::string& field = {});
  void remark(const std::string& rule, int64_t line, const std::string& field = {});

  // Ends a read: adds the per-rule warnings, orders trace.requests by arrival as
  // OutOfOrder says (stable sort with one warning, or TraceError naming the first line whose
  // arrival precedes its predecessor's), and sets requests_accepted.
  void finish(Trace& trace);
  // Ends a read whose requests were handed on as they came (JsonlTraceReader): the per-rule
  // warnings and requests_accepted; the order is the caller's to check.
  void finish_stream(int64_t num_accepted);

 private:
  struct RuleCount {
    std::string rule;
    std::string field;
    int64_t num_records = 0;
    int64_t first_line = 0;
  };
  void tally(const std::string& rule, int64_t line, const std::string& field);
  void report_rules();

  std::string file_;
  ReadOptions options_;
  ReadReport own_report_;
  ReadReport* report_;
  std::vector<RuleCount> rules_;
};

// A JSONL trace read one request at a time, in file order, with read_trace_jsonl's checks and
// report: it holds one line, so a trace of any length streams in constant memory. A stream
// cannot sort: arrivals out of order are passed on as they are and first_out_of_order_line()
// names the first, for the caller to decide (read_trace_jsonl sorts or refuses as ReadOptions
// says). Throws TraceError as read_trace_jsonl does (an unopenable file, a bad header, the
// first bad line under OnError::fail).
class JsonlTraceReader {
 public:
  JsonlTraceReader(const std::string& path, const ReadOptions& options = {}, ReadReport* report = nullptr);
  // Reads `in`, which must outlive the reader; `name` stands for the file in issues.
  JsonlTraceReader(std::istream& in, const std::string& name, const ReadOptions& options = {},
                   ReadReport* report = nullptr);
  JsonlTraceReader(const JsonlTraceReader&) = delete;  // in_ may point at file_
  JsonlTraceReader& operator=(const JsonlTraceReader&) = delete;

  // The header line's settings (the defaults when there is none), read on the first call.
  const TraceHeader& header();
  // The next well-formed request (source_line set), or nullopt at the end of the input; bad
  // lines on the way are reported (or thrown) as ReadOptions::on_error says.
  std::optional<TraceRequest> next();
  // The first line whose arrival precedes the request before it; 0 while there is none.
  int64_t first_out_of_order_line() const { return first_out_of_order_line_; }
  int64_t num_accepted() const { return num_accepted_; }
  ReadContext& context() { return context_; }
  // After the last next(): the per-rule warnings and requests_accepted (ReadContext::finish_stream).
  void finish();

 private:
  bool next_significant_line(std::string_view& line);  // skips blank and comment lines

  std::ifstream file_;  // when opened by path
  std::istream* in_;
  ReadContext context_;
  TraceHeader header_;
  bool primed_ = false;         // the header line (or its absence) has been read
  bool pending_first_ = false;  // text_ holds the first data line, read while looking for a header
  std::string text_;            // the current line
  int64_t line_number_ = 0;     // of text_, 1-based
  int64_t num_accepted_ = 0;
  double last_arrival_ = 0.0;
  int64_t first_out_of_order_line_ = 0;
};

// nlohmann's exception text without its id ("[json.exception.parse_error.101] ") and, when each
// line was parsed on its own, without the parser's "line 1".
std::string json_error_message(std::string_view what, bool line_by_line = true);

// Opens `path` for reading (binary); throws TraceError naming it when that fails.
std::ifstream open_trace_input(const std::string& path);

}  // namespace pagedllm::trace
