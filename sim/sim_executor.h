// The simulator's executor: the scripted executor's tokens, and a cost model's predicted step
// time in place of a forward pass. Driven by a real engine::Engine under a VirtualClock, it runs
// the engine's own scheduler and KV block manager in virtual time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "core/engine/engine_config.h"
#include "core/engine/executor.h"
#include "core/engine/scripted_executor.h"
#include "core/kv/kv_cache_config.h"
#include "sim/cost_model.h"

namespace pagedllm::sim {

// The scripted executor's settings, without its KV check (O(context) per step: tests turn it on).
inline engine::ScriptedExecutorConfig default_sim_tokens() {
  engine::ScriptedExecutorConfig tokens;
  tokens.verify_kv = false;
  return tokens;
}

// The token script of a simulated engine: default_sim_tokens() over `vocab_size` tokens, taking
// speculative decoding's simulated acceptance rates from the engine's config when it has them.
inline engine::ScriptedExecutorConfig sim_tokens_for(const engine::EngineConfig& config, int32_t vocab_size) {
  engine::ScriptedExecutorConfig tokens = default_sim_tokens();
  tokens.vocab_size = vocab_size;
  if (config.speculative.simulated) {
    tokens.accepted_per_position = config.speculative.simulated->accepted_per_position;
    tokens.acceptance_seed = config.speculative.simulated->seed;
  }
  return tokens;
}

struct SimExecutorConfig {
  std::shared_ptr<const CostModel> cost_model;  // required
  // Tokens as the scripted executor makes them: any executor run under the same script
  // schedules identically. Its seconds_per_step / seconds_per_token are not used.
  engine::ScriptedExecutorConfig tokens = default_sim_tokens();
};

// What the executor has predicted so far.
struct SimCounters {
  int64_t num_steps = 0;
  int64_t num_batched_tokens = 0;
  StepCost total;  // sums over every step: total.seconds is the predicted busy time
};

class SimExecutor final : public engine::Executor {
 public:
  // Throws std::invalid_argument when config.cost_model is null.
  SimExecutor(SimExecutorConfig config, const kv::KvCacheConfig& cache);

  sched::StepResult execute(const sched::StepPlan& plan) override;
  void recycle(sched::StepResult&& result) override { scripted_.recycle(std::move(result)); }
  std::string name() const override { return "sim"; }
  bool reads_prompt_tokens() const override { return scripted_.reads_prompt_tokens(); }

  const SimCounters& counters() const { return counters_; }
  const StepCost& last_step_cost() const { return last_step_cost_; }
  const engine::ScriptedExecutor& scripted() const { return scripted_; }

 private:
  std::shared_ptr<const CostModel> cost_model_;
  engine::ScriptedExecutor scripted_;
  SimCounters counters_;
  StepCost last_step_cost_;
};

}  // namespace pagedllm::sim
