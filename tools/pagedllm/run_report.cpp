#include "tools/pagedllm/run_report.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string_view>

#include "core/metrics/engine_summary.h"
#include "core/metrics/engine_summary_report.h"
#include "core/metrics/request_records.h"
#include "core/metrics/serving_metrics.h"
#include "core/metrics/serving_metrics_json.h"
#include "core/metrics/serving_metrics_report.h"

namespace pagedllm::cli {

namespace po = boost::program_options;

void add_run_report_options(po::options_description& description, RunReportOptions& options) {
  po::options_description report("report");
  // clang-format off
  report.add_options()
      ("goodput", po::value(&options.goodput)->multitoken(),
       "service-level objectives for goodput, in ms: ttft:MS tpot:MS e2el:MS (as vLLM)")
      ("percentiles", po::value(&options.percentiles)->default_value(options.percentiles),
       "latency percentiles to report, comma-separated")
      ("output-json,o", po::value(&options.output_json), "write metrics, engine summary, timeline and per-request "
                                                        "latencies to this JSON file (tools/plot_replay.py plots it)");
  // clang-format on
  description.add(report);
}

double parse_number(const std::string& text, const std::string& option, bool allow_infinite) {
  size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || std::isnan(value) || (!allow_infinite && std::isinf(value))) {
    throw po::error(option + ": '" + text + "' is not a " + (allow_infinite ? "number" : "finite number"));
  }
  return value;
}

metrics::MetricsOptions metrics_options(const RunReportOptions& options) {
  metrics::MetricsOptions result;
  result.percentiles.clear();
  std::stringstream list(options.percentiles);
  for (std::string item; std::getline(list, item, ',');)
    result.percentiles.push_back(parse_number(item, "--percentiles"));
  for (const std::string& objective : options.goodput) {
    const size_t colon = objective.find(':');
    if (colon == std::string::npos) throw po::error("--goodput: expected NAME:MS, got '" + objective + "'");
    const std::string name = objective.substr(0, colon);
    const double ms = parse_number(objective.substr(colon + 1), "--goodput " + name);
    if (name == "ttft") {
      result.slo.ttft_ms = ms;
    } else if (name == "tpot") {
      result.slo.tpot_ms = ms;
    } else if (name == "e2el") {
      result.slo.e2el_ms = ms;
    } else {
      throw po::error("--goodput: unknown objective '" + name + "' (expected ttft, tpot or e2el)");
    }
  }
  return result;
}

nlohmann::json request_json(const metrics::RequestRecord& record) {
  nlohmann::json entry = {{"id", record.id},
                          {"send_time", record.send_time},
                          {"prompt_tokens", record.prompt_tokens},
                          {"output_tokens", record.output_tokens},
                          {"success", record.success}};
  if (!record.success) {
    entry["error"] = record.error;
    return entry;
  }
  const double ttft = record.first_token_time - record.send_time;
  const double e2el = record.end_time - record.send_time;
  entry["ttft_ms"] = 1e3 * ttft;
  entry["e2el_ms"] = 1e3 * e2el;
  entry["tpot_ms"] = record.output_tokens > 1 ? nlohmann::json(1e3 * (e2el - ttft) / (record.output_tokens - 1))
                                              : nlohmann::json(nullptr);
  if (record.speculation) {
    // vLLM's counter names, for this request; a trace's simulated_speculation is made from them.
    const spec::SpeculationTally& tally = *record.speculation;
    entry["spec_decode"] = {{"decode_passes", tally.decode_passes},
                            {"num_drafts", tally.drafts},
                            {"num_draft_tokens", tally.draft_tokens},
                            {"num_accepted_tokens_per_pos", tally.accepted_per_position}};
  }
  return entry;
}

RequestsJsonSpill::RequestsJsonSpill(std::string path) : path_(std::move(path)) {
  file_.open(path_, std::ios::binary | std::ios::trunc);
  if (!file_) throw std::runtime_error(path_ + ": cannot create (the report's request entries go there first)");
}

RequestsJsonSpill::~RequestsJsonSpill() {
  file_.close();
  std::remove(path_.c_str());
}

void RequestsJsonSpill::add(const metrics::RequestRecord& record) {
  // An element of a top-level array: nlohmann's dump(1) puts it two spaces in.
  const std::string entry = request_json(record).dump(1);
  file_ << (num_entries_++ == 0 ? "  " : ",\n  ");
  for (const char c : entry) {
    file_ << c;
    if (c == '\n') file_ << "  ";
  }
}

