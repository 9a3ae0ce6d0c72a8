#include "core/metrics/engine_summary_report.h"

#include <cstdio>
#include <ostream>
#include <string>

namespace pagedllm::metrics {
namespace {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), pattern, value);
  return buffer;
}

// "{:<40} {}": vLLM-style label column, the value unpadded.
void summary_row(std::ostream& out, const std::string& label, const std::string& value) {
  std::string padded = label;
  if (padded.size() < 40) padded.append(40 - padded.size(), ' ');
  out << padded << ' ' << value << '\n';
}

std::string count(int64_t value) { return std::to_string(value); }
std::string percent(double fraction) { return format("%.2f", 100.0 * fraction); }

}  // namespace

nlohmann::json to_json(const EngineSummary& s) {
  return {
      {"num_steps", s.num_steps},
      {"busy_seconds", s.busy_seconds},
      {"block_size", s.block_size},
      {"device_blocks_total", s.num_device_blocks},
      {"host_blocks_total", s.num_host_blocks},
      {"kv_usage_mean", s.kv_usage_mean},
      {"kv_usage_peak", s.kv_usage_peak},
      {"host_blocks_peak", s.host_blocks_peak},
      {"internal_waste_mean", s.internal_waste_mean},
      {"prefix_query_tokens", s.prefix_query_tokens},
      {"prefix_hit_tokens", s.prefix_hit_tokens},
      {"prefix_hit_rate", s.prefix_hit_rate},
      {"prompt_tokens_computed", s.counters.prompt_tokens_computed},
      {"generation_tokens", s.counters.generation_tokens},
      {"preemptions_recompute", s.counters.preemptions_recompute},
      {"preemptions_swap", s.counters.preemptions_swap},
      {"blocks_swapped_out", s.counters.blocks_swapped_out},
      {"blocks_swapped_in", s.counters.blocks_swapped_in},
      {"requests_finished", s.counters.requests_finished},
      {"requests_aborted", s.counters.requests_aborted},
      {"requests_rejected", s.counters.requests_rejected},
      {"max_running", s.max_running},
      {"max_waiting", s.max_waiting},
      {"max_swapped", s.max_swapped},
      {"decode_passes", s.counters.decode_passes},
      {"spec_decode_num_drafts", s.counters.spec_drafts},
      {"spec_decode_num_draft_tokens", s.counters.spec_draft_tokens},
      {"spec_decode_num_accepted_tokens", s.counters.spec_accepted_tokens},
      {"spec_decode_num_accepted_tokens_per_pos", s.counters.spec_accepted_per_position},
      {"draft_model_passes", s.counters.draft_passes},
      {"draft_model_tokens_computed", s.counters.draft_tokens_computed},
      {"draft_model_seconds", s.counters.draft_seconds},
  };
}

nlohmann::json to_json(std::span<const TimelinePoint> timeline) {
  nlohmann::json points = nlohmann::json::array();
  for (const TimelinePoint& point : timeline) {
    points.push_back({{"time", point.time},
                      {"num_running", point.num_running},
                      {"num_waiting", point.num_waiting},
                      {"num_swapped", point.num_swapped},
                      {"kv_usage", point.kv_usage},
                      {"device_blocks_used", point.device_blocks_used},
                      {"device_blocks_cached", point.device_blocks_cached},
                      {"host_blocks_used", point.host_blocks_used},
                      {"internal_waste_slots", point.internal_waste_slots},
                      {"num_batched_tokens", point.num_batched_tokens}});
  }
  return points;
}

void print_engine_summary(const EngineSummary& s, std::ostream& out) {
  out << "-------------KV cache and scheduling--------------\n";
  summary_row(out, "Engine steps:", count(s.num_steps));
  summary_row(out, "Busy time (s):", format("%.2f", s.busy_seconds));
  summary_row(
      out, "KV blocks (device / host):",
      count(s.num_device_blocks) + " / " + count(s.num_host_blocks) + "  (" + count(s.block_size) + " tokens each)");
  summary_row(out, "KV usage mean / peak (%):", percent(s.kv_usage_mean) + " / " + percent(s.kv_usage_peak));
  summary_row(out, "Internal waste, mean (% of used slots):", percent(s.internal_waste_mean));
  summary_row(out, "Prefix cache hit rate (%):",
              percent(s.prefix_hit_rate) + "  (" + count(s.prefix_hit_tokens) + " of " + count(s.prefix_query_tokens) +
                  " prompt tokens)");
  summary_row(out, "Prompt tokens computed:", count(s.counters.prompt_tokens_computed));
  summary_row(out, "Preemptions (recompute / swap):",
              count(s.counters.preemptions_recompute) + " / " + count(s.counters.preemptions_swap));
  summary_row(out, "Blocks swapped (out / in):",
              count(s.counters.blocks_swapped_out) + " / " + count(s.counters.blocks_swapped_in));
  summary_row(out, "Peak swapped-out blocks:", count(s.host_blocks_peak));
  summary_row(out, "Max running / waiting / swapped:",
              count(s.max_running) + " / " + count(s.max_waiting) + " / " + count(s.max_swapped));
  if (s.counters.spec_drafts > 0) {
    // vLLM's speculative-decoding log line: acceptance rate over proposals, mean tokens per draft
    // (accepted + the one the verify pass adds), and the acceptance at each position.
    const engine::EngineCounters& c = s.counters;
    summary_row(out, "Spec drafts / proposed / accepted:",
                count(c.spec_drafts) + " / " + count(c.spec_draft_tokens) + " / " + count(c.spec_accepted_tokens));
    summary_row(out, "Spec acceptance rate (%):", percent(c.spec_acceptance_rate()));
    summary_row(out, "Spec mean acceptance length:", format("%.2f", c.spec_mean_acceptance_length()));
    std::string per_position;
    for (const double rate : c.spec_accepted_rate_per_position()) {
      if (!per_position.empty()) per_position += ' ';
      per_position += format("%.2f", rate);
    }
    summary_row(out, "Spec accepted per position:", per_position);
    // What the simulator takes to model this run (simulated_draft_rate, simulated_acceptance).
    summary_row(out, "Spec drafts per decode pass:", format("%.3f", c.spec_draft_rate()));
    if (c.draft_passes > 0) {  // a draft model's own work, within the busy time
      summary_row(
          out, "Draft model passes / tokens / time (s):",
          count(c.draft_passes) + " / " + count(c.draft_tokens_computed) + " / " + format("%.2f", c.draft_seconds));
    }
  }
  out << std::string(50, '=') << '\n';
}

}  // namespace pagedllm::metrics
