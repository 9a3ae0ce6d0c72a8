// The simulator with a draft model: the target's verify passes draw acceptance at the configured
// rates (as for placeholder drafts), and the draft's own passes, priced by the draft's roofline,
// are added to the steps' time. Against placeholder drafts at the same rates the schedule is the
// same step for step, so the two runs differ in time by exactly the draft's passes.
#include <boost/test/unit_test.hpp>

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "core/common/mix.h"
#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/model/model_shape.h"
#include "sim/hardware.h"
#include "sim/roofline_cost_model.h"
#include "sim/sim_executor.h"

namespace pagedllm::test {
namespace {

std::shared_ptr<const sim::CostModel> roofline_on_h100(const char* model) {
  sim::RooflineConfig roofline;
  roofline.hardware = sim::find_hardware("h100-sxm");
  roofline.model = model::find_model_shape(model);
  return std::make_shared<const sim::RooflineCostModel>(roofline);
}

struct Run {
  double end_time = 0.0;
  int64_t num_steps = 0;
  engine::EngineCounters counters;
  std::map<sched::RequestId, size_t> output_lengths;
};

Run simulate(bool draft_model) {
  constexpr int32_t kVocab = 128256;
  engine::EngineConfig config;
  config.cache.block_size = 16;
  config.cache.num_device_blocks = 4096;
  config.cache.num_host_blocks = 0;
  config.scheduler.max_model_len = 4096;
  config.scheduler.max_num_seqs = 8;
  config.output_kind = engine::OutputKind::final_only;
  const spec::SimulatedAcceptance rates{.draft_rate = 1.0, .accepted_per_position = {0.8, 0.6, 0.4}};
  if (draft_model) {
    config.speculative = {.method = spec::SpeculativeMethod::draft_model,
                          .num_speculative_tokens = 3,
                          .draft_model = "llama-3.2-1b",
                          .disable_by_batch_size = 0,
                          .simulated = rates};
  } else {
    config.speculative = {.method = spec::SpeculativeMethod::ngram,
                          .num_speculative_tokens = 3,
                          .prompt_lookup_min = 1,
                          .prompt_lookup_max = 1,
                          .disable_by_batch_size = 0,
                          .simulated = rates};
  }
  const engine::ScriptedExecutorConfig tokens = sim::sim_tokens_for(config, kVocab);
  sim::SimExecutor executor({.cost_model = roofline_on_h100("llama-3-8b"), .tokens = tokens}, config.cache);
  std::optional<spec::DraftModelProposer> draft;
  if (draft_model) {
    const kv::KvCacheConfig draft_cache = spec::draft_cache_config(config.cache, 0);
    draft.emplace(
        spec::DraftModelProposerConfig{.cache = draft_cache, .max_num_batched_tokens = 2048},
        std::make_unique<sim::SimExecutor>(
            sim::SimExecutorConfig{.cost_model = roofline_on_h100("llama-3.2-1b"), .tokens = tokens}, draft_cache));
  }
  engine::VirtualClock clock;
  engine::Engine llm(config, executor, clock, nullptr, draft ? &*draft : nullptr);
  for (sched::RequestId id = 0; id < 12; ++id) {
    std::vector<TokenId> prompt;
    for (int32_t i = 0; i < 100 + 20 * static_cast<int32_t>(id); ++i) {
      prompt.push_back(static_cast<TokenId>(mix64(static_cast<uint64_t>(id) * 100003 + static_cast<uint64_t>(i)) %
                                            static_cast<uint64_t>(kVocab)));
    }
    sched::SamplingParams params;
    params.max_tokens = 64;
    params.ignore_eos = true;
    llm.add_request({.id = id, .prompt_tokens = prompt, .params = params});
  }
  Run run;
  while (llm.has_unfinished()) {
    for (const engine::RequestOutput& output : llm.step()) {
      if (output.finished) run.output_lengths[output.id] = output.completions.at(0).tokens.size();
    }
  }
  run.end_time = clock.now();
  run.num_steps = llm.num_steps();
  run.counters = llm.counters();
  return run;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sim_draft_model)

BOOST_AUTO_TEST_CASE(the_draft_passes_are_priced_on_top_of_the_same_schedule) {
  const Run placeholders = simulate(false);
  const Run drafted = simulate(true);
  BOOST_TEST(drafted.num_steps == placeholders.num_steps);
  BOOST_TEST(drafted.output_lengths == placeholders.output_lengths);
  BOOST_TEST(drafted.counters.spec_drafts == placeholders.counters.spec_drafts);
  BOOST_TEST(drafted.counters.spec_accepted_tokens == placeholders.counters.spec_accepted_tokens);
  BOOST_TEST(drafted.counters.spec_accepted_tokens > 0);
  BOOST_TEST(placeholders.counters.draft_passes == 0);
  // Per draft at least its k tokens: the last confirmed one (or more) and k - 1 proposals.
  BOOST_TEST(drafted.counters.draft_tokens_computed >= drafted.counters.spec_draft_tokens);
  BOOST_TEST(drafted.counters.draft_seconds > 0.0);
  // The only difference in time is the draft's passes.
  BOOST_TEST(drafted.end_time - placeholders.end_time == drafted.counters.draft_seconds,
             boost::test_tools::tolerance(1e-9));
  // A 1B draft's pass is a fraction of the 8B target's decode step (memory-bound: the weights).
  const double draft_pass = drafted.counters.draft_seconds / static_cast<double>(drafted.counters.draft_passes);
  const double target_step = placeholders.end_time / static_cast<double>(placeholders.num_steps);
  BOOST_TEST(draft_pass < 0.5 * target_step);
  BOOST_TEST_MESSAGE("draft pass " << draft_pass * 1e3 << " ms, target step " << target_step * 1e3 << " ms; "
                                   << drafted.counters.draft_passes << " draft passes");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
