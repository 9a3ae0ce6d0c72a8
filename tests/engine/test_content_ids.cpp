// Engine tests: a prompt whose blocks are named by content ids (a trace's prefix block ids) is
// cached exactly as its tokens would be. The same materialized trace runs twice, once with the
// requests' content ids and once without (the KV manager then hashes every token): the KV event
// logs must be byte-identical, with sharing, chunked prefill, parallel samples, beams and both
// preemption modes in play.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/trace/materialize.h"
#include "tests/engine/engine_harness.h"

namespace pagedllm::test {
namespace {

// Mooncake-like sharing: conversations whose turns extend a chain of ids. The trace's id blocks
// hold 6 tokens against the engine's 4-token KV blocks, so KV blocks straddle two ids; some
// prompts end inside their last id's block, some run past their ids into tokens of their own.
trace::Trace conversation_trace(uint64_t seed) {
  std::mt19937_64 random(seed);
  const auto uniform = [&random](int32_t low, int32_t high) {
    return std::uniform_int_distribution<int32_t>(low, high)(random);
  };
  trace::Trace trace;
  trace.header.prefix_block_tokens = 6;
  uint64_t next_id = 0;
  std::vector<std::vector<uint64_t>> conversations(4);
  for (int32_t i = 0; i < 36; ++i) {
    trace::TraceRequest request;
    request.prompt_kind = trace::PromptKind::length;
    request.output_len = uniform(3, 20);
    request.source_line = i + 1;
    if (uniform(0, 5) > 0) {  // one in six names no content at all
      std::vector<uint64_t>& chain = conversations[static_cast<size_t>(uniform(0, 3))];
      const int32_t grow = uniform(0, 2);
      for (int32_t g = 0; g < grow && chain.size() < 9; ++g) chain.push_back(next_id++);
      if (chain.empty()) chain.push_back(next_id++);
      request.prefix_block_ids = chain;
    }
    const auto named = static_cast<int32_t>(request.prefix_block_ids.size()) * 6;
    request.prompt_len = std::max(1, named + uniform(-5, 8));  // inside the last id's block, or past it
    const int32_t kind = uniform(0, 9);
    if (kind == 0) {
      request.sampling = sched::SamplingParams{};
      request.sampling->beam_width = 2;
      request.sampling->temperature = 0.0f;
    } else if (kind <= 2) {
      request.sampling = sched::SamplingParams{};
      request.sampling->n = 2;
      request.sampling->temperature = 1.0f;
    }
    trace.requests.push_back(std::move(request));
  }
  return trace;
}

std::vector<sched::Request> materialized(const trace::Trace& trace, bool unwritten = false) {
  trace::MaterializeConfig config;
  config.defer_synthetic_prompts = unwritten;
  config.max_model_len = 128;
  config.synthetic_token_begin = kFirstPromptToken;
  config.synthetic_token_end = 1000;
  config.vocab_size = 1000;
  config.seed = 5;
  config.ignore_eos = false;
  trace::MaterializedTrace result = trace::materialize_requests(trace, config, "conversations");
  BOOST_REQUIRE(result.rejected.empty());
  return std::move(result.requests);
}

std::vector<sched::Request> without_content_ids(std::vector<sched::Request> requests) {
  for (sched::Request& request : requests) request.content_ids = {};
  return requests;
}

std::string event_log_of(const EngineSetup& setup, const std::vector<sched::Request>& requests, RunResult* run) {
  std::ostringstream text;
  kv::KvEventLog log(text);
  *run = run_workload(setup, requests, {.requests_per_step = 3, .event_log = &log});
  return text.str();
}

struct Case {
  const char* name;
  EngineSetup setup;
};

// Sharing, chunked prefill and both preemption modes in play.
std::vector<Case> schedule_cases() {
  return {{"ample pool", EngineSetup{}},
          {"small pool, recompute", small_pool(PreemptionMode::recompute, true)},
          {"small pool, swap", small_pool(PreemptionMode::swap, true)},
          {"small pool, no chunked prefill", small_pool(PreemptionMode::recompute, false)}};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(engine_content_ids)

BOOST_AUTO_TEST_CASE(named_blocks_are_cached_exactly_as_their_tokens_would_be) {
  const std::vector<sched::Request> named = materialized(conversation_trace(3));
  int32_t with_ids = 0;
  for (const sched::Request& request : named) with_ids += request.content_ids.empty() ? 0 : 1;
  BOOST_TEST_REQUIRE(with_ids > 20);
  const std::vector<sched::Request> tokens_only = without_content_ids(named);

  for (const Case& c : schedule_cases()) {
    BOOST_TEST_CONTEXT(c.name) {
      RunResult by_ids;
      RunResult by_tokens;
      const std::string log_by_ids = event_log_of(c.setup, named, &by_ids);
      const std::string log_by_tokens = event_log_of(c.setup, tokens_only, &by_tokens);
      BOOST_TEST(by_ids.kv_stats.prefix_hit_tokens > 0);
      BOOST_TEST(by_ids.kv_stats.prefix_hit_tokens == by_tokens.kv_stats.prefix_hit_tokens);
      BOOST_TEST((log_by_ids == log_by_tokens), "hashing from content ids changed the KV event log");
      check_same_tokens(by_tokens, by_ids);
    }
  }
  const EngineSetup recompute = small_pool(PreemptionMode::recompute, true);
  RunResult run;
  event_log_of(recompute, named, &run);
  BOOST_TEST(run.counters.preemptions_recompute > 0);
}

BOOST_AUTO_TEST_CASE(prompts_left_unwritten_run_exactly_as_written_ones) {
  // The simulator's case: the requests carry their prompts' description only, and an executor
  // that reads no prompt lets the engine store just each prompt's last block (parallel samples and
  // beams store all of it). Same trace written out: the same KV event log and tokens.
  const std::vector<sched::Request> written = materialized(conversation_trace(4));
  const std::vector<sched::Request> unwritten = materialized(conversation_trace(4), true);
  int32_t num_unwritten = 0;
  for (const sched::Request& request : unwritten) num_unwritten += request.prompt_tokens.empty() ? 1 : 0;
  BOOST_TEST_REQUIRE(num_unwritten == static_cast<int32_t>(unwritten.size()));
  std::vector<Case> cases = schedule_cases();
  cases.push_back({"no prefix cache", EngineSetup{}});
  cases.back().setup.enable_prefix_caching = false;
  // The simulator's speculative decoding: placeholder drafts after the last token, verified at
  // measured rates (positions past the unstored prompt).
  cases.push_back({"simulated speculation, recompute", small_pool(PreemptionMode::recompute, true)});
  cases.back().setup.speculative = {.method = spec::SpeculativeMethod::ngram,
                                    .num_speculative_tokens = 3,
                                    .prompt_lookup_min = 1,
                                    .prompt_lookup_max = 3,
                                    .disable_by_batch_size = 0};
  cases.back().setup.speculative.simulated =
      spec::SimulatedAcceptance{.draft_rate = 0.7, .accepted_per_position = {0.8, 0.5, 0.3}};
  for (Case& c : cases) c.setup.verify_kv = false;
  cases.push_back({"KV reads checked: all written", small_pool(PreemptionMode::recompute, true)});
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      RunResult by_description;
      RunResult by_tokens;
      const std::string log_by_description = event_log_of(c.setup, unwritten, &by_description);
      const std::string log_by_tokens = event_log_of(c.setup, written, &by_tokens);
      BOOST_TEST((log_by_description == log_by_tokens), "leaving prompts unwritten changed the KV event log");
      check_same_tokens(by_tokens, by_description);
      BOOST_TEST(by_description.kv_stats.prefix_hit_tokens == by_tokens.kv_stats.prefix_hit_tokens);
      BOOST_TEST(by_description.counters.preemptions_recompute == by_tokens.counters.preemptions_recompute);
      BOOST_TEST(by_description.end_time == by_tokens.end_time);
      BOOST_TEST(by_description.counters.spec_accepted_tokens == by_tokens.counters.spec_accepted_tokens);
      if (c.setup.speculative.enabled()) BOOST_TEST(by_description.counters.spec_accepted_tokens > 0);
      int64_t unstored = 0;
      for (const PlanRecord& plan : by_description.plans) unstored += plan.num_unstored_tokens;
      if (c.setup.verify_kv) {
        BOOST_TEST(unstored == 0);  // an executor that reads the prompt gets all of it
      } else {
        BOOST_TEST(unstored > 0);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(renamed_content_loses_its_hits) {
  // The check above can fail: the same tokens under other ids are not found in the cache.
  std::vector<sched::Request> named = materialized(conversation_trace(3));
  const std::vector<sched::Request> tokens_only = without_content_ids(named);
  for (sched::Request& request : named) {
    for (uint64_t& id : request.content_ids.ids) id += 1000 * static_cast<uint64_t>(request.id + 1);
  }
  RunResult by_ids;
  RunResult by_tokens;
  event_log_of(EngineSetup{}, named, &by_ids);
  event_log_of(EngineSetup{}, tokens_only, &by_tokens);
  BOOST_TEST(by_ids.kv_stats.prefix_hit_tokens < by_tokens.kv_stats.prefix_hit_tokens);
}

BOOST_AUTO_TEST_CASE(content_ids_that_overrun_the_prompt_are_refused_naming_the_field) {
  sched::Request request = make_request(1, 10, 4);
  request.content_ids = {.ids = {7}, .tokens_per_id = 6, .num_tokens = 8, .seed = 0};  // 8 tokens, 1 id of 6
  const engine::EngineConfig config = engine_config(EngineSetup{});
  engine::ScriptedExecutor executor(executor_config(EngineSetup{}), config.cache);
  engine::VirtualClock clock;
  engine::Engine llm(config, executor, clock);
  try {
    llm.add_request(request);
    BOOST_FAIL("content ids naming more tokens than their ids cover were accepted");
  } catch (const sched::InvalidRequestError& error) {
    BOOST_TEST(error.field() == "content_ids");
    BOOST_TEST(std::string(error.what()).find("1 ids of 6") != std::string::npos, error.what());
  }
  request.content_ids = {.ids = {7, 8}, .tokens_per_id = 6, .num_tokens = 12, .seed = 0};  // the prompt has 10
  BOOST_CHECK_THROW(llm.add_request(request), sched::InvalidRequestError);
  BOOST_TEST(!llm.has_unfinished());
  request.content_ids.num_tokens = 10;
  llm.add_request(request);
  BOOST_TEST(llm.has_unfinished());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
