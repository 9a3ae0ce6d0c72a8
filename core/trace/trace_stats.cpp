#include "core/trace/trace_stats.h"

#include "core/common/numpy_stats.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <string>
#include <unordered_set>
#include <vector>

namespace pagedllm::trace {
namespace {

LengthSummary summarize(std::vector<double> values) {
  LengthSummary summary;
  if (values.empty()) return summary;
  std::sort(values.begin(), values.end());
  double sum = 0.0;
  for (const double value : values) sum += value;
  summary.count = static_cast<int64_t>(values.size());
  summary.min = values.front();
  summary.max = values.back();
  summary.mean = sum / static_cast<double>(values.size());
  summary.p50 = stats::percentile(values, 50.0);
  summary.p90 = stats::percentile(values, 90.0);
  summary.p99 = stats::percentile(values, 99.0);
  return summary;
}

// Prompt tokens known without tokenizing; -1 when unknown.
int64_t known_prompt_len(const TraceRequest& request) {
  switch (request.prompt_kind) {
    case PromptKind::tokens:
      return static_cast<int64_t>(request.prompt_tokens.size());
    case PromptKind::text:
      return request.prompt_len > 0 ? request.prompt_len : -1;
    case PromptKind::length:
      return request.prompt_len;
  }
  return -1;
}

void add_arrival_stats(const Trace& trace, TraceStats& stats) {
  std::vector<double> arrivals;
  arrivals.reserve(trace.requests.size());
  for (const TraceRequest& request : trace.requests) arrivals.push_back(request.arrival_time);
  if (arrivals.size() < 2) return;
  std::sort(arrivals.begin(), arrivals.end());  // a trace is sorted; do not rely on it here
  stats.duration = arrivals.back() - arrivals.front();
  const double num_gaps = static_cast<double>(arrivals.size() - 1);
  if (stats.duration > 0.0) stats.mean_rate = num_gaps / stats.duration;
  const double mean_gap = stats.duration / num_gaps;
  if (mean_gap <= 0.0) return;
  double squares = 0.0;
  for (size_t i = 1; i < arrivals.size(); ++i) {
    const double deviation = (arrivals[i] - arrivals[i - 1]) - mean_gap;
    squares += deviation * deviation;
  }
  stats.interarrival_cv = std::sqrt(squares / num_gaps) / mean_gap;
}

nlohmann::json to_json(const LengthSummary& summary) {
  return {{"count", summary.count}, {"min", summary.min}, {"mean", summary.mean}, {"p50", summary.p50},
          {"p90", summary.p90},     {"p99", summary.p99}, {"max", summary.max}};
}

}  // namespace

TraceStats compute_trace_stats(const Trace& trace) {
  TraceStats stats;
  stats.num_requests = static_cast<int64_t>(trace.requests.size());
  add_arrival_stats(trace, stats);
  std::vector<double> prompt_lens;
  std::vector<double> output_lens;
  std::unordered_set<std::string> sessions;
  std::unordered_set<uint64_t> block_ids;
  for (const TraceRequest& request : trace.requests) {
    const int64_t prompt_len = known_prompt_len(request);
    if (prompt_len >= 0) {
      prompt_lens.push_back(static_cast<double>(prompt_len));
      stats.total_prompt_tokens += prompt_len;
    } else {
      ++stats.num_unknown_prompt_len;
    }
    output_lens.push_back(request.output_len);
    stats.total_output_tokens += request.output_len;
    if (!request.session_id.empty()) sessions.insert(request.session_id);
    if (request.sampling) {
      if (request.sampling->use_beam_search()) {
        ++stats.num_beam_search;
      } else if (request.sampling->n > 1) {
        ++stats.num_parallel_sampling;
      }
    }
    for (const uint64_t id : request.prefix_block_ids) block_ids.insert(id);
    stats.num_prefix_blocks += static_cast<int64_t>(request.prefix_block_ids.size());
    switch (request.prompt_kind) {
      case PromptKind::text:
        ++stats.num_text_prompts;
        break;
      case PromptKind::tokens:
        ++stats.num_token_prompts;
        break;
      case PromptKind::length:
        ++stats.num_length_prompts;
        break;
    }
  }
  stats.num_sessions = static_cast<int64_t>(sessions.size());
  stats.num_distinct_prefix_blocks = static_cast<int64_t>(block_ids.size());
  if (stats.num_prefix_blocks > 0) {
    // Every occurrence but the first of each id repeats an earlier one.
    stats.prefix_reuse_fraction = static_cast<double>(stats.num_prefix_blocks - stats.num_distinct_prefix_blocks) /
                                  static_cast<double>(stats.num_prefix_blocks);
  }
  stats.prompt_len = summarize(std::move(prompt_lens));
  stats.output_len = summarize(std::move(output_lens));
  return stats;
}

void print_trace_stats(const TraceStats& stats, std::ostream& out) {
  const std::ios_base::fmtflags flags = out.flags();
  const std::streamsize precision = out.precision();
  out << std::fixed << std::setprecision(2);
  const auto line = [&out](const char* name) -> std::ostream& { return out << std::left << std::setw(36) << name; };
  line("Requests:") << stats.num_requests << "\n";
  line("Sessions:") << stats.num_sessions << "\n";
  line("Duration (s):") << stats.duration << "\n";
  line("Mean rate (req/s):") << stats.mean_rate << "\n";
  line("Inter-arrival CV:") << stats.interarrival_cv << "\n";
  line("Prompts (text / tokens / length):")
      << stats.num_text_prompts << " / " << stats.num_token_prompts << " / " << stats.num_length_prompts << "\n";
  if (stats.num_unknown_prompt_len > 0) line("Prompts of unknown length:") << stats.num_unknown_prompt_len << "\n";
  line("Total prompt tokens:") << stats.total_prompt_tokens << "\n";
  line("Total output tokens:") << stats.total_output_tokens << "\n";
  line("Parallel sampling requests:") << stats.num_parallel_sampling << "\n";
  line("Beam search requests:") << stats.num_beam_search << "\n";
  line("Prefix blocks (distinct):") << stats.num_prefix_blocks << " (" << stats.num_distinct_prefix_blocks << ")\n";
  line("Prefix blocks seen before:") << 100.0 * stats.prefix_reuse_fraction << " %\n";
  out << std::left << std::setw(10) << "Length" << std::right;
  for (const char* column : {"min", "mean", "p50", "p90", "p99", "max"}) out << std::setw(12) << column;
  out << "\n";
  const auto row = [&out](const char* name, const LengthSummary& summary) {
    out << std::left << std::setw(10) << name << std::right;
    for (const double value : {summary.min, summary.mean, summary.p50, summary.p90, summary.p99, summary.max}) {
      out << std::setw(12) << value;
    }
    out << "\n";
  };
  row("prompt", stats.prompt_len);
  row("output", stats.output_len);
  out.flags(flags);
  out.precision(precision);
}

nlohmann::json to_json(const TraceStats& stats) {
  return {
      {"num_requests", stats.num_requests},
      {"num_sessions", stats.num_sessions},
      {"duration", stats.duration},
      {"mean_rate", stats.mean_rate},
      {"interarrival_cv", stats.interarrival_cv},
      {"prompt_len", to_json(stats.prompt_len)},
      {"output_len", to_json(stats.output_len)},
      {"num_unknown_prompt_len", stats.num_unknown_prompt_len},
      {"total_prompt_tokens", stats.total_prompt_tokens},
      {"total_output_tokens", stats.total_output_tokens},
      {"num_parallel_sampling", stats.num_parallel_sampling},
      {"num_beam_search", stats.num_beam_search},
      {"num_prefix_blocks", stats.num_prefix_blocks},
      {"num_distinct_prefix_blocks", stats.num_distinct_prefix_blocks},
      {"prefix_reuse_fraction", stats.prefix_reuse_fraction},
      {"prompt_kinds",
       {{"text", stats.num_text_prompts}, {"tokens", stats.num_token_prompts}, {"length", stats.num_length_prompts}}},
  };
}

}  // namespace pagedllm::trace
