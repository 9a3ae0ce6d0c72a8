// Engine tests of speculative decoding on the scripted executor: its verify pass accepts a
// proposal exactly when the script would have drawn it, so a run with speculation must return the
// tokens of a run without, whatever the schedule; every KV read is checked on the way.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/engine/engine_harness.h"

namespace pagedllm::test {
namespace {

// A script of 6 tokens (EOS one in 16 steps) repeats short n-grams, so lookups often find a match
// and a proposal is right about one time in six: accepted, partly accepted and rejected drafts all
// occur.
constexpr int32_t kSmallVocab = 6;

spec::SpeculativeConfig ngram(int32_t k) {
  return {.method = spec::SpeculativeMethod::ngram,
          .num_speculative_tokens = k,
          .prompt_lookup_min = 1,
          .prompt_lookup_max = 3,
          .disable_by_batch_size = 0};  // whatever the batch
}

// The schedules a run must not change tokens under: ample blocks, and a pool too small for the
// workload (preemption by recompute, by swap, and vLLM's choice without chunked prefill).
struct ScheduleCase {
  const char* name;
  std::optional<PreemptionMode> mode;
  bool chunked_prefill;
  bool small;
};
const ScheduleCase kScheduleCases[] = {{"ample pool", std::nullopt, true, false},
                                       {"small pool, recompute", PreemptionMode::recompute, true, true},
                                       {"small pool, swap", PreemptionMode::swap, true, true},
                                       {"small pool, auto, no chunked prefill", std::nullopt, false, true}};

void check_speculation_ran(const engine::EngineCounters& counters, int32_t k) {
  BOOST_TEST(counters.spec_drafts > 20);
  BOOST_TEST(counters.spec_accepted_tokens > 0);
  BOOST_TEST(counters.spec_accepted_tokens < counters.spec_draft_tokens);  // some were rejected
  BOOST_TEST(counters.spec_draft_tokens <= counters.spec_drafts * k);
  const std::vector<int64_t>& per_position = counters.spec_accepted_per_position;
  BOOST_TEST(std::accumulate(per_position.begin(), per_position.end(), int64_t{0}) == counters.spec_accepted_tokens);
  // Position j + 1 is accepted only after position j.
  for (size_t j = 1; j < per_position.size(); ++j) BOOST_TEST(per_position[j] <= per_position[j - 1]);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(engine_speculative_decoding)

BOOST_AUTO_TEST_CASE(speculation_changes_no_token_whatever_the_schedule) {
  for (const uint64_t seed : {21, 22}) {
    // Samples (n = 2..3), beams (which do not speculate), min_tokens and ignore_eos all mixed in.
    const std::vector<sched::Request> requests = make_workload({.seed = seed});
    EngineSetup plain;
    plain.vocab_size = kSmallVocab;
    const RunResult expected = run_workload(plain, requests);
    for (const ScheduleCase& c : kScheduleCases) {
      for (const int32_t k : {1, 4}) {
        BOOST_TEST_CONTEXT("seed " << seed << ", " << c.name << ", k " << k) {
          EngineSetup setup = c.small ? small_pool(c.mode, c.chunked_prefill) : EngineSetup{};
          setup.vocab_size = kSmallVocab;
          setup.speculative = ngram(k);
          const RunResult run = run_workload(setup, requests);
          check_same_tokens(expected, run);
          check_speculation_ran(run.counters, k);
          BOOST_TEST(run.counters.generation_tokens == expected.counters.generation_tokens);
          if (c.small) {
            BOOST_TEST(run.counters.preemptions_recompute + run.counters.preemptions_swap > 0);
          } else {
            BOOST_TEST(run.num_steps < expected.num_steps);  // accepted proposals took no step of their own
          }
          BOOST_TEST_MESSAGE("seed " << seed << ", " << c.name << ", k " << k << ": " << run.num_steps << " steps ("
                                     << expected.num_steps << " without), " << run.counters.spec_accepted_tokens
                                     << " of " << run.counters.spec_draft_tokens << " proposals accepted");
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_draft_model_changes_no_token_whatever_the_schedule) {
  // The draft is a scripted executor over a paged cache of its own, whose every KV read is checked:
  // one that follows the target's script (it disagrees only where the target's min_tokens or EOS
  // differ) and one of a smaller vocabulary (it agrees about one time in six).
  const std::vector<sched::Request> requests = make_workload({.seed = 24});
  EngineSetup plain;
  plain.vocab_size = kSmallVocab;
  const RunResult expected = run_workload(plain, requests);
  for (const ScheduleCase& c : kScheduleCases) {
    for (const int32_t draft_vocab : {kSmallVocab, kSmallVocab - 1}) {
      BOOST_TEST_CONTEXT(c.name << ", draft vocabulary " << draft_vocab) {
        EngineSetup setup = c.small ? small_pool(c.mode, c.chunked_prefill) : EngineSetup{};
        setup.vocab_size = kSmallVocab;
        setup.speculative = {.method = spec::SpeculativeMethod::draft_model,
                             .num_speculative_tokens = 3,
                             .draft_model = "scripted",
                             .disable_by_batch_size = 0};
        engine::ScriptedExecutorConfig draft = executor_config(setup);
        draft.vocab_size = draft_vocab;
        draft.eos_period = 0;
        setup.draft = draft;
        const RunResult run = run_workload(setup, requests);
        check_same_tokens(expected, run);
        check_speculation_ran(run.counters, 3);
        BOOST_TEST(run.counters.draft_passes > 0);
        if (c.small) BOOST_TEST(run.counters.preemptions_recompute + run.counters.preemptions_swap > 0);
        BOOST_TEST_MESSAGE(c.name << ", draft vocabulary " << draft_vocab << ": " << run.counters.spec_accepted_tokens
                                  << " of " << run.counters.spec_draft_tokens << " proposals accepted, "
                                  << run.num_steps << " steps (" << expected.num_steps << " without), "
                                  << run.counters.draft_passes << " draft passes");
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(proposals_stay_within_budget_and_max_tokens) {
  // A budget of 3 tokens a step: a decode speculates at most 2 ahead whatever k says, and a
  // request never gets past max_tokens.
  std::vector<sched::Request> requests;
  for (sched::RequestId id = 1; id <= 4; ++id) requests.push_back(make_request(id, 5, 9));
  EngineSetup setup;
  setup.vocab_size = kSmallVocab;
  setup.eos_period = 0;
  setup.max_num_batched_tokens = 3;
  setup.speculative = ngram(2);
  const RunResult run = run_workload(setup, requests);
  for (const PlanRecord& plan : run.plans) BOOST_TEST(plan.num_batched_tokens <= 3);
  for (const auto& [id, output] : run.outputs) {
    BOOST_TEST(output.completions.front().tokens.size() == 9u);
    BOOST_TEST(output.finish_reason == FinishReason::length);
  }
  BOOST_TEST(run.counters.spec_drafts > 0);
  EngineSetup plain = setup;
  plain.speculative = {};
  check_same_tokens(run_workload(plain, requests), run);
}

BOOST_AUTO_TEST_CASE(no_proposals_while_the_batch_is_large) {
  // 40 requests at once: with disable_by_batch_size 8, sequences propose only once at most 8
  // requests run (the workload's tail), so fewer drafts than without the limit, but some.
  const std::vector<sched::Request> requests = make_workload({.seed = 23, .percent_beam = 0});
  EngineSetup setup;
  setup.vocab_size = kSmallVocab;
  setup.speculative = ngram(2);
  const RunResult unlimited = run_workload(setup, requests);
  setup.speculative.disable_by_batch_size = 8;
  const RunResult limited = run_workload(setup, requests);
  check_same_tokens(unlimited, limited);
  BOOST_TEST(limited.counters.spec_drafts > 0);
  BOOST_TEST(limited.counters.spec_drafts < unlimited.counters.spec_drafts / 2);
}

BOOST_AUTO_TEST_CASE(aborting_and_stopping_speculating_requests_free_everything) {
  // Requests whose outputs loop (a 4-token script repeats itself), aborted or stopped between
  // steps while they hold proposals for the next one (n-gram), or are queued for the draft
  // model's next round (a scripted draft following the target's script).
  for (const bool with_draft : {false, true}) {
    BOOST_TEST_CONTEXT((with_draft ? "draft model" : "ngram")) {
      EngineSetup setup;
      setup.vocab_size = 4;
      setup.eos_period = 0;
      setup.speculative = ngram(3);
      std::optional<spec::DraftModelProposer> draft;
      if (with_draft) {
        setup.speculative = {.method = spec::SpeculativeMethod::draft_model,
                             .num_speculative_tokens = 3,
                             .draft_model = "scripted",
                             .disable_by_batch_size = 0};
        const kv::KvCacheConfig draft_cache = spec::draft_cache_config(engine_config(setup).cache, 0);
        draft.emplace(spec::DraftModelProposerConfig{.cache = draft_cache, .max_num_batched_tokens = 128},
                      std::make_unique<engine::ScriptedExecutor>(executor_config(setup), draft_cache));
      }
      const engine::EngineConfig config = engine_config(setup);
      engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
      engine::VirtualClock clock;
      engine::Engine llm(config, scripted, clock, nullptr, draft ? &*draft : nullptr);
      for (sched::RequestId id = 1; id <= 6; ++id) {
        sched::Request request = make_request(id, 9, 60);
        if (id == 6) request.params.n = 2;
        llm.add_request(std::move(request));
      }
      std::map<sched::RequestId, engine::RequestOutput> finished;
      const auto step = [&] {
        for (engine::RequestOutput& output : llm.step()) {
          if (output.finished) finished.emplace(output.id, std::move(output));
        }
        llm.scheduler().check_invariants();
        if (draft) draft->kv().check_invariants();
      };
      for (int i = 0; i < 8; ++i) step();
      BOOST_REQUIRE(llm.counters().spec_drafts > 0);
      BOOST_TEST(llm.abort_request(2));
      BOOST_TEST(llm.stop_sample(6, 1));
      step();
      BOOST_TEST(finished.contains(2));
      BOOST_TEST((finished.at(2).finish_reason == FinishReason::abort));
      for (int i = 0; i < 4; ++i) step();
      BOOST_TEST(llm.abort_request(3));
      while (llm.has_unfinished()) step();
      BOOST_TEST(finished.size() == 6u);
      BOOST_TEST((finished.at(1).finish_reason == FinishReason::length));
      BOOST_TEST(finished.at(1).completions.front().tokens.size() == 60u);
      BOOST_TEST(llm.kv().stats().num_sequences == 0);
      BOOST_TEST(llm.kv().stats().num_free_device_blocks == setup.num_device_blocks);
      if (draft) {
        BOOST_TEST(llm.counters().spec_accepted_tokens == llm.counters().spec_draft_tokens);  // the same script
        draft->release_gone([&](SeqId seq) { return llm.kv().contains(seq); });
        BOOST_TEST(draft->kv().stats().num_sequences == 0);
        BOOST_TEST(draft->kv().stats().num_free_device_blocks == setup.num_device_blocks);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_simulated_drafts_and_acceptance_follow_their_rates) {
  // The simulator's model (spec::SimulatedAcceptance): drafts at a rate, proposal j accepted with
  // probability rates[j]. 30 requests of 200 tokens: about 3,000 drafts, so each measured rate is
  // within 0.04 (4 standard errors) of its setting.
  std::vector<sched::Request> requests;
  for (sched::RequestId id = 1; id <= 30; ++id) requests.push_back(make_request(id, 20, 200));
  EngineSetup setup;
  setup.eos_period = 0;
  setup.max_model_len = 256;
  setup.speculative = ngram(4);
  const std::vector<double> rates{0.8, 0.6, 0.45, 0.3};
  setup.speculative.simulated = spec::SimulatedAcceptance{.draft_rate = 0.5, .accepted_per_position = rates};
  const RunResult run = run_workload(setup, requests);
  const engine::EngineCounters& c = run.counters;
  const auto drafts = static_cast<double>(c.spec_drafts);
  BOOST_TEST(c.decode_passes > 0);
  BOOST_TEST(std::abs(drafts / static_cast<double>(c.decode_passes) - 0.5) < 0.04);
  BOOST_TEST_REQUIRE(c.spec_accepted_per_position.size() == rates.size());
  for (size_t j = 0; j < rates.size(); ++j) {
    const double measured = static_cast<double>(c.spec_accepted_per_position[j]) / drafts;
    BOOST_TEST(std::abs(measured - rates[j]) < 0.04, "position " << j << ": " << measured << " vs " << rates[j]);
  }
  for (const auto& [id, output] : run.outputs) BOOST_TEST(output.completions.front().tokens.size() == 200u);
  BOOST_TEST_MESSAGE("simulated: " << c.spec_drafts << " drafts in " << c.decode_passes << " decode passes");
}

BOOST_AUTO_TEST_CASE(each_request_reports_its_own_speculation) {
  // The engine's counters, request by request (RequestOutput::speculation): summed over the
  // requests they are the engine's; a request's accepted counts never rise with the position.
  std::vector<sched::Request> requests;
  for (int32_t i = 1; i <= 12; ++i) requests.push_back(make_request(i, 10 + 3 * i, 30 + 4 * i));
  EngineSetup setup;
  setup.vocab_size = kSmallVocab;
  setup.speculative = ngram(3);
  const RunResult run = run_workload(setup, requests);
  check_speculation_ran(run.counters, 3);
  spec::SpeculationTally sum;
  for (const auto& [id, output] : run.outputs) {
    BOOST_TEST_REQUIRE(output.speculation != nullptr, "request " << id);
    const spec::SpeculationTally& tally = *output.speculation;
    sum.decode_passes += tally.decode_passes;
    sum.drafts += tally.drafts;
    sum.draft_tokens += tally.draft_tokens;
    sum.accepted_per_position.resize(std::max(sum.accepted_per_position.size(), tally.accepted_per_position.size()));
    for (size_t j = 0; j < tally.accepted_per_position.size(); ++j) {
      sum.accepted_per_position[j] += tally.accepted_per_position[j];
      if (j > 0) BOOST_TEST(tally.accepted_per_position[j] <= tally.accepted_per_position[j - 1]);
    }
    const spec::SimulatedAcceptance rates = tally.rates();
    BOOST_TEST(rates.draft_rate >= 0.0);
    BOOST_TEST(rates.draft_rate <= 1.0);
  }
  BOOST_TEST(sum.decode_passes == run.counters.decode_passes);
  BOOST_TEST(sum.drafts == run.counters.spec_drafts);
  BOOST_TEST(sum.draft_tokens == run.counters.spec_draft_tokens);
  BOOST_TEST(sum.accepted_per_position == run.counters.spec_accepted_per_position, boost::test_tools::per_element());

  setup.speculative = {};
  for (const auto& [id, output] : run_workload(setup, requests).outputs) {
    BOOST_TEST(output.speculation == nullptr, "request " << id << " without speculation");
  }
}

BOOST_AUTO_TEST_CASE(a_request_with_its_own_simulated_rates_follows_them) {
  // A measured trace's requests bring their own rates (SamplingParams::simulated_speculation),
  // which replace the engine-wide ones: here never drafting, or always drafting and always right;
  // the rest follow the config's.
  EngineSetup setup;
  setup.eos_period = 0;
  setup.max_model_len = 256;
  setup.speculative = ngram(4);
  setup.speculative.simulated =
      spec::SimulatedAcceptance{.draft_rate = 0.5, .accepted_per_position = {0.5, 0.4, 0.3, 0.2}};
  const auto never = std::make_shared<const spec::SimulatedAcceptance>(
      spec::SimulatedAcceptance{.draft_rate = 0.0, .accepted_per_position = {1.0, 1.0, 1.0, 1.0}});
  const auto always = std::make_shared<const spec::SimulatedAcceptance>(
      spec::SimulatedAcceptance{.draft_rate = 1.0, .accepted_per_position = {1.0, 1.0, 1.0, 1.0}});
  // Measured at k = 2: positions 3 and 4 have no rate, so they are rejected.
  const auto shorter = std::make_shared<const spec::SimulatedAcceptance>(
      spec::SimulatedAcceptance{.draft_rate = 1.0, .accepted_per_position = {1.0, 1.0}});
  std::vector<sched::Request> requests;
  for (sched::RequestId id = 1; id <= 12; ++id) {
    sched::Request request = make_request(id, 20, 101);
    if (id % 4 == 1) request.params.simulated_speculation = never;
    if (id % 4 == 2) request.params.simulated_speculation = always;
    if (id % 4 == 3) request.params.simulated_speculation = shorter;
    requests.push_back(std::move(request));
  }
  const RunResult run = run_workload(setup, requests);
  for (const auto& [id, output] : run.outputs) {
    BOOST_TEST_REQUIRE(output.speculation != nullptr);
    const spec::SpeculationTally& tally = *output.speculation;
    BOOST_TEST(output.completions.front().tokens.size() == 101u);
    if (id % 4 == 1) {
      BOOST_TEST(tally.drafts == 0, "request " << id);
    } else if (id % 4 == 2) {
      // 1 token from the prompt's pass, then passes of 5 (the last one cut to what max_tokens leaves).
      BOOST_TEST(tally.drafts == tally.decode_passes, "request " << id);
      BOOST_TEST(tally.decode_passes == 20, "request " << id);
      BOOST_TEST(tally.accepted_per_position.front() == tally.drafts, "request " << id);
    } else if (id % 4 == 3) {
      // Passes of 3 tokens: 1 + 33 x 3 = 100, then no room for a proposal (one plain decode).
      BOOST_TEST(tally.decode_passes == 34, "request " << id);
      BOOST_TEST(tally.drafts == 33, "request " << id);
      BOOST_TEST_REQUIRE(tally.accepted_per_position.size() >= 2u);
      BOOST_TEST(tally.accepted_per_position[1] == tally.drafts, "request " << id);
      if (tally.accepted_per_position.size() > 2) BOOST_TEST(tally.accepted_per_position[2] == 0, "request " << id);
    } else {
      BOOST_TEST(tally.drafts > 0, "request " << id);
      BOOST_TEST(tally.drafts < tally.decode_passes, "request " << id);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_simulated_draws_follow_their_seed) {
  // simulated_seed picks the draws' stream: seed 0 is the default; another seed gives other
  // drafts and acceptances at the same rates.
  std::vector<sched::Request> requests;
  for (sched::RequestId id = 1; id <= 8; ++id) requests.push_back(make_request(id, 20, 120));
  EngineSetup setup;
  setup.eos_period = 0;
  setup.max_model_len = 256;
  const auto run_with = [&](const std::string& seed_field) {
    setup.speculative = spec::parse_speculative_config(
        R"({"method": "ngram", "num_speculative_tokens": 3, "disable_by_batch_size": null, )"
        R"("simulated_draft_rate": 0.5, "simulated_acceptance": [0.6, 0.4, 0.2])" +
        seed_field + "}");
    return run_workload(setup, requests).counters;
  };
  const engine::EngineCounters plain = run_with("");
  const engine::EngineCounters zero = run_with(R"(, "simulated_seed": 0)");
  const engine::EngineCounters seven = run_with(R"(, "simulated_seed": 7)");
  BOOST_TEST(zero.spec_drafts == plain.spec_drafts);
  BOOST_TEST(zero.spec_accepted_per_position == plain.spec_accepted_per_position, boost::test_tools::per_element());
  BOOST_TEST(
      (seven.spec_drafts != plain.spec_drafts || seven.spec_accepted_per_position != plain.spec_accepted_per_position));
  BOOST_TEST(std::abs(static_cast<double>(seven.spec_drafts) / static_cast<double>(seven.decode_passes) - 0.5) < 0.1);
  BOOST_CHECK_THROW(spec::parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": 3, )"
                                                   R"("simulated_seed": 3})"),
                    std::invalid_argument);
  BOOST_CHECK_THROW(spec::parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": 3, )"
                                                   R"("simulated_draft_rate": 0.5, "simulated_acceptance": )"
                                                   R"([0.6, 0.4, 0.2], "simulated_seed": -1})"),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(simulated_rates_are_checked) {
  const auto refused = [](const std::string& json, const std::string& field) {
    try {
      spec::validate(spec::parse_speculative_config(json), 2048);
      return false;
    } catch (const std::invalid_argument& error) {
      return std::string(error.what()).find(field) != std::string::npos;
    }
  };
  const std::string head = R"({"method": "ngram", "num_speculative_tokens": 2, )";
  BOOST_TEST(refused(head + R"("simulated_draft_rate": 0.5})", "simulated_acceptance"));
  BOOST_TEST(
      refused(head + R"("simulated_draft_rate": 1.5, "simulated_acceptance": [0.5, 0.4]})", "simulated_draft_rate"));
  BOOST_TEST(refused(head + R"("simulated_draft_rate": 0.5, "simulated_acceptance": [0.5]})", "simulated_acceptance"));
  BOOST_TEST(
      refused(head + R"("simulated_draft_rate": 0.5, "simulated_acceptance": [0.5, 0.6]})", "simulated_acceptance"));
  BOOST_TEST(!refused(head + R"("simulated_draft_rate": 0.5, "simulated_acceptance": [0.5, 0.4]})", "simulated"));
}

BOOST_AUTO_TEST_CASE(a_budget_too_small_for_k_is_refused) {
  EngineSetup setup;
  setup.max_num_batched_tokens = 4;
  setup.speculative = ngram(4);
  engine::ScriptedExecutor executor(executor_config(setup), engine_config(setup).cache);
  engine::VirtualClock clock;
  try {
    engine::Engine llm(engine_config(setup), executor, clock);
    BOOST_ERROR("an engine whose budget cannot hold a verify pass was built");
  } catch (const std::invalid_argument& error) {
    BOOST_TEST(std::string(error.what()).find("num_speculative_tokens") != std::string::npos, error.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
