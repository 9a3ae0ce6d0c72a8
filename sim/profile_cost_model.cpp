#include "sim/profile_cost_model.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/sched/sampling_params.h"
#include "sim/profile_interpolation.h"

namespace pagedllm::sim {
namespace {

// The sampler's threshold for greedy (vLLM's _SAMPLING_EPS): below it no random draw is made.
constexpr float kGreedyTemperature = 1e-5f;

bool samples_randomly(const sched::ScheduledSequence& scheduled) {
  return scheduled.params != nullptr && scheduled.params->temperature >= kGreedyTemperature;
}

// Where a part's forward time goes, by the table's own slope along the context: what grows with
// the context is attention; the rest (projections, MLP, lm_head, sampling) is linear.
struct Part {
  double seconds = 0.0;    // the table's time, overhead included
  double attention = 0.0;  // the context-dependent share of it
};

}  // namespace

ProfileCostModel::ProfileCostModel(ProfileCostModelConfig config) : config_(std::move(config)) {
  validate(config_.profile);
}

double ProfileCostModel::decode_seconds(double num_sequences, double context) const {
  return std::max(0.0, interpolate(config_.profile.decode, num_sequences, context));
}

double ProfileCostModel::prefill_seconds(double chunk_tokens, double context_before) const {
  return std::max(0.0, interpolate(config_.profile.prefill, chunk_tokens, context_before));
}

double ProfileCostModel::engine_overhead_seconds(double num_sequences) const {
  const ProfileCurve& curve = config_.profile.engine_overhead;
  if (curve.points.empty()) return 0.0;
  return std::max(0.0, interpolate(curve.points, curve.seconds, num_sequences));
}

StepCost ProfileCostModel::step_cost(const sched::StepPlan& plan) const {
  const StepProfile& profile = config_.profile;
  StepCost cost;
  std::vector<Part> parts;
  double sampling_extra = 0.0;

  int32_t num_decodes = 0;
  double decode_context = 0.0;
  for (const sched::ScheduledSequence& scheduled : plan.sequences) {
    // A verify pass of k proposals computes and samples k + 1 rows, each priced as a decode at the
    // sequence's context (what the decode table measured: rows of a batch, one token each).
    const int32_t rows = 1 + scheduled.num_proposed_tokens;
    if (scheduled.sample) {
      if (scheduled.num_beam_candidates > 0) {
        sampling_extra += profile.beam_sample_extra_seconds;
      } else if (samples_randomly(scheduled)) {
        sampling_extra += profile.random_sample_extra_seconds * rows;
      }
    }
    if (!scheduled.is_prefill()) {
      num_decodes += rows;
      decode_context += static_cast<double>(scheduled.end) * rows;
      continue;
    }
    const double tokens = scheduled.num_new_tokens();
    Part chunk;
    chunk.seconds = prefill_seconds(tokens, scheduled.start);
    if (!scheduled.sample) chunk.seconds = std::max(0.0, chunk.seconds - profile.sample_seconds);
    // Attention to the cached prefix, and to the chunk itself at the same cost per (query, key)
    // pair as the table's slope along the context gives.
    const std::vector<double>& columns = profile.prefill.columns;
    const double span = columns.back() - columns.front();
    const double per_pair =
        span > 0.0
            ? (prefill_seconds(tokens, columns.back()) - prefill_seconds(tokens, columns.front())) / (tokens * span)
            : 0.0;
    chunk.attention = std::max(0.0, per_pair) * (tokens * scheduled.start + tokens * (tokens + 1) / 2.0);
    parts.push_back(chunk);
  }
  if (num_decodes > 0) {
    // At the mean context: exact where the table is linear in the context, and right where it is
    // not, since what bends it (KV falling out of the caches) depends on the batch's whole KV,
    // num_decodes x mean context, which is the table's cell at the mean.
    decode_context /= num_decodes;
    Part decodes;
    decodes.seconds = decode_seconds(num_decodes, decode_context);
    decodes.attention = std::max(0.0, decodes.seconds - decode_seconds(num_decodes, 0.0));
    parts.push_back(decodes);
  }

  if (!parts.empty()) {
    const double overhead = profile.step_overhead_seconds;
    double forward = 0.0;
    double attention = 0.0;
    for (const Part& part : parts) {
      forward += part.seconds;
      attention += part.attention;
    }
    // Each table's time includes the step's fixed overhead; the step pays it once.
    forward = std::max(forward - overhead * static_cast<double>(parts.size() - 1) + sampling_extra, overhead);
    cost.overhead_seconds = overhead;
    cost.attention_seconds = std::min(attention, forward - overhead);
    cost.linear_seconds = std::max(0.0, forward - overhead - cost.attention_seconds);
  }
  cost.swap_seconds = static_cast<double>(plan.swap_out.size()) * profile.swap_out_block_seconds +
                      static_cast<double>(plan.swap_in.size()) * profile.swap_in_block_seconds;
  cost.copy_seconds = static_cast<double>(plan.copies.size()) * profile.copy_block_seconds;
  if (config_.apply_load_factor) {
    const double factor = profile.load_factor;
    cost.linear_seconds *= factor;
    cost.attention_seconds *= factor;
    cost.overhead_seconds *= factor;
    cost.swap_seconds *= factor;
    cost.copy_seconds *= factor;
  }
  if (config_.include_engine_overhead) {
    cost.overhead_seconds += engine_overhead_seconds(static_cast<double>(plan.sequences.size()));
  }
  cost.seconds =
      cost.linear_seconds + cost.attention_seconds + cost.overhead_seconds + cost.swap_seconds + cost.copy_seconds;
  return cost;
}

}  // namespace pagedllm::sim
