// What the engine records per step; per-request times live in sched::RequestTimes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace pagedllm::engine {

struct StepMetrics {
  int64_t step = 0;
  double start_time = 0.0;
  double end_time = 0.0;
  int32_t num_running = 0;  // groups, after scheduling
  int32_t num_waiting = 0;
  int32_t num_swapped = 0;
  int32_t num_batched_tokens = 0;
  int32_t num_prefill_tokens = 0;
  int32_t num_decode_tokens = 0;
  int32_t num_scheduled_seqs = 0;
  double kv_usage = 0.0;  // device blocks used / total, after scheduling
  int32_t device_blocks_used = 0;
  int32_t device_blocks_cached = 0;  // holding prefix-cache content, in use or free
  int32_t host_blocks_used = 0;      // swapped-out KV
  int64_t internal_waste_slots = 0;  // reserved but unfilled slots in used device blocks
  int32_t blocks_swapped_out = 0;
  int32_t blocks_swapped_in = 0;
  int32_t blocks_copied = 0;
  int32_t preemptions_recompute = 0;
  int32_t preemptions_swap = 0;
};

struct EngineCounters {
  // Each request's whole prompt, once, when its first token is sampled: vLLM's
  // prompt_tokens_total (prefix-cache hits included, recomputation not counted again).
  int64_t prompt_tokens = 0;
  int64_t prompt_tokens_computed = 0;  // prefill work: recomputation included, prefix-cache hits not
  int64_t generation_tokens = 0;       // tokens sampled
  int64_t preemptions_recompute = 0;
  int64_t preemptions_swap = 0;
  int64_t blocks_swapped_out = 0;
  int64_t blocks_swapped_in = 0;
  int64_t requests_finished = 0;
  int64_t requests_aborted = 0;
  int64_t requests_rejected = 0;
  // Speculative decoding, as vLLM's spec_decode counters: verify passes of a sequence with
  // proposals (drafts), the proposals in them, those accepted, and accepted per position (entry j:
  // drafts whose proposal j was accepted; sized by the longest draft seen).
  int64_t decode_passes =
      0;  // sampled decode steps of sequences that may speculate (not beams), verify passes included
  int64_t spec_drafts = 0;
  int64_t spec_draft_tokens = 0;
  int64_t spec_accepted_tokens = 0;
  std::vector<int64_t> spec_accepted_per_position;
  // A draft model's own work (spec::DraftModelProposer): its forward passes, the tokens they
  // computed (catch-up and proposals), and the time they took (part of the steps' time).
  int64_t draft_passes = 0;
  int64_t draft_tokens_computed = 0;
  double draft_seconds = 0.0;

  // Speculative decoding's rates, as vLLM logs them (0 where nothing was proposed):
  double spec_acceptance_rate() const {
    return spec_draft_tokens > 0 ? ratio(spec_accepted_tokens, spec_draft_tokens) : 0.0;
  }
  // Tokens a verify pass yields on average: its accepted proposals and its own token.
  double spec_mean_acceptance_length() const {
    return spec_drafts > 0 ? 1.0 + ratio(spec_accepted_tokens, spec_drafts) : 0.0;
  }
  // Per position j, the fraction of drafts whose proposal j was accepted (the simulator's
  // simulated_acceptance), and drafts per decode pass (its simulated_draft_rate).
  std::vector<double> spec_accepted_rate_per_position() const {
    std::vector<double> rates;
    for (const int64_t accepted : spec_accepted_per_position) rates.push_back(ratio(accepted, spec_drafts));
    return rates;
  }
  double spec_draft_rate() const { return decode_passes > 0 ? ratio(spec_drafts, decode_passes) : 0.0; }

  // A cluster's replicas as one.
  EngineCounters& operator+=(const EngineCounters& other) {
    prompt_tokens += other.prompt_tokens;
    prompt_tokens_computed += other.prompt_tokens_computed;
    generation_tokens += other.generation_tokens;
    preemptions_recompute += other.preemptions_recompute;
    preemptions_swap += other.preemptions_swap;
    blocks_swapped_out += other.blocks_swapped_out;
    blocks_swapped_in += other.blocks_swapped_in;
    requests_finished += other.requests_finished;
    requests_aborted += other.requests_aborted;
    requests_rejected += other.requests_rejected;
    decode_passes += other.decode_passes;
    spec_drafts += other.spec_drafts;
    spec_draft_tokens += other.spec_draft_tokens;
    spec_accepted_tokens += other.spec_accepted_tokens;
    draft_passes += other.draft_passes;
    draft_tokens_computed += other.draft_tokens_computed;
    draft_seconds += other.draft_seconds;
    spec_accepted_per_position.resize(
        std::max(spec_accepted_per_position.size(), other.spec_accepted_per_position.size()), 0);
    for (size_t j = 0; j < other.spec_accepted_per_position.size(); ++j) {
      spec_accepted_per_position[j] += other.spec_accepted_per_position[j];
    }
    return *this;
  }

 private:
  static double ratio(int64_t a, int64_t b) { return static_cast<double>(a) / static_cast<double>(b); }
};

}  // namespace pagedllm::engine
