#include "sim/step_prediction.h"

#include <algorithm>
#include <stdexcept>

#include "core/common/numpy_stats.h"

namespace pagedllm::sim {

StepKind step_kind_of(const sched::StepPlan& plan) {
  if (plan.num_prefill_tokens == 0) return StepKind::decode;
  return plan.num_decode_tokens == 0 ? StepKind::prefill : StepKind::mixed;
}

std::string to_string(StepKind kind) {
  switch (kind) {
    case StepKind::decode:
      return "decode";
    case StepKind::prefill:
      return "prefill";
    case StepKind::mixed:
      return "mixed";
  }
  return "unknown";
}

double StepPredictionTally::total_error() const {
  return measured_seconds > 0.0 ? predicted_seconds / measured_seconds - 1.0 : 0.0;
}

double StepPredictionTally::median_ratio() const {
  std::vector<double> sorted = ratios;
  std::sort(sorted.begin(), sorted.end());
  return stats::median(sorted);
}

PredictingExecutor::PredictingExecutor(engine::Executor& inner, std::shared_ptr<const CostModel> cost_model)
    : inner_(inner), cost_model_(std::move(cost_model)) {
  if (!cost_model_) throw std::invalid_argument("predicting executor: a cost model is required");
}

sched::StepResult PredictingExecutor::execute(const sched::StepPlan& plan) {
  sched::StepResult result = inner_.execute(plan);
  if (plan.sequences.empty()) return result;
  const double predicted = cost_model_->step_cost(plan).seconds;
  const double measured = result.elapsed_seconds;
  for (StepPredictionTally* tally : {&report_.by_kind[static_cast<size_t>(step_kind_of(plan))], &report_.all}) {
    ++tally->num_steps;
    tally->measured_seconds += measured;
    tally->predicted_seconds += predicted;
    if (measured > 0.0) tally->ratios.push_back(predicted / measured);
  }
  return result;
}

}  // namespace pagedllm::sim
