// The lockstep cross-check (`pagedllm check`): one set of requests through several executors,
// every one under the simulator's virtual clock and the same token script, so that the engine
// must make the same decisions everywhere; their KV event logs are then compared byte for byte.
//
// Scheduling must see the same tokens and the same step times everywhere, yet the simulator has
// no logits and real executors (fp32 cpu_ref, bf16 cuda) can pick different tokens. So a real
// executor runs under LockstepExecutor: it applies the plan's block operations and computes its
// forward pass as always (its numbers are compared elsewhere), but the tokens the engine receives
// come from the scripted executor and the step time from the cost model.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine/engine_config.h"
#include "core/engine/executor.h"
#include "core/engine/request_output.h"
#include "core/engine/scripted_executor.h"
#include "core/sched/request.h"
#include "sim/cost_model.h"

namespace pagedllm::sim {

struct LockstepExecutorConfig {
  std::shared_ptr<const CostModel> cost_model;  // required: the virtual clock's step times
  engine::ScriptedExecutorConfig tokens;        // the token script (as SimExecutor's)
};

class LockstepExecutor final : public engine::Executor {
 public:
  // `inner` (not owned, must outlive this) does the real work; throws std::invalid_argument
  // without a cost model.
  LockstepExecutor(engine::Executor& inner, const LockstepExecutorConfig& config, const kv::KvCacheConfig& cache);

  sched::StepResult execute(const sched::StepPlan& plan) override;
  // The results are the script's: its buffers go back to it.
  void recycle(sched::StepResult&& result) override { script_.recycle(std::move(result)); }
  std::string name() const override { return inner_.name(); }
  bool reads_prompt_tokens() const override { return inner_.reads_prompt_tokens() || script_.reads_prompt_tokens(); }

  int64_t num_tokens_computed() const { return num_tokens_computed_; }

 private:
  engine::Executor& inner_;
  std::shared_ptr<const CostModel> cost_model_;
  engine::ScriptedExecutor script_;
  int64_t num_tokens_computed_ = 0;
};

// One executor's run of the requests (virtual time, arrivals as given).
struct LockstepRun {
  std::string executor;
  std::string event_log;                       // the whole KV event log (JSONL)
  std::vector<engine::RequestOutput> outputs;  // final outputs by request id
  int64_t num_steps = 0;
  int64_t preemptions_recompute = 0;
  int64_t preemptions_swap = 0;
  int64_t prefix_hit_tokens = 0;
  double virtual_seconds = 0.0;
  double wall_seconds = 0.0;
};

LockstepRun run_lockstep(const std::vector<sched::Request>& requests, const engine::EngineConfig& config,
                         engine::Executor& executor);

// The first line (1-based) at which two logs differ, with both lines ("<end of log>" past the
// end of one); nullopt when they are identical.
struct LogDifference {
  int64_t line = 0;
  std::string expected;
  std::string actual;
};
std::optional<LogDifference> first_difference(std::string_view expected, std::string_view actual);

// The first request whose output tokens differ between two runs, described; nullopt if none.
std::optional<std::string> first_output_difference(const LockstepRun& expected, const LockstepRun& actual);

}  // namespace pagedllm::sim
