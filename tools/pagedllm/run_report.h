// The report of a replay or simulation: vLLM's serving metrics, the engine's KV and scheduling
// summary, what happened to the trace's lines; on stdout, and as JSON (--output-json) with the
// timeline and per-request latencies that tools/plot_replay.py draws.
#pragma once

#include <boost/program_options.hpp>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/engine/replay.h"
#include "core/metrics/request_record.h"
#include "core/metrics/serving_metrics.h"
#include "core/trace/materialize.h"
#include "core/trace/trace.h"

namespace pagedllm::cli {

struct RunReportOptions {
  std::vector<std::string> goodput;      // "ttft:MS", "tpot:MS", "e2el:MS" (vLLM's --goodput)
  std::string percentiles = "50,90,99";  // vLLM's --metric-percentiles
  std::string output_json;
  size_t timeline_points = 2000;
};

void add_run_report_options(boost::program_options::options_description& description, RunReportOptions& options);

// A number given to `option`; throws boost::program_options::error naming the option and the text.
double parse_number(const std::string& text, const std::string& option, bool allow_infinite = false);
// --percentiles and --goodput as metrics options; throws boost::program_options::error.
metrics::MetricsOptions metrics_options(const RunReportOptions& options);
// One request of the JSON report's "requests" list (ms; TPOT null below two output tokens).
nlohmann::json request_json(const metrics::RequestRecord& record);

// The JSON report's "requests" entries of a long run, written to a file beside the report as the
// records come (in the report's order) instead of held, then spliced into the report by
// write_run_report; the file is removed when this is destroyed.
class RequestsJsonSpill {
 public:
  // Throws std::runtime_error naming the file when it cannot be created.
  explicit RequestsJsonSpill(std::string path);
  ~RequestsJsonSpill();
  RequestsJsonSpill(const RequestsJsonSpill&) = delete;
  RequestsJsonSpill& operator=(const RequestsJsonSpill&) = delete;

  void add(const metrics::RequestRecord& record);
  // The entries as the JSON array the report holds, indented as nlohmann's dump(1) indents it
  // one level down, to `out`.
  void write_array(std::ostream& out);

 private:
  std::string path_;
  std::ofstream file_;
  int64_t num_entries_ = 0;
};

struct RunReportInput {
  std::string executor;  // cpu | sim
  std::string executor_description;
  std::string trace_path;
  std::string time_mode;
  const trace::ReadReport* read_report = nullptr;
  const trace::MaterializeReport* materialized = nullptr;
  // The requests' outcomes: either a run's result (consumed: its outputs move into the report's
  // records), or a streamed run's metrics (serving, with its end time in streamed_end_time) and
  // JSON entries (requests_spill, needed only with --output-json).
  engine::ReplayResult* result = nullptr;
  const metrics::ServingMetrics* serving = nullptr;
  RequestsJsonSpill* requests_spill = nullptr;
  std::vector<const engine::Engine*> engines;          // one per replica; the timeline is the first's
  nlohmann::json config = nlohmann::json::object();    // echoed into the JSON
  nlohmann::json sections = nlohmann::json::object();  // further top-level JSON sections, by name
};

// Prints the report to `out`, writes the JSON file when asked; returns the exit status (0).
// Throws boost::program_options::error for a malformed --goodput or --percentiles value.
int write_run_report(const RunReportInput& input, const RunReportOptions& options, std::ostream& out);

}  // namespace pagedllm::cli
