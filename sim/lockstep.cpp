#include "sim/lockstep.h"

#include <chrono>
#include <sstream>
#include <stdexcept>

#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/engine/replay.h"
#include "core/kv/kv_event_log.h"

namespace pagedllm::sim {

LockstepExecutor::LockstepExecutor(engine::Executor& inner, const LockstepExecutorConfig& config,
                                   const kv::KvCacheConfig& cache)
    : inner_(inner), cost_model_(config.cost_model), script_(config.tokens, cache) {
  if (!cost_model_) throw std::invalid_argument("lockstep executor: a cost model is required");
}

sched::StepResult LockstepExecutor::execute(const sched::StepPlan& plan) {
  // Block operations and the real forward pass; its tokens are not used, its buffers reused.
  inner_.recycle(inner_.execute(plan));
  num_tokens_computed_ += plan.num_batched_tokens;
  sched::StepResult result = script_.execute(plan);
  result.elapsed_seconds = cost_model_->step_cost(plan).seconds;
  return result;
}

LockstepRun run_lockstep(const std::vector<sched::Request>& requests, const engine::EngineConfig& config,
                         engine::Executor& executor) {
  std::ostringstream log_stream;
  kv::KvEventLog event_log(log_stream);
  engine::VirtualClock clock;
  engine::Engine engine(config, executor, clock, &event_log);
  const auto wall_start = std::chrono::steady_clock::now();
  engine::ReplayResult result = engine::replay_requests(engine, clock, requests, engine::TimeMode::virtual_clock);
  LockstepRun run;
  run.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  run.executor = executor.name();
  run.event_log = log_stream.str();
  run.outputs = std::move(result.outputs);
  run.num_steps = engine.num_steps();
  run.preemptions_recompute = engine.counters().preemptions_recompute;
  run.preemptions_swap = engine.counters().preemptions_swap;
  run.prefix_hit_tokens = engine.kv().stats().prefix_hit_tokens;
  run.virtual_seconds = result.end_time - result.start_time;
  return run;
}

std::optional<LogDifference> first_difference(std::string_view expected, std::string_view actual) {
  int64_t line = 1;
  while (!expected.empty() || !actual.empty()) {
    const size_t expected_end = expected.find('\n');
    const size_t actual_end = actual.find('\n');
    const std::string_view expected_line = expected.substr(0, expected_end);
    const std::string_view actual_line = actual.substr(0, actual_end);
    if (expected.empty() || actual.empty() || expected_line != actual_line) {
      return LogDifference{line, expected.empty() ? "<end of log>" : std::string(expected_line),
                           actual.empty() ? "<end of log>" : std::string(actual_line)};
    }
    expected = expected_end == std::string_view::npos ? std::string_view() : expected.substr(expected_end + 1);
    actual = actual_end == std::string_view::npos ? std::string_view() : actual.substr(actual_end + 1);
    ++line;
  }
  return std::nullopt;
}

std::optional<std::string> first_output_difference(const LockstepRun& expected, const LockstepRun& actual) {
  if (expected.outputs.size() != actual.outputs.size()) {
    return std::to_string(expected.outputs.size()) + " outputs against " + std::to_string(actual.outputs.size());
  }
  for (size_t i = 0; i < expected.outputs.size(); ++i) {
    const engine::RequestOutput& a = expected.outputs[i];
    const engine::RequestOutput& b = actual.outputs[i];
    bool same = a.id == b.id && a.completions.size() == b.completions.size();
    for (size_t c = 0; same && c < a.completions.size(); ++c) same = a.completions[c].tokens == b.completions[c].tokens;
    if (!same) return "request " + std::to_string(a.id) + ": different output tokens";
  }
  return std::nullopt;
}

}  // namespace pagedllm::sim
