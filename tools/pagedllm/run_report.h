// The report of a replay or simulation: vLLM's serving metrics, the engine's KV and scheduling
// summary, what happened to the trace's lines; on stdout, and as JSON (--output-json) with the
// timeline and per-request latencies that tools/plot_replay.py draws.
#pragma once

#include <boost/program_options.hpp>
#include <cstddef>
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

struct RunReportInput {
  std::string executor;  // cpu | sim
  std::string executor_description;
  std::string trace_path;
  std::string time_mode;
  const trace::ReadReport* read_report = nullptr;
  const trace::MaterializedTrace* materialized = nullptr;  // its requests may have been moved out
  engine::ReplayResult* result = nullptr;                  // consumed: its outputs move into the report's records
  std::vector<const engine::Engine*> engines;              // one per replica; the timeline is the first's
  nlohmann::json config = nlohmann::json::object();        // echoed into the JSON
  nlohmann::json sections = nlohmann::json::object();      // further top-level JSON sections, by name
};

// Prints the report to `out`, writes the JSON file when asked; returns the exit status (0).
// Throws boost::program_options::error for a malformed --goodput or --percentiles value.
int write_run_report(const RunReportInput& input, const RunReportOptions& options, std::ostream& out);

}  // namespace pagedllm::cli
