// The sim executor: the scripted executor's tokens with the cost model's time, and a real engine
// driven by it in virtual time.
#include <boost/test/unit_test.hpp>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/engine/scripted_executor.h"
#include "sim/roofline_cost_model.h"
#include "sim/sim_executor.h"
#include "tests/sim/plan_builder.h"

namespace pagedllm::test {
namespace {

sim::RooflineConfig llama_on_a100() {
  sim::RooflineConfig config;
  config.hardware = sim::find_hardware("a100-40gb");
  config.model = model::find_model_shape("llama-2-7b");
  return config;
}

std::shared_ptr<const sim::CostModel> roofline(const sim::RooflineConfig& config) {
  return std::make_shared<sim::RooflineCostModel>(config);
}

struct Workload {
  int32_t num_requests = 6;
  int32_t prompt_length = 100;
  int32_t max_tokens = 40;
  int32_t n = 1;
};

std::vector<sched::Request> make_requests(const Workload& workload) {
  std::vector<sched::Request> requests;
  for (int32_t id = 0; id < workload.num_requests; ++id) {
    sched::Request request;
    request.id = id;
    for (int32_t i = 0; i < workload.prompt_length + 7 * id; ++i) {
      request.prompt_tokens.push_back(3 + (id * 131 + i) % 30000);
    }
    request.params.max_tokens = workload.max_tokens;
    request.params.n = workload.n;
    request.params.seed = static_cast<uint64_t>(id);
    requests.push_back(std::move(request));
  }
  return requests;
}

engine::EngineConfig engine_config(int32_t num_device_blocks, int32_t num_host_blocks) {
  engine::EngineConfig config;
  config.cache.block_size = 16;
  config.cache.num_device_blocks = num_device_blocks;
  config.cache.num_host_blocks = num_host_blocks;
  config.scheduler.max_num_batched_tokens = 512;
  config.output_kind = engine::OutputKind::final_only;
  return config;
}

struct EngineRun {
  std::map<sched::RequestId, engine::RequestOutput> outputs;
  engine::EngineCounters counters;
  int64_t num_steps = 0;
  double end_time = 0.0;
};

// Every request arrives at time 0, so the schedule does not depend on the step times.
EngineRun run_engine(const engine::EngineConfig& config, engine::Executor& executor,
                     const std::vector<sched::Request>& requests) {
  engine::VirtualClock clock;
  engine::Engine engine(config, executor, clock);
  for (const sched::Request& request : requests) engine.add_request(request);
  EngineRun run;
  while (engine.has_unfinished()) {
    BOOST_REQUIRE_LT(engine.num_steps(), 100000);
    for (engine::RequestOutput& output : engine.step()) run.outputs[output.id] = std::move(output);
  }
  run.counters = engine.counters();
  run.num_steps = engine.num_steps();
  run.end_time = clock.now();
  return run;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sim_executor)

BOOST_AUTO_TEST_CASE(returns_the_scripted_tokens_and_the_cost_models_time) {
  const sim::RooflineConfig config = llama_on_a100();
  const kv::KvCacheConfig cache{.block_size = 16, .num_device_blocks = 64, .num_host_blocks = 0};
  sim::SimExecutor executor({.cost_model = roofline(config)}, cache);
  engine::ScriptedExecutor scripted(sim::default_sim_tokens(), cache);
  BOOST_TEST(executor.name() == "sim");

  PlanBuilder builder(16);
  builder.add({.start = 0, .end = 40, .num_prompt_tokens = 40, .sample = true});
  builder.add({.start = 60, .end = 61, .num_prompt_tokens = 30, .sample = true});
  builder.add({.start = 0, .end = 32, .num_prompt_tokens = 50, .sample = false});
  builder.swap_out(2);
  const sched::StepResult got = executor.execute(builder.plan());
  const sched::StepResult want = scripted.execute(builder.plan());

  BOOST_REQUIRE_EQUAL(got.outputs.size(), 2u);
  BOOST_REQUIRE_EQUAL(got.outputs.size(), want.outputs.size());
  for (size_t i = 0; i < want.outputs.size(); ++i) {
    BOOST_TEST(got.outputs[i].seq == want.outputs[i].seq);
    BOOST_REQUIRE_EQUAL(got.outputs[i].samples.size(), want.outputs[i].samples.size());
    BOOST_TEST(got.outputs[i].samples[0].token == want.outputs[i].samples[0].token);
    BOOST_TEST(got.outputs[i].samples[0].logprob == want.outputs[i].samples[0].logprob);
  }
  const sim::StepCost cost = sim::RooflineCostModel(config).step_cost(builder.plan());
  BOOST_TEST(got.elapsed_seconds == cost.seconds);
  BOOST_TEST(executor.last_step_cost().seconds == cost.seconds);
  BOOST_TEST(executor.counters().num_steps == 1);
  BOOST_TEST(executor.counters().num_batched_tokens == 40 + 1 + 32);
  BOOST_TEST(executor.counters().total.swap_bytes == 2 * sim::kv_bytes_per_block(config));

  executor.execute(builder.plan());
  BOOST_TEST(executor.counters().num_steps == 2);
  BOOST_TEST(executor.counters().total.seconds == 2 * cost.seconds);
  BOOST_TEST(executor.counters().total.flops == 2 * cost.flops);
}

BOOST_AUTO_TEST_CASE(a_missing_cost_model_is_refused) {
  const kv::KvCacheConfig cache{.block_size = 16, .num_device_blocks = 8, .num_host_blocks = 0};
  BOOST_CHECK_THROW(sim::SimExecutor(sim::SimExecutorConfig{}, cache), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(drives_an_engine_to_completion_with_the_scripted_schedule) {
  const sim::RooflineConfig cost_config = llama_on_a100();
  const int32_t num_device_blocks = sim::num_device_blocks(cost_config, 0.9, 1LL << 30);
  BOOST_TEST(num_device_blocks > 2000);  // about 2870 on an A100 40GB
  const engine::EngineConfig config = engine_config(num_device_blocks, 0);
  const std::vector<sched::Request> requests = make_requests({});

  sim::SimExecutorConfig sim_config{.cost_model = roofline(cost_config)};
  sim_config.tokens.verify_kv = true;  // and check every KV read on the way
  sim::SimExecutor sim_executor(sim_config, config.cache);
  const EngineRun simulated = run_engine(config, sim_executor, requests);
  engine::ScriptedExecutor scripted(sim::default_sim_tokens(), config.cache);
  const EngineRun reference = run_engine(config, scripted, requests);

  BOOST_TEST(simulated.num_steps == reference.num_steps);
  BOOST_REQUIRE_EQUAL(simulated.outputs.size(), requests.size());
  for (const auto& [id, output] : simulated.outputs) {
    BOOST_TEST_CONTEXT("request " << id) {
      BOOST_TEST(output.finished);
      BOOST_TEST(std::string(sched::to_string(output.finish_reason)) == "length");
      BOOST_REQUIRE_EQUAL(output.completions.size(), 1u);
      BOOST_TEST(output.completions[0].tokens.size() == 40u);
      BOOST_TEST(output.completions[0].tokens == reference.outputs.at(id).completions[0].tokens,
                 boost::test_tools::per_element());
    }
  }
  BOOST_TEST_MESSAGE("6 requests on llama-2-7b / a100-40gb: " << simulated.num_steps << " steps, " << simulated.end_time
                                                              << " s of virtual time");
  // The virtual clock advanced by exactly the predicted step times.
  const sim::SimCounters& counters = sim_executor.counters();
  BOOST_TEST(simulated.end_time == counters.total.seconds, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(counters.num_steps == simulated.num_steps);
  // Prompts and outputs: every token computed once (no preemption in a pool this large).
  int64_t num_prompt_tokens = 0;
  for (const sched::Request& request : requests) {
    num_prompt_tokens += static_cast<int64_t>(request.prompt_tokens.size());
  }
  BOOST_TEST(counters.num_batched_tokens == num_prompt_tokens + 6 * 39);
  // 40 decode steps of a 7B model on an A100 take at least 40 x 13.2 GB / 1.555 TB/s.
  BOOST_TEST(simulated.end_time > 40 * 13.2e9 / 1555e9);
  BOOST_TEST(simulated.end_time < 1.0);
}

BOOST_AUTO_TEST_CASE(swap_preemption_in_the_engine_is_costed_by_the_block) {
  const sim::RooflineConfig cost_config = llama_on_a100();
  // A pool far too small for six parallel-sampling groups at once: they preempt by swapping.
  const engine::EngineConfig config = engine_config(48, 256);
  const std::vector<sched::Request> requests = make_requests({.num_requests = 6, .max_tokens = 80, .n = 2});
  sim::SimExecutorConfig sim_config{.cost_model = roofline(cost_config)};
  sim_config.tokens.verify_kv = true;
  sim::SimExecutor executor(sim_config, config.cache);
  const EngineRun run = run_engine(config, executor, requests);

  BOOST_REQUIRE_GT(run.counters.preemptions_swap, 0);
  for (const auto& [id, output] : run.outputs) {
    BOOST_TEST_CONTEXT("request " << id) {
      BOOST_TEST(std::string(sched::to_string(output.finish_reason)) == "length");
      BOOST_TEST(output.completions.size() == 2u);
    }
  }
  const auto blocks_moved = static_cast<double>(run.counters.blocks_swapped_out + run.counters.blocks_swapped_in);
  const sim::StepCost& total = executor.counters().total;
  BOOST_TEST(total.swap_bytes == blocks_moved * sim::kv_bytes_per_block(cost_config));
  BOOST_TEST(total.swap_seconds == total.swap_bytes / (32e9 * 0.8), boost::test_tools::tolerance(1e-9));
  BOOST_TEST(run.end_time == total.seconds, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
