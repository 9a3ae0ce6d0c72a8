// The measured cost model: a step's time interpolated from a StepProfile that `pagedllm profile`
// measured on a real executor (docs/SIMULATOR.md, "Measured profiles").
//
// A step is split into the parts the profile measured on their own, and their times are added:
//   decodes      the decode table at (number of decode sequences, their mean context), where a
//                decode's context is its `end` (the tokens it attends to); a verify pass of k
//                proposals counts as k + 1 decodes at its context;
//   each chunk   the prefill table at (chunk tokens, tokens cached before it), less one sampled
//                row when the chunk does not end its prompt;
// less the fixed step overhead once for every part after the first (each table's times include
// it, a mixed step pays it once); plus, per sampled row, the extra of random sampling or of beam
// search over a greedy draw; plus swaps and copies per block; all of it times the profile's load
// factor (unless turned off); plus, when asked, the engine's own time per step outside the
// executor (for predicting wall-clock replays).
#pragma once

#include "sim/cost_model.h"
#include "sim/step_profile.h"

namespace pagedllm::sim {

struct ProfileCostModelConfig {
  StepProfile profile;
  // Add the profile's engine_overhead (scheduling, applying results) to every step: what a
  // `--time real` replay spends besides the executor. Off: predict the executor's time, which is
  // what a `--time virtual` replay of the real executor advances its clock by.
  bool include_engine_overhead = false;
  // Scale the executor's time (forward pass and block operations) by the profile's load_factor,
  // predicting the mean step a replay's clock sums (on the machine as busy as it was while
  // profiling) rather than the tables' lower quartiles (an undisturbed machine).
  bool apply_load_factor = true;
};

class ProfileCostModel final : public CostModel {
 public:
  explicit ProfileCostModel(ProfileCostModelConfig config);  // validates the profile

  StepCost step_cost(const sched::StepPlan& plan) const override;

  // The tables, interpolated (bilinear; linear beyond the grid) and floored at 0.
  double decode_seconds(double num_sequences, double context) const;
  double prefill_seconds(double chunk_tokens, double context_before) const;
  // 0 when the profile has no engine overhead curve.
  double engine_overhead_seconds(double num_sequences) const;

  const ProfileCostModelConfig& config() const { return config_; }

 private:
  ProfileCostModelConfig config_;
};

}  // namespace pagedllm::sim