void RequestsJsonSpill::write_array(std::ostream& out) {
  if (num_entries_ == 0) {
    out << "[]";
    return;
  }
  file_.flush();
  if (!file_) throw std::runtime_error(path_ + ": write failed");
  std::ifstream in(path_, std::ios::binary);
  out << "[\n" << in.rdbuf() << "\n ]";
}

namespace {

// Stands for the "requests" array in the document until the spill's entries replace it.
constexpr std::string_view kRequestsPlaceholder = "\"pagedllm:requests-spliced-here\"";

nlohmann::json trace_json(const RunReportInput& input) {
  const trace::ReadReport& read = *input.read_report;
  return {{"path", input.trace_path},
          {"lines_read", read.lines_read},
          {"requests_accepted", read.requests_accepted},
          {"lines_skipped", read.lines_skipped},
          {"errors", read.errors.size()},
          {"warnings", read.warnings.size()},
          {"reordered", read.reordered},
          {"rejected_over_length", input.materialized->rejected.size()},
          {"clipped", input.materialized->num_clipped},
          {"clipped_prompt_tokens", input.materialized->num_clipped_prompt_tokens},
          {"clipped_output_tokens", input.materialized->num_clipped_output_tokens}};
}

}  // namespace

int write_run_report(const RunReportInput& input, const RunReportOptions& options, std::ostream& out) {
  std::vector<metrics::RequestRecord> records;
  metrics::ServingMetrics serving;
  if (input.result != nullptr) {
    records = metrics::to_request_records(std::move(*input.result));
    metrics::MetricsOptions with_duration = metrics_options(options);
    const double duration = input.result->end_time - input.result->start_time;
    if (duration > 0.0) with_duration.duration = duration;
    serving = metrics::compute_serving_metrics(records, with_duration);
  } else {
    serving = *input.serving;
  }
  std::vector<metrics::EngineSummary> replicas;
  for (const engine::Engine* engine : input.engines) replicas.push_back(metrics::summarize_engine(*engine));
  const metrics::EngineSummary summary = replicas.size() == 1 ? replicas.front() : metrics::combine(replicas);

  const trace::ReadReport& read = *input.read_report;
  out << "Executor: " << input.executor_description << '\n'
      << "Trace: " << input.trace_path << ": " << read.requests_accepted << " requests accepted, " << read.lines_skipped
      << " lines skipped";
  if (!input.materialized->rejected.empty()) out << ", " << input.materialized->rejected.size() << " rejected (length)";
  if (input.materialized->num_clipped > 0)
    out << ", " << input.materialized->num_clipped << " clipped to max-model-len";
  out << "; " << input.time_mode << " time\n";
  metrics::print_serving_metrics(serving, out);
  if (replicas.size() > 1) {
    out << "Cluster of " << replicas.size() << " replicas (counts summed; usage weighted by busy time):\n";
  }
  metrics::print_engine_summary(summary, out);

  if (!options.output_json.empty()) {
    nlohmann::json document;
    nlohmann::json config = input.config;
    config["executor"] = input.executor;
    config["executor_description"] = input.executor_description;
    config["time"] = input.time_mode;
    document["config"] = config;
    document["trace"] = trace_json(input);
    document["metrics"] = metrics::to_json(serving);
    document["engine"] = metrics::to_json(summary);
    if (replicas.size() > 1) {
      nlohmann::json per_replica = nlohmann::json::array();
      for (const metrics::EngineSummary& replica : replicas) per_replica.push_back(metrics::to_json(replica));
      document["replicas"] = std::move(per_replica);
    }
    const std::vector<metrics::TimelinePoint> timeline =
        metrics::engine_timeline(*input.engines.front(), options.timeline_points);
    document["timeline"] = metrics::to_json(timeline);
    for (const auto& [name, section] : input.sections.items()) document[name] = section;
    std::ofstream file(options.output_json);
    if (input.requests_spill == nullptr) {
      nlohmann::json requests = nlohmann::json::array();
      for (const metrics::RequestRecord& record : records) requests.push_back(request_json(record));
      document["requests"] = std::move(requests);
      file << document.dump(1) << '\n';
    } else {
      document["requests"] = std::string(kRequestsPlaceholder.substr(1, kRequestsPlaceholder.size() - 2));
      const std::string text = document.dump(1);
      const size_t at = text.find(kRequestsPlaceholder);
      file << std::string_view(text).substr(0, at);
      input.requests_spill->write_array(file);
      file << std::string_view(text).substr(at + kRequestsPlaceholder.size()) << '\n';
    }
    if (!file) throw std::runtime_error(options.output_json + ": cannot write");
    out << "wrote " << options.output_json << '\n';
  }
  return 0;
}

}  // namespace pagedllm::cli
