// The lockstep check: the CPU reference engine and the simulator, under one clock and one token
// script, write byte-identical KV event logs, through preemption in both modes, prefix caching,
// parallel sampling and beam search; and a deliberate difference is caught at its first line.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <memory>
#include <vector>

#include "core/frontend/model_bundle.h"
#include "core/model/model_shape.h"
#include "cpu_ref/cpu_executor.h"
#include "sim/lockstep.h"
#include "sim/roofline_cost_model.h"
#include "sim/sim_executor.h"
#include "tools/make_model/tiny_model.h"

namespace pagedllm::test {
namespace {

struct TinyModel {
  TinyModel() {
    const auto directory = std::filesystem::temp_directory_path() / "pagedllm_test_sim_lockstep_tiny";
    make_model::write_tiny_model(make_model::TinyModelSpec{}, directory.string());
    bundle = std::make_unique<frontend::ModelBundle>(frontend::open_model(directory.string()));
    weights = std::make_shared<const cpu_ref::LlamaModel>(frontend::load_weights(*bundle));
  }
  std::unique_ptr<frontend::ModelBundle> bundle;
  std::shared_ptr<const cpu_ref::LlamaModel> weights;
};

const TinyModel& tiny_model() {
  static const TinyModel model;
  return model;
}

// Requests that share prefixes, sample in parallel and search beams, arriving close together.
std::vector<sched::Request> workload(int32_t vocab_size) {
  std::vector<sched::Request> requests;
  for (int32_t i = 0; i < 18; ++i) {
    sched::Request request;
    request.id = i;
    request.arrival_time = 0.002 * i;
    const int32_t shared = i % 3 == 0 ? 24 : 0;  // every third request starts with the same 24 tokens
    for (int32_t p = 0; p < 20 + 5 * (i % 4); ++p) {
      request.prompt_tokens.push_back(p < shared ? 10 + p : 3 + (i * 131 + p * 17) % (vocab_size - 3));
    }
    request.params.temperature = 0.0f;
    request.params.max_tokens = 12 + 3 * (i % 5);
    request.params.ignore_eos = true;
    if (i % 6 == 1) {
      request.params.n = 2;
      request.params.temperature = 1.0f;
      request.params.seed = 100 + i;
    }
    if (i % 6 == 4) request.params.beam_width = 2;
    requests.push_back(request);
  }
  return requests;
}

engine::EngineConfig small_engine(std::optional<sched::PreemptionMode> mode) {
  engine::EngineConfig config;
  config.cache.block_size = 4;
  config.cache.num_device_blocks = 40;  // far fewer than the workload wants at once
  config.cache.num_host_blocks = 64;
  config.scheduler.max_num_batched_tokens = 64;
  config.scheduler.max_model_len = 128;
  config.scheduler.preemption_mode = mode;
  return config;
}

std::shared_ptr<const sim::CostModel> clock_model(double step_overhead = 500e-6) {
  sim::RooflineConfig roofline;
  roofline.hardware = sim::find_hardware("h100-sxm");
  roofline.model = model::model_shape_from_config(tiny_model().bundle->config, "tiny");
  roofline.block_size = 4;
  roofline.overheads.step_seconds = step_overhead;
  return std::make_shared<const sim::RooflineCostModel>(roofline);
}

engine::ScriptedExecutorConfig script() {
  engine::ScriptedExecutorConfig tokens = sim::default_sim_tokens();
  tokens.vocab_size = static_cast<int32_t>(tiny_model().bundle->config.vocab_size);
  tokens.verify_kv = true;  // the script also checks every KV read of the engine's plans
  return tokens;
}

sim::LockstepRun run_sim(const engine::EngineConfig& config, const std::vector<sched::Request>& requests) {
  sim::SimExecutor executor({.cost_model = clock_model(), .tokens = script()}, config.cache);
  return sim::run_lockstep(requests, config, executor);
}

sim::LockstepRun run_cpu(const engine::EngineConfig& config, const std::vector<sched::Request>& requests,
                         std::shared_ptr<const sim::CostModel> cost_model) {
  cpu_ref::CpuExecutor cpu(tiny_model().weights, {.cache = config.cache, .num_threads = 1});
  sim::LockstepExecutor executor(cpu, {.cost_model = std::move(cost_model), .tokens = script()}, config.cache);
  sim::LockstepRun run = sim::run_lockstep(requests, config, executor);
  BOOST_TEST(executor.num_tokens_computed() > 0);
  return run;
}

BOOST_AUTO_TEST_SUITE(lockstep)

BOOST_AUTO_TEST_CASE(cpu_and_sim_write_identical_kv_event_logs_under_both_preemption_modes) {
  const std::vector<sched::Request> requests = workload(static_cast<int32_t>(tiny_model().bundle->config.vocab_size));
  for (const sched::PreemptionMode mode : {sched::PreemptionMode::swap, sched::PreemptionMode::recompute}) {
    const engine::EngineConfig config = small_engine(mode);
    const sim::LockstepRun sim_run = run_sim(config, requests);
    const sim::LockstepRun cpu_run = run_cpu(config, requests, clock_model());
    BOOST_TEST_MESSAGE("mode " << (mode == sched::PreemptionMode::swap ? "swap" : "recompute") << ": "
                               << sim_run.num_steps << " steps, " << sim_run.event_log.size() << " log bytes");
    BOOST_TEST(sim_run.outputs.size() == requests.size());
    BOOST_TEST((mode == sched::PreemptionMode::swap ? sim_run.preemptions_swap : sim_run.preemptions_recompute) > 0);
    BOOST_TEST(sim_run.prefix_hit_tokens > 0);
    const auto difference = sim::first_difference(sim_run.event_log, cpu_run.event_log);
    BOOST_TEST(!difference.has_value(), "logs differ at line " << (difference ? difference->line : 0) << ": "
                                                               << (difference ? difference->expected : "") << " | "
                                                               << (difference ? difference->actual : ""));
    BOOST_TEST(!sim::first_output_difference(sim_run, cpu_run).has_value());
    BOOST_TEST(sim_run.num_steps == cpu_run.num_steps);
    BOOST_TEST(sim_run.virtual_seconds == cpu_run.virtual_seconds);
  }
}

BOOST_AUTO_TEST_CASE(a_deliberate_difference_is_reported_at_its_first_line) {
  const std::vector<sched::Request> requests = workload(static_cast<int32_t>(tiny_model().bundle->config.vocab_size));
  const engine::EngineConfig config = small_engine(sched::PreemptionMode::swap);
  const sim::LockstepRun sim_run = run_sim(config, requests);
  // The injected difference: the cpu run's clock ticks slower, so arrivals interleave otherwise.
  const sim::LockstepRun cpu_run = run_cpu(config, requests, clock_model(5e-3));
  const auto difference = sim::first_difference(sim_run.event_log, cpu_run.event_log);
  BOOST_REQUIRE(difference.has_value());
  BOOST_TEST(difference->line > 1);
  BOOST_TEST(difference->expected != difference->actual);
  BOOST_TEST_MESSAGE("first difference at line " << difference->line << ": " << difference->expected << " | "
                                                 << difference->actual);
}

BOOST_AUTO_TEST_CASE(first_difference_names_the_line_and_the_end_of_a_shorter_log) {
  BOOST_TEST(!sim::first_difference("a\nb\n", "a\nb\n").has_value());
  const auto changed = sim::first_difference("a\nb\nc\n", "a\nb\nx\n");
  BOOST_REQUIRE(changed.has_value());
  BOOST_TEST(changed->line == 3);
  BOOST_TEST(changed->expected == "c");
  BOOST_TEST(changed->actual == "x");
  const auto shorter = sim::first_difference("a\nb\n", "a\n");
  BOOST_REQUIRE(shorter.has_value());
  BOOST_TEST(shorter->line == 2);
  BOOST_TEST(shorter->actual == "<end of log>");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm::test
