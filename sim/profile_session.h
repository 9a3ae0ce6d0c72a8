// The profiler's harness: one engine on a fresh executor, driven request by request, recording
// what each step scheduled (its shape) and how long the executor said it took. The measurements
// (sim/profile_grids.h, sim/profile_scalars.h) build their step shapes with it.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/common/types.h"
#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/engine/executor.h"
#include "core/sched/request.h"
#include "sim/step_profiler.h"

namespace pagedllm::sim::profiling {

// ---- What a step scheduled ---------------------------------------------------------------------

struct Chunk {
  int32_t start = 0;
  int32_t end = 0;
  bool sample = false;
};

struct StepShape {
  int32_t num_decodes = 0;
  int32_t min_decode_end = std::numeric_limits<int32_t>::max();
  int32_t max_decode_end = 0;
  std::vector<Chunk> chunks;  // prompt chunks, in plan order

  bool decodes_only(int32_t num) const { return chunks.empty() && num_decodes == num; }
  bool lockstep() const { return num_decodes == 0 || min_decode_end == max_decode_end; }
};

StepShape shape_of(const sched::StepPlan& plan);

struct StepRecord {
  bool executed = false;  // false: the engine scheduled nothing
  StepShape shape;
  double seconds = 0.0;         // the executor's reported time
  double engine_seconds = 0.0;  // wall time of Engine::step() beyond it
};

// Forwards to the executor under test and keeps what the last plan scheduled and took.
class RecordingExecutor final : public engine::Executor {
 public:
  explicit RecordingExecutor(std::unique_ptr<engine::Executor> inner) : inner_(std::move(inner)) {}

  sched::StepResult execute(const sched::StepPlan& plan) override;
  std::string name() const override { return inner_->name(); }
  bool reads_prompt_tokens() const override { return inner_->reads_prompt_tokens(); }

  StepRecord take();  // the last step's record; the next one starts empty

 private:
  std::unique_ptr<engine::Executor> inner_;
  StepRecord last_;
};

// ---- Requests ------------------------------------------------------------------------------------

// Deterministic prompt tokens from [begin, end): `key` picks the content, distinct keys give
// distinct prompts, and a longer prompt of one key extends the shorter one (so it finds the
// shorter one's blocks in the prefix cache).
class PromptMaker {
 public:
  PromptMaker(TokenId begin, TokenId end);
  std::vector<TokenId> tokens(uint64_t key, int32_t length) const;

 private:
  TokenId begin_;
  uint64_t range_;
};

enum class Sampling : uint8_t { greedy, random, beam };

// ignore_eos, max_tokens; random: temperature 1 with `seed`; beam: width 2, greedy.
sched::SamplingParams params_for(Sampling sampling, int32_t max_tokens, uint64_t seed);

// One engine on a fresh executor from config.make_executor, under a virtual clock.
class Session {
 public:
  Session(const StepProfilerConfig& config, const engine::EngineConfig& engine_config);

  sched::RequestId add(std::vector<TokenId> prompt, const sched::SamplingParams& params);
  void abort(sched::RequestId id) { engine_.abort_request(id); }

  StepRecord step();
  // Steps until an executed step satisfies `done`; returns it. Throws naming `what` otherwise.
  template <class Done>
  StepRecord step_until(Done done, const std::string& what) {
    for (int i = 0; i < kMaxSetupSteps && engine_.has_unfinished(); ++i) {
      StepRecord record = step();
      if (record.executed && done(record)) return record;
    }
    throw std::runtime_error("profile: the engine never scheduled " + what);
  }
  void run_until_idle();

 private:
  static constexpr int kMaxSetupSteps = 100000;
  RecordingExecutor executor_;
  engine::VirtualClock clock_;
  engine::Engine engine_;
  sched::RequestId next_id_ = 1;
};

// The engine the measurements run: prefix caching and chunked prefill on, no host tier.
engine::EngineConfig engine_config(const StepProfilerConfig& config, int32_t num_device_blocks, int32_t max_num_seqs,
                                   int32_t max_num_batched_tokens);

// ---- Statistics ------------------------------------------------------------------------------------

// Every time kept is the lower quartile of its timed steps. Load elsewhere on the machine only
// ever adds time, in bursts longer than a pass over a column; the lower quartile stays on the
// undisturbed steps while three quarters of them are disturbed, and sits a few percent below the
// median on a quiet machine (the profile's load_factor gives the mean back).
inline constexpr double kQuantile = 0.25;

double quantile(std::vector<double> values, double q);  // linear between ranks (numpy's default)
double median(std::vector<double> values);              // 0 for none

// ---- Small helpers ---------------------------------------------------------------------------------

inline int32_t blocks_for(int32_t tokens, int32_t block_size) { return (tokens + block_size - 1) / block_size; }
std::string microseconds(double seconds);  // "12 us"
void progress(const StepProfilerConfig& config, const std::string& line);

}  // namespace pagedllm::sim::profiling
