// What a trace holds, in numbers: arrivals, lengths, sampling modes, prefix sharing.
#pragma once

#include <cstdint>
#include <iosfwd>

#include <nlohmann/json.hpp>

#include "core/trace/trace.h"

namespace pagedllm::trace {

// A token-count distribution; percentiles by numpy's default (linear interpolation between
// closest ranks). All zero when count is 0.
struct LengthSummary {
  int64_t count = 0;
  double min = 0.0;
  double mean = 0.0;
  double p50 = 0.0;
  double p90 = 0.0;
  double p99 = 0.0;
  double max = 0.0;
};

struct TraceStats {
  int64_t num_requests = 0;
  int64_t num_sessions = 0;  // distinct non-empty session ids
  double duration = 0.0;     // seconds: last arrival - first arrival
  // 1 / mean inter-arrival time = (num_requests - 1) / duration; 0 when duration is 0.
  double mean_rate = 0.0;
  // Standard deviation / mean of the inter-arrival times (population std): 1 for Poisson
  // arrivals, 1 / sqrt(shape) for gamma ones; 0 with fewer than 2 requests or zero mean.
  double interarrival_cv = 0.0;
  // Prompt lengths known without a tokenizer: prompt_len (length and text kinds; text prompts with
  // prompt_len 0 are unknown and left out) or the token count.
  LengthSummary prompt_len;
  LengthSummary output_len;
  int64_t num_unknown_prompt_len = 0;
  int64_t total_prompt_tokens = 0;  // over the known prompt lengths
  int64_t total_output_tokens = 0;
  int64_t num_parallel_sampling = 0;  // sampling.n > 1 without beam search
  int64_t num_beam_search = 0;        // sampling.beam_width > 0
  int64_t num_prefix_blocks = 0;      // prefix_block_ids entries over all requests
  int64_t num_distinct_prefix_blocks = 0;
  // Fraction of prefix blocks whose id appeared earlier in the trace: an upper bound on prefix-cache
  // block hits with an unbounded cache. 0 without blocks.
  double prefix_reuse_fraction = 0.0;
  int64_t num_text_prompts = 0;
  int64_t num_token_prompts = 0;
  int64_t num_length_prompts = 0;
};

TraceStats compute_trace_stats(const Trace& trace);

// One aligned "name: value" line per statistic.
void print_trace_stats(const TraceStats& stats, std::ostream& out);

nlohmann::json to_json(const TraceStats& stats);

}  // namespace pagedllm::trace
