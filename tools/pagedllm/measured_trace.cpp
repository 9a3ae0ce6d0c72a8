#include "tools/pagedllm/measured_trace.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "core/spec/speculation_tally.h"

namespace pagedllm::cli {

namespace {

const nlohmann::json& field(const nlohmann::json& entry, const char* key, const std::string& where) {
  const auto found = entry.find(key);
  if (found == entry.end()) throw std::invalid_argument(where + ": no \"" + key + "\"");
  return *found;
}

int64_t integer(const nlohmann::json& entry, const char* key, const std::string& where) {
  const nlohmann::json& value = field(entry, key, where);
  if (!value.is_number_integer() || value.get<int64_t>() < 0) {
    throw std::invalid_argument(where + ": \"" + key + "\" must be a non-negative integer, got " + value.dump());
  }
  return value.get<int64_t>();
}

// A request entry's "spec_decode" (run_report.cpp's names) as the simulator's rates.
spec::SimulatedAcceptance rates_of(const nlohmann::json& spec_decode, const std::string& where) {
  spec::SpeculationTally tally;
  tally.decode_passes = integer(spec_decode, "decode_passes", where);
  tally.drafts = integer(spec_decode, "num_drafts", where);
  tally.draft_tokens = integer(spec_decode, "num_draft_tokens", where);
  const nlohmann::json& per_position = field(spec_decode, "num_accepted_tokens_per_pos", where);
  if (!per_position.is_array()) throw std::invalid_argument(where + ": num_accepted_tokens_per_pos is not an array");
  for (const nlohmann::json& accepted : per_position) {
    if (!accepted.is_number_integer() || accepted.get<int64_t>() < 0 || accepted.get<int64_t>() > tally.drafts) {
      throw std::invalid_argument(where + ": num_accepted_tokens_per_pos: " + accepted.dump() +
                                  " is not a count of at most num_drafts");
    }
    tally.accepted_per_position.push_back(accepted.get<int64_t>());
  }
  if (tally.drafts > tally.decode_passes) throw std::invalid_argument(where + ": num_drafts is above decode_passes");
  return tally.rates();
}

}  // namespace

trace::Trace measured_trace(const trace::Trace& trace, const nlohmann::json& report, const std::string& report_name,
                            MeasuredTraceReport& counts) {
  const auto requests = report.find("requests");
  if (!report.is_object() || requests == report.end() || !requests->is_array()) {
    throw std::invalid_argument(report_name +
                                ": not a replay report (no \"requests\" array; write one with replay -o)");
  }
  trace::Trace result = trace;
  std::vector<bool> seen(trace.requests.size(), false);
  for (size_t i = 0; i < requests->size(); ++i) {
    const nlohmann::json& entry = (*requests)[i];
    const std::string where = report_name + ": requests[" + std::to_string(i) + "]";
    const int64_t id = integer(entry, "id", where);
    if (id >= static_cast<int64_t>(trace.requests.size())) {
      throw std::invalid_argument(where + ": id " + std::to_string(id) + " is not in the trace (" +
                                  std::to_string(trace.requests.size()) + " requests): was it replayed from another?");
    }
    if (seen[static_cast<size_t>(id)]) throw std::invalid_argument(where + ": id " + std::to_string(id) + " repeats");
    seen[static_cast<size_t>(id)] = true;
    const nlohmann::json& success = field(entry, "success", where);
    if (!success.is_boolean() || !success.get<bool>()) {
      ++counts.num_failed;
      continue;
    }
    trace::TraceRequest& request = result.requests[static_cast<size_t>(id)];
    // output_tokens counts every sample of the request: n samples (or beams) of one length each.
    const int64_t samples = request.sampling ? std::max(request.sampling->n, 1) : 1;
    const int64_t output_tokens = integer(entry, "output_tokens", where);
    if (output_tokens < samples) {
      throw std::invalid_argument(where + ": " + std::to_string(output_tokens) + " output tokens for " +
                                  std::to_string(samples) + " samples");
    }
    request.output_len = static_cast<int32_t>(output_tokens / samples);
    ++counts.num_measured;
    const auto spec_decode = entry.find("spec_decode");
    if (spec_decode != entry.end()) {
      request.simulated_speculation = rates_of(*spec_decode, where + ".spec_decode");
      ++counts.num_speculating;
    }
  }
  return result;
}

}  // namespace pagedllm::cli
