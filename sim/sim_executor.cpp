#include "sim/sim_executor.h"

#include <stdexcept>
#include <utility>

namespace pagedllm::sim {
namespace {

std::shared_ptr<const CostModel> require_cost_model(std::shared_ptr<const CostModel> cost_model) {
  if (cost_model == nullptr) throw std::invalid_argument("sim executor: SimExecutorConfig::cost_model is required");
  return cost_model;
}

}  // namespace

SimExecutor::SimExecutor(SimExecutorConfig config, const kv::KvCacheConfig& cache)
    : cost_model_(require_cost_model(std::move(config.cost_model))), scripted_(config.tokens, cache) {}

sched::StepResult SimExecutor::execute(const sched::StepPlan& plan) {
  sched::StepResult result = scripted_.execute(plan);
  last_step_cost_ = cost_model_->step_cost(plan);
  result.elapsed_seconds = last_step_cost_.seconds;
  ++counters_.num_steps;
  for (const sched::ScheduledSequence& scheduled : plan.sequences) {
    counters_.num_batched_tokens += scheduled.num_new_tokens();
  }
  counters_.total += last_step_cost_;
  return result;
}

}  // namespace pagedllm::sim
