// Speculative decoding on the CPU reference engine is lossless: with n-gram or draft-model
// proposals verified in one pass, every request's tokens and logprobs are bit-identical to a run
// without speculation, at temperature 0 and at temperature 1 with a seed (each position keeps its
// own draw; see core/sampling/proposal_verify.h), alone, batched, and preempted by swap or by
// recompute. A draft model runs on a CpuExecutor of its own, over its own paged KV cache.
#include <boost/test/unit_test.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/common/mix.h"
#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "cpu_ref/cpu_executor.h"
#include "tests/cpu_ref/tiny_cpu_model.h"

namespace pagedllm::cpu_ref {
namespace {

std::shared_ptr<const LlamaModel> speculation_tiny_model() {
  static const std::shared_ptr<const LlamaModel> model = write_and_load_tiny_model("pagedllm_test_speculation_tiny");
  return model;
}

// An input-grounded prompt: a passage, then the same passage again with a few tokens changed (an
// edit to reproduce), so lookups find what comes next.
std::vector<TokenId> grounded_prompt(uint64_t seed, int32_t vocab) {
  std::vector<TokenId> passage;
  for (int32_t i = 0; i < 24; ++i) {
    passage.push_back(static_cast<TokenId>(3 + mix64(seed * 7919 + static_cast<uint64_t>(i)) % (vocab - 3)));
  }
  std::vector<TokenId> prompt = passage;
  prompt.push_back(1);
  for (size_t i = 0; i < passage.size(); ++i)
    prompt.push_back(i % 9 == 4 ? passage[(i + 1) % passage.size()] : passage[i]);
  prompt.push_back(1);
  prompt.insert(prompt.end(), passage.begin(), passage.begin() + 6);
  return prompt;
}

// Draft models over the target's tokenizer: the target itself (its greedy proposals are what the
// target chooses at temperature 0), the target's weights rounded to bf16 (it mostly agrees), and a
// smaller model of other weights (it almost never agrees).
std::shared_ptr<const LlamaModel> rounded_draft_model() {
  static const std::shared_ptr<const LlamaModel> model = [] {
    make_model::TinyModelSpec spec;
    spec.safetensors_dtype = model::SafetensorsDtype::bf16;
    return write_and_load_tiny_model("pagedllm_test_speculation_bf16_draft", spec);
  }();
  return model;
}

std::shared_ptr<const LlamaModel> unrelated_draft_model() {
  static const std::shared_ptr<const LlamaModel> model = [] {
    make_model::TinyModelSpec spec;
    spec.seed = 7;
    spec.hidden_size = 32;
    spec.num_layers = 1;
    spec.num_heads = 2;
    spec.num_kv_heads = 1;
    spec.intermediate_size = 64;
    return write_and_load_tiny_model("pagedllm_test_speculation_small_draft", spec);
  }();
  return model;
}

struct Setup {
  bool speculate = false;
  std::shared_ptr<const LlamaModel> draft{};  // speculate with this draft model instead of n-grams
  bool batched = true;                        // every request at once; false: one at a time
  bool only_greedy = false;                   // every request at temperature 0 without penalties
  int32_t num_device_blocks = 256;
  int32_t max_num_batched_tokens = 256;
  std::optional<sched::PreemptionMode> preemption_mode{};
};

struct Completion {
  std::vector<TokenId> tokens;
  std::vector<float> logprobs;
};

struct Run {
  std::map<sched::RequestId, Completion> completions;
  engine::EngineCounters counters;
  int32_t draft_blocks_held = 0;  // by the draft's sequences once every request finished
};

Run generate(const Setup& setup) {
  const auto model = speculation_tiny_model();
  engine::EngineConfig config;
  config.cache.block_size = 8;
  config.cache.num_device_blocks = setup.num_device_blocks;
  config.cache.num_host_blocks = 256;
  config.cache.watermark = 0.0;
  config.scheduler.max_model_len = 512;
  config.scheduler.max_num_batched_tokens = setup.max_num_batched_tokens;
  config.scheduler.preemption_mode = setup.preemption_mode;
  config.output_kind = engine::OutputKind::final_only;
  if (setup.speculate) {
    config.speculative = {.method = spec::SpeculativeMethod::ngram,
                          .num_speculative_tokens = 4,
                          .prompt_lookup_min = 1,
                          .prompt_lookup_max = 3,
                          .disable_by_batch_size = 0};
  }
  std::optional<spec::DraftModelProposer> draft;
  if (setup.draft) {
    config.speculative.method = spec::SpeculativeMethod::draft_model;
    config.speculative.draft_model = "tiny draft";
    const kv::KvCacheConfig draft_cache = spec::draft_cache_config(config.cache, 0);
    draft.emplace(
        spec::DraftModelProposerConfig{.cache = draft_cache, .max_num_batched_tokens = setup.max_num_batched_tokens},
        std::make_unique<CpuExecutor>(setup.draft, CpuExecutorConfig{.cache = draft_cache, .num_threads = 2}));
  }
  CpuExecutor executor(model, {.cache = config.cache, .num_threads = 2});
  engine::VirtualClock clock;
  engine::Engine engine(config, executor, clock, nullptr, draft ? &*draft : nullptr);
  Run run;
  const auto drain = [&] {
    while (engine.has_unfinished()) {
      for (const engine::RequestOutput& output : engine.step()) {
        if (!output.finished) continue;
        const engine::Completion& completion = output.completions.at(0);
        run.completions[output.id] = {completion.tokens, completion.token_logprobs};
      }
    }
  };
  for (sched::RequestId id = 0; id < 8; ++id) {
    sched::SamplingParams params;
    params.max_tokens = 96 + static_cast<int32_t>(id) * 3;
    params.ignore_eos = true;
    params.logprobs = 2;
    if (setup.only_greedy) {
      params.temperature = 0.0f;
    } else if (id % 2 == 1) {
      params.temperature = 1.0f;
      params.seed = 100 + id;
    } else {
      params.temperature = 0.0f;
    }
    if (id % 4 == 2 && !setup.only_greedy) params.repetition_penalty = 1.3f;  // the penalties see accepted proposals
    if (id % 4 == 3 && !setup.only_greedy) params.frequency_penalty = 0.5f;
    engine.add_request({.id = id, .prompt_tokens = grounded_prompt(id, model->vocab_size()), .params = params});
    if (!setup.batched) drain();
  }
  drain();
  run.counters = engine.counters();
  if (draft) {
    draft->kv().check_invariants();
    draft->release_gone([](SeqId) { return false; });  // what the next round would do
    draft->kv().check_invariants();
    run.draft_blocks_held = draft->kv().stats().num_used_device_blocks();
  }
  return run;
}

void check_identical(const Run& expected, const Run& actual) {
  BOOST_TEST_REQUIRE(actual.completions.size() == expected.completions.size());
  for (const auto& [id, want] : expected.completions) {
    const Completion& got = actual.completions.at(id);
    BOOST_TEST_CONTEXT("request " << id) {
      BOOST_TEST(got.tokens == want.tokens, boost::test_tools::per_element());
      BOOST_TEST(got.logprobs == want.logprobs, boost::test_tools::per_element());  // bit for bit
    }
  }
}

const Run& reference() {
  static const Run run = generate({.speculate = false, .batched = false});
  return run;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cpu_speculative_decoding)

BOOST_AUTO_TEST_CASE(one_request_at_a_time) {
  const Run run = generate({.speculate = true, .batched = false});
  check_identical(reference(), run);
  BOOST_TEST(run.counters.spec_drafts >= 20);
  BOOST_TEST(run.counters.spec_accepted_tokens >= 10);
  BOOST_TEST(run.counters.spec_accepted_tokens < run.counters.spec_draft_tokens);
  BOOST_TEST_MESSAGE("alone: " << run.counters.spec_accepted_tokens << " of " << run.counters.spec_draft_tokens
                               << " proposals accepted in " << run.counters.spec_drafts << " drafts");
}

BOOST_AUTO_TEST_CASE(batched) {
  const Run run = generate({.speculate = true, .batched = true});
  check_identical(reference(), run);
  BOOST_TEST(run.counters.spec_accepted_tokens > 0);
}

BOOST_AUTO_TEST_CASE(under_preemption_by_swap_and_by_recompute) {
  for (const sched::PreemptionMode mode : {sched::PreemptionMode::swap, sched::PreemptionMode::recompute}) {
    BOOST_TEST_CONTEXT((mode == sched::PreemptionMode::swap ? "swap" : "recompute")) {
      const Run run = generate({.speculate = true, .batched = true, .num_device_blocks = 40, .preemption_mode = mode});
      check_identical(reference(), run);
      BOOST_TEST(run.counters.preemptions_swap + run.counters.preemptions_recompute > 0);
      BOOST_TEST(run.counters.spec_accepted_tokens > 0);
    }
  }
}

BOOST_AUTO_TEST_CASE(draft_model_that_is_the_target) {
  // At temperature 0 its proposals are the target's own choices, computed over the draft's cache
  // in chunks and single decodes: every one is accepted, which checks that cache's rollback.
  const Run greedy_reference = generate({.speculate = false, .batched = false, .only_greedy = true});
  const Run greedy =
      generate({.speculate = true, .draft = speculation_tiny_model(), .batched = true, .only_greedy = true});
  check_identical(greedy_reference, greedy);
  BOOST_TEST(greedy.counters.spec_drafts >= 40);
  BOOST_TEST(greedy.counters.spec_accepted_tokens == greedy.counters.spec_draft_tokens);
  BOOST_TEST(greedy.draft_blocks_held == 0);
  // Sampled and penalized requests reject some.
  const Run mixed = generate({.speculate = true, .draft = speculation_tiny_model(), .batched = true});
  check_identical(reference(), mixed);
  BOOST_TEST(mixed.counters.spec_accepted_tokens > 0);
  BOOST_TEST(mixed.counters.spec_accepted_tokens < mixed.counters.spec_draft_tokens);
  BOOST_TEST(mixed.counters.draft_passes > 0);
  BOOST_TEST_MESSAGE("draft = target: greedy "
                     << greedy.counters.spec_accepted_tokens << " of " << greedy.counters.spec_draft_tokens
                     << ", mixed " << mixed.counters.spec_accepted_tokens << " of " << mixed.counters.spec_draft_tokens
                     << " proposals accepted");
}

BOOST_AUTO_TEST_CASE(draft_models_that_disagree_alone_and_batched) {
  for (const bool batched : {false, true}) {
    BOOST_TEST_CONTEXT((batched ? "batched" : "alone")) {
      const Run rounded = generate({.speculate = true, .draft = rounded_draft_model(), .batched = batched});
      check_identical(reference(), rounded);
      BOOST_TEST(rounded.counters.spec_drafts >= 40);
      BOOST_TEST(rounded.counters.spec_accepted_tokens > 0);
      BOOST_TEST(rounded.draft_blocks_held == 0);
      const Run unrelated = generate({.speculate = true, .draft = unrelated_draft_model(), .batched = batched});
      check_identical(reference(), unrelated);
      BOOST_TEST(unrelated.counters.spec_drafts >= 40);
      BOOST_TEST(unrelated.draft_blocks_held == 0);
      BOOST_TEST_MESSAGE("bf16 draft: " << rounded.counters.spec_accepted_tokens << " of "
                                        << rounded.counters.spec_draft_tokens
                                        << ", unrelated draft: " << unrelated.counters.spec_accepted_tokens << " of "
                                        << unrelated.counters.spec_draft_tokens << " proposals accepted");
    }
  }
}

BOOST_AUTO_TEST_CASE(draft_model_catches_up_in_chunks) {
  // A 32-token step budget: prompts (55 tokens) are prefilled in chunks by the target, and the
  // draft catches up on them in chunks too, over several rounds, before it proposes.
  const Run run =
      generate({.speculate = true, .draft = rounded_draft_model(), .batched = true, .max_num_batched_tokens = 32});
  check_identical(reference(), run);
  BOOST_TEST(run.counters.spec_drafts > 0);
  BOOST_TEST(run.draft_blocks_held == 0);
}

BOOST_AUTO_TEST_CASE(draft_model_under_preemption_by_swap_and_by_recompute) {
  for (const sched::PreemptionMode mode : {sched::PreemptionMode::swap, sched::PreemptionMode::recompute}) {
    BOOST_TEST_CONTEXT((mode == sched::PreemptionMode::swap ? "swap" : "recompute")) {
      const Run run = generate({.speculate = true,
                                .draft = speculation_tiny_model(),
                                .batched = true,
                                .num_device_blocks = 40,
                                .preemption_mode = mode});
      check_identical(reference(), run);
      BOOST_TEST(run.counters.preemptions_swap + run.counters.preemptions_recompute > 0);
      BOOST_TEST(run.counters.spec_accepted_tokens > 0);
      BOOST_TEST(run.draft_blocks_held == 0);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::cpu_ref
