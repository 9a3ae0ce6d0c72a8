// Each real step of an executor against a cost model's prediction for the same plan. A simulated
// replay diverges from the real one in two ways: the model mispredicts steps, and the schedules
// drift apart once step times differ (other batches, other queueing). This measures the first
// alone, on the real run's own schedule.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/executor.h"
#include "sim/cost_model.h"

namespace pagedllm::sim {

// Steps by what they compute: decodes only, prompt chunks only, or both.
enum class StepKind : int32_t { decode = 0, prefill = 1, mixed = 2 };
inline constexpr int32_t kNumStepKinds = 3;
StepKind step_kind_of(const sched::StepPlan& plan);
std::string to_string(StepKind kind);

struct StepPredictionTally {
  int64_t num_steps = 0;
  double measured_seconds = 0.0;   // the executor's own elapsed_seconds, summed
  double predicted_seconds = 0.0;  // the cost model's, summed
  std::vector<double> ratios;      // predicted / measured, per step

  // predicted / measured - 1 over the sums: the error a simulation of this schedule would have.
  double total_error() const;
  double median_ratio() const;  // 0 without steps
};

struct StepPredictionReport {
  std::array<StepPredictionTally, kNumStepKinds> by_kind;  // indexed by StepKind
  StepPredictionTally all;
};

// Wraps a real executor: its results pass through unchanged; each step with sequences is also
// priced by `cost_model` (block-operation-only steps are counted in neither).
class PredictingExecutor final : public engine::Executor {
 public:
  PredictingExecutor(engine::Executor& inner, std::shared_ptr<const CostModel> cost_model);

  sched::StepResult execute(const sched::StepPlan& plan) override;
  void recycle(sched::StepResult&& result) override { inner_.recycle(std::move(result)); }
  std::string name() const override { return inner_.name(); }
  bool reads_prompt_tokens() const override { return inner_.reads_prompt_tokens(); }

  const StepPredictionReport& report() const { return report_; }

 private:
  engine::Executor& inner_;  // not owned
  std::shared_ptr<const CostModel> cost_model_;
  StepPredictionReport report_;
};

}  // namespace pagedllm::sim
