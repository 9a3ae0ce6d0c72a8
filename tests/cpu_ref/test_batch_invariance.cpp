// Batch invariance of the CPU reference engine, end to end through the engine loop: one
// request's logits (every position it samples) and tokens are bit-identical whether it runs
// alone, inside a batch of 32 mixed requests that share its prefix, with prompt chunks of
// 1 / 7 / 64 tokens, preempted by swap or by recompute, on 1 or 2 threads.
#include <boost/test/unit_test.hpp>

#include <omp.h>

#include <map>
#include <memory>

#include "core/common/mix.h"
#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "cpu_ref/cpu_executor.h"
#include "tests/cpu_ref/tiny_cpu_model.h"

namespace pagedllm::cpu_ref {
namespace {

constexpr sched::RequestId kTarget = 1000;

std::shared_ptr<const LlamaModel> load_tiny_model(int32_t sliding_window) {
  make_model::TinyModelSpec spec;
  if (sliding_window > 0) spec.sliding_window = sliding_window;
  return write_and_load_tiny_model(
      "pagedllm_test_cpu_ref_tiny" + (sliding_window > 0 ? "_w" + std::to_string(sliding_window) : ""), spec);
}

// The tiny model, and the same weights with a 24-token sliding window (Mistral-style).
constexpr int32_t kWindow = 24;
std::shared_ptr<const LlamaModel> tiny_model(int32_t sliding_window) {
  static const std::shared_ptr<const LlamaModel> plain = load_tiny_model(0);
  static const std::shared_ptr<const LlamaModel> windowed = load_tiny_model(kWindow);
  return sliding_window > 0 ? windowed : plain;
}

std::vector<TokenId> synthetic_prompt(uint64_t seed, int32_t length, int32_t vocab) {
  std::vector<TokenId> tokens;
  for (int32_t i = 0; i < length; ++i) {
    tokens.push_back(
        static_cast<TokenId>(mix64(seed * 1000003 + static_cast<uint64_t>(i)) % static_cast<uint64_t>(vocab)));
  }
  return tokens;
}

struct Scenario {
  int32_t num_companions = 0;  // other requests (the target arrives last)
  int32_t max_num_batched_tokens = 2048;
  int32_t num_device_blocks = 256;
  int32_t num_host_blocks = 64;
  std::optional<sched::PreemptionMode> preemption_mode{};
  int32_t num_threads = 2;
  int32_t sliding_window = 0;  // > 0: the windowed model, and a KV cache that releases blocks past it
};

struct TargetRun {
  std::vector<std::vector<float>> logits;  // one row per sampled position of the target
  std::vector<TokenId> tokens;
  engine::EngineCounters counters;
};

// The target: a 90-token prompt whose first 48 tokens some companions share, 12 output tokens
// drawn at temperature 0.8 from a seeded stream (so the sampler is exercised too).
TargetRun run(const Scenario& scenario) {
  const auto model = tiny_model(scenario.sliding_window);
  const int32_t vocab = model->vocab_size();
  omp_set_num_threads(scenario.num_threads);

  engine::EngineConfig config;
  config.cache.block_size = 16;
  config.cache.num_device_blocks = scenario.num_device_blocks;
  config.cache.num_host_blocks = scenario.num_host_blocks;
  config.cache.sliding_window = scenario.sliding_window;
  config.scheduler.max_num_batched_tokens = scenario.max_num_batched_tokens;
  config.scheduler.max_model_len = 512;
  config.scheduler.preemption_mode = scenario.preemption_mode;
  config.output_kind = engine::OutputKind::final_only;

  TargetRun result;
  CpuExecutorConfig executor_config{.cache = config.cache, .num_threads = scenario.num_threads};
  executor_config.logits_observer = [&result](const sched::ScheduledSequence& scheduled,
                                              std::span<const float> logits) {
    if (scheduled.request == kTarget) result.logits.emplace_back(logits.begin(), logits.end());
  };
  CpuExecutor executor(model, executor_config);
  engine::VirtualClock clock;
  engine::Engine engine(config, executor, clock);

  const std::vector<TokenId> target_prompt = synthetic_prompt(7, 90, vocab);
  for (int32_t i = 0; i < scenario.num_companions; ++i) {
    std::vector<TokenId> prompt = synthetic_prompt(100 + static_cast<uint64_t>(i), 5 + (i * 37) % 120, vocab);
    if (i % 4 == 0) {  // shares the target's first three blocks: prefix-cache hits both ways
      prompt.insert(prompt.begin(), target_prompt.begin(), target_prompt.begin() + 48);
    }
    sched::SamplingParams params;
    params.max_tokens = 4 + (i * 13) % 40;
    params.temperature = i % 3 == 0 ? 0.0f : 1.0f;
    params.ignore_eos = true;
    engine.add_request({.id = static_cast<sched::RequestId>(i), .prompt_tokens = prompt, .params = params});
  }
  sched::SamplingParams params;
  params.max_tokens = 12;
  params.temperature = 0.8f;
  params.seed = 42;
  params.ignore_eos = true;
  engine.add_request({.id = kTarget, .prompt_tokens = target_prompt, .params = params});
  while (engine.has_unfinished()) {
    for (const engine::RequestOutput& output : engine.step()) {
      if (output.id == kTarget && output.finished) result.tokens = output.completions.at(0).tokens;
    }
  }
  result.counters = engine.counters();
  return result;
}

void check_same(const TargetRun& reference, const TargetRun& other, const std::string& what) {
  BOOST_TEST_REQUIRE(other.logits.size() == reference.logits.size(), what);
  for (size_t i = 0; i < reference.logits.size(); ++i) {
    BOOST_TEST((other.logits[i] == reference.logits[i]), what << ": logits differ at output position " << i);
  }
  BOOST_TEST(other.tokens == reference.tokens, boost::test_tools::per_element());
}

const TargetRun& alone() {
  static const TargetRun reference = run(Scenario{});
  return reference;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(batch_invariance)

BOOST_AUTO_TEST_CASE(the_reference_run_samples_every_position) {
  BOOST_TEST(alone().logits.size() == 12u);
  BOOST_TEST(alone().tokens.size() == 12u);
}

BOOST_AUTO_TEST_CASE(inside_a_batch_of_32_mixed_requests_sharing_its_prefix) {
  check_same(alone(), run(Scenario{.num_companions = 31}), "batch of 32");
}

BOOST_AUTO_TEST_CASE(with_prefill_chunks_of_1_7_and_64_tokens) {
  for (int32_t chunk : {1, 7, 64}) {
    check_same(alone(), run(Scenario{.num_companions = 3, .max_num_batched_tokens = chunk}),
               "chunk " + std::to_string(chunk));
  }
}

BOOST_AUTO_TEST_CASE(preempted_by_swap_and_by_recompute) {
  for (auto mode : {sched::PreemptionMode::swap, sched::PreemptionMode::recompute}) {
    const std::string what = mode == sched::PreemptionMode::swap ? "swap" : "recompute";
    // 24 device blocks for 8 requests of up to 11 blocks each: the latest arrival is preempted.
    const TargetRun preempted =
        run(Scenario{.num_companions = 7, .num_device_blocks = 24, .num_host_blocks = 64, .preemption_mode = mode});
    const int64_t preemptions = mode == sched::PreemptionMode::swap ? preempted.counters.preemptions_swap
                                                                    : preempted.counters.preemptions_recompute;
    BOOST_TEST(preemptions > 0, what << ": the scenario must preempt");
    check_same(alone(), preempted, what);
  }
}

// With a sliding window (the blocks before it released by the KV manager): the same invariance
// in a batch, under prefill chunks, and through both preemption modes; and the window applies
// (the 90-token prompt runs past it, so the unwindowed model's logits differ).
BOOST_AUTO_TEST_CASE(with_a_sliding_window) {
  const TargetRun windowed_alone = run(Scenario{.sliding_window = kWindow});
  BOOST_TEST_REQUIRE(windowed_alone.logits.size() == 12u);
  BOOST_TEST((windowed_alone.logits.front() != alone().logits.front()));
  check_same(windowed_alone, run(Scenario{.num_companions = 31, .sliding_window = kWindow}), "window, batch of 32");
  for (int32_t chunk : {1, 7, 64}) {
    check_same(windowed_alone,
               run(Scenario{.num_companions = 3, .max_num_batched_tokens = chunk, .sliding_window = kWindow}),
               "window, chunk " + std::to_string(chunk));
  }
  for (auto mode : {sched::PreemptionMode::swap, sched::PreemptionMode::recompute}) {
    // The window bounds what a decoding sequence holds (3 blocks), so a smaller cache preempts.
    const TargetRun preempted = run(Scenario{.num_companions = 7,
                                             .num_device_blocks = 12,
                                             .num_host_blocks = 64,
                                             .preemption_mode = mode,
                                             .sliding_window = kWindow});
    BOOST_TEST(preempted.counters.preemptions_swap + preempted.counters.preemptions_recompute > 0);
    check_same(windowed_alone, preempted, mode == sched::PreemptionMode::swap ? "window, swap" : "window, recompute");
  }
}

BOOST_AUTO_TEST_CASE(on_one_and_two_threads) {
  check_same(alone(), run(Scenario{.num_companions = 5, .num_threads = 1}), "1 thread");
  check_same(alone(), run(Scenario{.num_companions = 5, .num_threads = 2}), "2 threads");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::cpu_ref
