// The scheduler table tests' harness: an engine on a KV-checking scripted executor, its plans recorded step by step.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/engine/executor.h"
#include "core/engine/scripted_executor.h"
#include "core/kv/kv_cache_manager.h"
#include "core/sched/sampling_params.h"
#include "core/sched/scheduler.h"
#include "core/sched/step_plan.h"

namespace pagedllm::test {

using sched::FinishReason;
using sched::PreemptionMode;
using sched::RequestId;

inline constexpr PreemptionMode kSwap = PreemptionMode::swap;
inline constexpr PreemptionMode kRecompute = PreemptionMode::recompute;

// Block arithmetic in the tests' comments uses this block size.
inline constexpr int32_t kBlockSize = 4;

// --- what one step did -------------------------------------------------------------------------

struct RanSequence {
  RequestId request = 0;
  SeqId seq = 0;
  int32_t start = 0;
  int32_t end = 0;
  bool sample = false;
  bool prefill = false;
  std::vector<kv::BlockId> block_table;
};

struct StepRecord {
  int64_t step = 0;
  bool executed = false;         // false: the plan was empty and the engine did not call the executor
  std::vector<RanSequence> ran;  // plan order
  std::vector<sched::PreemptedGroup> preempted;
  std::vector<RequestId> rejected;
  std::vector<kv::BlockMove> swap_out;
  std::vector<kv::BlockMove> swap_in;
  std::vector<kv::BlockCopy> copies;
  int32_t num_batched_tokens = 0;
};

// Forwards to the scripted executor and keeps a copy of every plan it sees.
class RecordingExecutor final : public engine::Executor {
 public:
  explicit RecordingExecutor(engine::Executor& inner) : inner_(inner) {}

  sched::StepResult execute(const sched::StepPlan& plan) override;
  std::string name() const override { return "recording " + inner_.name(); }
  const std::vector<StepRecord>& records() const { return records_; }

 private:
  engine::Executor& inner_;
  std::vector<StepRecord> records_;
};

// --- the harness -------------------------------------------------------------------------------

struct HarnessConfig {
  int32_t num_device_blocks = 32;
  int32_t num_host_blocks = 0;
  bool enable_prefix_caching = true;
  int32_t max_num_batched_tokens = 64;
  int32_t max_num_seqs = 16;
  int32_t max_model_len = 128;
  bool enable_chunked_prefill = true;
  sched::SchedulingPolicy policy = sched::SchedulingPolicy::fcfs;
  std::optional<PreemptionMode> preemption_mode = std::nullopt;  // absent: auto
  int32_t sliding_window = 0;  // > 0: the KV cache releases blocks before the window (the executor reads only it)
};

// One request; each request gets a distinct prompt, so requests share nothing in the prefix cache.
struct RequestSpec {
  RequestId id = 0;
  int32_t num_prompt_tokens = 8;
  int32_t max_tokens = 4;
  int32_t n = 1;
  int32_t beam_width = 0;
  int32_t priority = 0;
  std::optional<double> arrival = std::nullopt;  // absent: now, on the engine's clock
};

// Table-driven scheduler tests, in the style of TensorRT-LLM's batch-manager tests, run on this:
// an engine with block_size kBlockSize and no watermark on a ScriptedExecutor (which simulates the
// KV memory and checks every read) wrapped in a RecordingExecutor that keeps each step's plan. A
// test adds requests, steps, and compares the steps with a table of phases (scheduler_checks.h).
// The scheduler's invariants are checked after every step, and every test ends with an empty KV
// cache. Prefix caching is turned off where it would make block counts depend on what the cache
// still holds.
class Harness {
 public:
  explicit Harness(const HarnessConfig& config);

  engine::Engine& engine() { return engine_; }
  const kv::KvCacheManager& kv() const { return engine_.kv(); }
  const std::vector<StepRecord>& steps() const { return steps_; }

  void add(const RequestSpec& spec);

  // One engine step; the scheduler's invariants must hold after it.
  const StepRecord& step();

  // One engine step; returns what went wrong (the step threw or broke an invariant), or "".
  std::string try_step();

  // Steps until `num_steps` steps have run in all.
  void step_to(int64_t num_steps);

  void run_to_completion(int64_t max_steps = 200);

  // Steps until every request ends; returns what went wrong instead of failing: a step that threw
  // or broke an invariant, an engine idle for steps in a row, or `max_steps` reached.
  std::string run_checked(int64_t max_steps = 100);

  // The outputs returned by the last step.
  const std::vector<engine::RequestOutput>& last_outputs() const { return last_outputs_; }
  const engine::RequestOutput* last_output(RequestId id) const;
  // The latest output of a request.
  const engine::RequestOutput& output(RequestId id) const;

  // Every sequence of `request` that any step ran, in first-run order.
  std::vector<SeqId> seqs_of(RequestId request) const;

  // The end state of every test: no sequence holds KV, every block is free.
  void expect_drained() const;

 private:
  engine::EngineConfig config_;
  engine::ScriptedExecutor scripted_;
  RecordingExecutor recorder_;
  engine::VirtualClock clock_;
  engine::Engine engine_;
  std::vector<StepRecord> steps_;
  std::vector<engine::RequestOutput> last_outputs_;
  std::map<RequestId, engine::RequestOutput> outputs_;
};

}  // namespace pagedllm::test
