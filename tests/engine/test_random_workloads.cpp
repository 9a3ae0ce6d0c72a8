// Randomized engine stress: many small random workloads on tight KV pools, each checked step by
// step (scheduler invariants, every KV read through the scripted executor) and against the same
// workload on an ample pool: no stall, no leak, and every request that is not rejected gets the
// tokens it would get with no memory pressure at all.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/engine/scripted_executor.h"
#include "tests/engine/engine_harness.h"

namespace engine = pagedllm::engine;
namespace sched = pagedllm::sched;
using pagedllm::TokenId;

namespace {

using pagedllm::test::kEos;
constexpr int64_t kMaxSteps = 3000;

// Uniform in [lo, hi] from the raw 64-bit stream (std distributions differ across libraries).
class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed) {}
  int32_t operator()(int32_t lo, int32_t hi) {
    return lo + static_cast<int32_t>(rng_() % static_cast<uint64_t>(hi - lo + 1));
  }

 private:
  std::mt19937_64 rng_;
};

struct Workload {
  engine::EngineConfig config;
  engine::ScriptedExecutorConfig executor;
  std::vector<sched::Request> requests;
  std::vector<int32_t> arrival_step;  // the step before which each request is added
};

Workload random_workload(uint64_t seed) {
  Draw draw(seed);
  Workload workload;
  engine::EngineConfig& config = workload.config;
  config.cache.block_size = draw(1, 4);
  config.cache.num_device_blocks = draw(6, 40);
  config.cache.num_host_blocks = draw(0, 1) ? draw(0, 40) : 0;
  config.cache.watermark = draw(0, 1) ? 0.0 : 0.05;
  config.cache.enable_prefix_caching = draw(0, 3) != 0;
  config.scheduler.max_num_batched_tokens = draw(4, 40);
  config.scheduler.max_num_seqs = draw(2, 16);
  config.scheduler.max_model_len = 64;
  const int32_t mode = draw(0, 2);
  if (mode == 1) config.scheduler.preemption_mode = sched::PreemptionMode::recompute;
  if (mode == 2) config.scheduler.preemption_mode = sched::PreemptionMode::swap;
  config.scheduler.policy = draw(0, 1) ? sched::SchedulingPolicy::priority : sched::SchedulingPolicy::fcfs;
  config.eos_token_ids = {kEos};
  workload.executor.vocab_size = 50;
  workload.executor.eos_token_id = kEos;
  workload.executor.eos_period = draw(0, 1) ? 0 : 9;
  const int32_t num_requests = draw(1, 10);
  int32_t step = 0;
  for (int32_t i = 0; i < num_requests; ++i) {
    sched::Request request;
    request.id = i;
    const int32_t family = draw(0, 2);  // requests of a family share their first six tokens
    const int32_t prompt_len = draw(1, 14);
    for (int32_t t = 0; t < prompt_len; ++t) request.prompt_tokens.push_back(t < 6 ? family * 10 + t + 3 : draw(3, 49));
    request.params.max_tokens = draw(1, 12);
    const int32_t kind = draw(0, 4);
    if (kind == 3) request.params.n = draw(2, 3);
    if (kind == 4) {
      request.params.beam_width = draw(2, 3);
      request.params.n = draw(1, request.params.beam_width);
    }
    request.priority = draw(0, 3);
    step += draw(0, 3);
    workload.requests.push_back(request);
    workload.arrival_step.push_back(step);
  }
  return workload;
}

struct RunOutcome {
  std::map<sched::RequestId, engine::RequestOutput> finished;
  std::string error;  // empty when the run drained cleanly
};

RunOutcome run(const Workload& workload, int32_t num_device_blocks) {
  engine::EngineConfig config = workload.config;
  config.cache.num_device_blocks = num_device_blocks;
  config.output_kind = engine::OutputKind::final_only;
  engine::ScriptedExecutor executor(workload.executor, config.cache);
  engine::VirtualClock clock;
  engine::Engine llm(config, executor, clock);
  RunOutcome outcome;
  size_t added = 0;
  for (int64_t step = 0; step < kMaxSteps; ++step) {
    while (added < workload.requests.size() && workload.arrival_step[added] <= step)
      llm.add_request(workload.requests[added++]);
    if (added == workload.requests.size() && !llm.has_unfinished()) break;
    try {
      for (engine::RequestOutput& output : llm.step()) outcome.finished.emplace(output.id, std::move(output));
      llm.scheduler().check_invariants();
    } catch (const std::exception& error) {
      outcome.error = error.what();
      return outcome;
    }
    if (llm.has_unfinished() && llm.num_idle_steps() > 3) {
      outcome.error = "stalled with requests unfinished";
      return outcome;
    }
  }
  if (llm.has_unfinished()) outcome.error = "unfinished after " + std::to_string(kMaxSteps) + " steps";
  if (llm.kv().stats().num_sequences != 0) outcome.error += " KV sequences left behind";
  return outcome;
}

// Runs `num_seeds` random workloads tight and ample; `sliding_window` > 0 gives each a window of
// 1 + seed % sliding_window tokens (the KV manager releases blocks before it, and the scripted
// executor checks the reads inside it).
void check_random_workloads(uint64_t num_seeds, int32_t sliding_window) {
  int64_t requests = 0;
  int64_t rejected = 0;
  for (uint64_t seed = 1; seed <= num_seeds; ++seed) {
    Workload workload = random_workload(seed);
    if (sliding_window > 0)
      workload.config.cache.sliding_window = 1 + static_cast<int32_t>(seed % static_cast<uint64_t>(sliding_window));
    const RunOutcome tight = run(workload, workload.config.cache.num_device_blocks);
    const RunOutcome ample = run(workload, 4096);
    BOOST_TEST_REQUIRE(tight.error.empty(), "seed " << seed << ": " << tight.error);
    BOOST_TEST_REQUIRE(ample.error.empty(), "seed " << seed << " (ample pool): " << ample.error);
    for (const auto& [id, output] : tight.finished) {
      ++requests;
      if (output.finish_reason == sched::FinishReason::rejected) {
        ++rejected;
        BOOST_TEST(!output.message.empty(), "seed " << seed << ": a rejection without a reason");
        continue;
      }
      const engine::RequestOutput& expected = ample.finished.at(id);
      BOOST_TEST_REQUIRE(output.completions.size() == expected.completions.size(),
                         "seed " << seed << " request " << id);
      for (size_t c = 0; c < output.completions.size(); ++c) {
        BOOST_TEST(output.completions[c].tokens == expected.completions[c].tokens,
                   "seed " << seed << " request " << id << " completion " << c << " differs from the ample pool's");
      }
    }
  }
  BOOST_TEST_MESSAGE("random_workloads" << (sliding_window > 0 ? " (sliding window)" : "") << ": " << num_seeds
                                        << " workloads, " << requests << " requests, " << rejected
                                        << " rejected as never fitting");
  BOOST_TEST(requests > 5 * static_cast<int64_t>(num_seeds));
  BOOST_TEST(rejected < requests / 4);  // most requests must run, or the check proves little
}

}  // namespace

BOOST_AUTO_TEST_SUITE(random_workloads)

BOOST_AUTO_TEST_CASE(tight_pools_lose_nothing_stall_never_and_leak_nothing) { check_random_workloads(1500, 0); }

// The same under sliding windows of 1 to 12 tokens: blocks released before the window while
// requests fork, swap, recompute and share prefixes.
BOOST_AUTO_TEST_CASE(sliding_windows_lose_nothing_stall_never_and_leak_nothing) { check_random_workloads(1500, 12); }

BOOST_AUTO_TEST_SUITE_END()
