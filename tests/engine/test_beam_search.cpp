#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/engine/beam_search.h"
#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/engine/scripted_executor.h"
#include "tests/engine/engine_harness.h"  // Boost.Test prints finish reasons by name; kEos

namespace engine = pagedllm::engine;
namespace sched = pagedllm::sched;
namespace kv = pagedllm::kv;
using pagedllm::TokenId;

namespace {

using pagedllm::test::kEos;
const std::vector<TokenId> kStops{kEos};  // the tokens that end a beam

engine::BeamCandidate candidate(int32_t parent, TokenId token, double score) {
  return {parent, token, static_cast<float>(score), score};
}

std::vector<TokenId> tokens_of(const std::vector<engine::BeamCandidate>& beams) {
  std::vector<TokenId> tokens;
  for (const engine::BeamCandidate& beam : beams) tokens.push_back(beam.token);
  return tokens;
}

std::vector<int32_t> parents_of(const std::vector<engine::BeamCandidate>& beams) {
  std::vector<int32_t> parents;
  for (const engine::BeamCandidate& beam : beams) parents.push_back(beam.parent);
  return parents;
}

// Keeps a summary of every plan, then defers to the scripted executor.
class PlanRecorder final : public engine::Executor {
 public:
  explicit PlanRecorder(engine::Executor& inner) : inner_(inner) {}

  sched::StepResult execute(const sched::StepPlan& plan) override {
    num_copies_.push_back(static_cast<int32_t>(plan.copies.size()));
    return inner_.execute(plan);
  }
  std::string name() const override { return "plan-recorder"; }

  int32_t num_steps_with_copies() const {
    int32_t steps = 0;
    for (const int32_t copies : num_copies_) steps += copies > 0 ? 1 : 0;
    return steps;
  }

 private:
  engine::Executor& inner_;
  std::vector<int32_t> num_copies_;
};

struct BeamRun {
  engine::RequestOutput output;
  int32_t num_steps_with_copies = 0;
  int32_t max_live_sequences = 0;  // KV sequences held at once
};

struct BeamRunConfig {
  std::vector<TokenId> prompt;
  sched::SamplingParams params;
  int32_t eos_period = 0;  // 0: the executor never samples EOS
};

engine::EngineConfig beam_engine_config() {
  engine::EngineConfig config;
  config.cache.block_size = 4;
  config.cache.num_device_blocks = 256;
  config.cache.num_host_blocks = 64;
  config.scheduler.max_model_len = 128;
  config.scheduler.max_num_batched_tokens = 128;
  config.eos_token_ids = {kEos};
  return config;
}

// Runs one request to completion, checking the scheduler's invariants after every step.
BeamRun run_beam_request(const BeamRunConfig& run) {
  const engine::EngineConfig config = beam_engine_config();
  engine::ScriptedExecutorConfig scripted_config;
  scripted_config.eos_token_id = kEos;
  scripted_config.eos_period = run.eos_period;
  engine::ScriptedExecutor scripted(scripted_config, config.cache);
  PlanRecorder recorder(scripted);
  engine::VirtualClock clock;
  engine::Engine llm(config, recorder, clock);
  sched::Request request;
  request.id = 1;
  request.prompt_tokens = run.prompt;
  request.params = run.params;
  llm.add_request(request);
  BeamRun result;
  bool finished = false;
  while (llm.has_unfinished()) {
    BOOST_REQUIRE_LT(llm.num_steps(), 1000);
    for (engine::RequestOutput& output : llm.step()) {
      BOOST_REQUIRE(!finished);
      if (!output.finished) continue;
      finished = true;
      result.output = std::move(output);
    }
    llm.scheduler().check_invariants();
    result.max_live_sequences = std::max(result.max_live_sequences, llm.kv().stats().num_sequences);
  }
  BOOST_REQUIRE(finished);
  BOOST_TEST(llm.kv().stats().num_sequences == 0);
  BOOST_TEST(llm.kv().stats().num_free_device_blocks == config.cache.num_device_blocks);
  result.num_steps_with_copies = recorder.num_steps_with_copies();
  return result;
}

double completion_score(const engine::RequestOutput& output, const engine::Completion& completion,
                        double length_penalty = 1.0) {
  return engine::beam_score(completion.cumulative_logprob,
                            output.num_prompt_tokens + static_cast<int32_t>(completion.tokens.size()), length_penalty);
}

sched::SamplingParams beam_params(int32_t beam_width, int32_t n, int32_t max_tokens) {
  sched::SamplingParams params;
  params.beam_width = beam_width;
  params.n = n;
  params.max_tokens = max_tokens;
  params.temperature = 0.0f;
  return params;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(select_beams)

BOOST_AUTO_TEST_CASE(ranks_candidates_by_score_best_first) {
  const std::vector<engine::BeamCandidate> candidates{candidate(0, 10, -3.0), candidate(0, 11, -1.0),
                                                      candidate(1, 12, -2.5), candidate(1, 13, -0.5),
                                                      candidate(2, 14, -2.0), candidate(2, 15, -4.0)};
  const engine::BeamStep step = engine::select_beams(candidates, 3, {}, 3);
  BOOST_TEST(tokens_of(step.extend) == (std::vector<TokenId>{13, 11, 14}), boost::test_tools::per_element());
  BOOST_TEST(parents_of(step.extend) == (std::vector<int32_t>{1, 0, 2}), boost::test_tools::per_element());
  BOOST_TEST(step.extend[0].score == -0.5);
  BOOST_TEST(step.complete.empty());
}

BOOST_AUTO_TEST_CASE(ties_keep_parent_order_then_candidate_order) {
  // Candidates arrive as the engine builds them: parent by parent, each parent's best first.
  const std::vector<engine::BeamCandidate> candidates{candidate(0, 20, -1.0), candidate(0, 21, -1.0),
                                                      candidate(1, 22, -0.5), candidate(1, 23, -1.0),
                                                      candidate(2, 24, -1.0), candidate(2, 25, -0.5)};
  const engine::BeamStep step = engine::select_beams(candidates, 5, {}, 5);
  BOOST_TEST(tokens_of(step.extend) == (std::vector<TokenId>{22, 25, 20, 21, 23}), boost::test_tools::per_element());
  BOOST_TEST(parents_of(step.extend) == (std::vector<int32_t>{1, 2, 0, 0, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(extends_at_most_beam_width_beams) {
  std::vector<engine::BeamCandidate> candidates;
  for (int32_t parent = 0; parent < 3; ++parent) {
    for (int32_t rank = 0; rank < 6; ++rank)
      candidates.push_back(candidate(parent, 100 + 10 * parent + rank, -rank - 0.1 * parent));
  }
  const engine::BeamStep step = engine::select_beams(candidates, 3, kStops, 3);
  BOOST_TEST(step.extend.size() == 3u);
  BOOST_TEST(tokens_of(step.extend) == (std::vector<TokenId>{100, 110, 120}), boost::test_tools::per_element());
  // Fewer non-EOS candidates than beams: only those extend.
  const engine::BeamStep few = engine::select_beams({candidate(0, kEos, -0.1), candidate(0, 7, -0.2)}, 3, kStops, 3);
  BOOST_TEST(tokens_of(few.extend) == (std::vector<TokenId>{7}), boost::test_tools::per_element());
  BOOST_TEST(tokens_of(few.complete) == (std::vector<TokenId>{kEos}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(eos_candidates_ranked_above_the_last_kept_beam_complete) {
  const std::vector<engine::BeamCandidate> candidates{candidate(0, kEos, -0.1), candidate(0, 5, -0.2),
                                                      candidate(1, kEos, -0.3), candidate(1, 6, -0.4),
                                                      candidate(1, 7, -0.5),    candidate(0, kEos, -0.6)};
  const engine::BeamStep step = engine::select_beams(candidates, 2, kStops, 2);
  BOOST_TEST(tokens_of(step.extend) == (std::vector<TokenId>{5, 6}), boost::test_tools::per_element());
  BOOST_REQUIRE_EQUAL(step.complete.size(), 2u);
  BOOST_TEST(parents_of(step.complete) == (std::vector<int32_t>{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(step.complete[0].score == -0.1);
  BOOST_TEST(step.complete[1].score == -0.3);
}

BOOST_AUTO_TEST_CASE(an_eos_candidate_below_the_last_kept_beam_is_dropped) {
  const std::vector<engine::BeamCandidate> candidates{candidate(0, 5, -0.1), candidate(0, 6, -0.2),
                                                      candidate(1, kEos, -0.3)};
  const engine::BeamStep step = engine::select_beams(candidates, 2, kStops, 2);
  BOOST_TEST(tokens_of(step.extend) == (std::vector<TokenId>{5, 6}), boost::test_tools::per_element());
  BOOST_TEST(step.complete.empty());
}

BOOST_AUTO_TEST_CASE(room_for_complete_limits_the_finished_hypotheses) {
  const std::vector<engine::BeamCandidate> candidates{candidate(0, kEos, -0.1), candidate(1, kEos, -0.2),
                                                      candidate(0, 5, -0.3), candidate(1, 6, -0.4)};
  const engine::BeamStep one = engine::select_beams(candidates, 2, kStops, 1);
  BOOST_REQUIRE_EQUAL(one.complete.size(), 1u);
  BOOST_TEST(one.complete[0].parent == 0);
  BOOST_TEST(tokens_of(one.extend) == (std::vector<TokenId>{5, 6}), boost::test_tools::per_element());
  const engine::BeamStep none = engine::select_beams(candidates, 2, kStops, 0);
  BOOST_TEST(none.complete.empty());
  BOOST_TEST(tokens_of(none.extend) == (std::vector<TokenId>{5, 6}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(without_an_eos_token_eos_candidates_extend_like_any_other) {
  const std::vector<engine::BeamCandidate> candidates{candidate(0, kEos, -0.1), candidate(0, 5, -0.2),
                                                      candidate(0, 6, -0.3)};
  const engine::BeamStep step = engine::select_beams(candidates, 2, {}, 2);
  BOOST_TEST(tokens_of(step.extend) == (std::vector<TokenId>{kEos, 5}), boost::test_tools::per_element());
  BOOST_TEST(step.complete.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(beam_score)

BOOST_AUTO_TEST_CASE(divides_the_cumulative_logprob_by_length_to_the_penalty) {
  BOOST_TEST(engine::beam_score(-6.0, 3) == -2.0);
  BOOST_TEST(engine::beam_score(-6.0, 3, 1.0) == -2.0);
  BOOST_TEST(engine::beam_score(-6.0, 3, 2.0) == -6.0 / 9.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(engine::beam_score(-6.0, 4, 0.5) == -3.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(engine::beam_score(-6.0, 3, 0.0) == -6.0);
  BOOST_TEST(engine::beam_score(0.0, 5) == 0.0);
}

BOOST_AUTO_TEST_CASE(longer_hypotheses_of_equal_logprob_score_higher) {
  BOOST_TEST(engine::beam_score(-4.0, 8) > engine::beam_score(-4.0, 4));
}

BOOST_AUTO_TEST_CASE(an_empty_sequence_counts_as_length_one) { BOOST_TEST(engine::beam_score(-2.0, 0) == -2.0); }

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(beam_search_engine)

BOOST_AUTO_TEST_CASE(returns_n_completions_ordered_by_beam_score_and_shares_blocks) {
  BeamRunConfig run;
  run.prompt = {11, 12, 13, 14, 15, 16};  // 1.5 blocks: the forks share a partial block
  run.params = beam_params(3, 2, 12);
  const BeamRun result = run_beam_request(run);
  const engine::RequestOutput& output = result.output;
  BOOST_TEST(output.finished);
  BOOST_TEST(output.finish_reason == sched::FinishReason::length);
  BOOST_REQUIRE_EQUAL(output.completions.size(), 2u);
  for (size_t i = 0; i < output.completions.size(); ++i) {
    BOOST_TEST(output.completions[i].index == static_cast<int32_t>(i));
    BOOST_TEST(output.completions[i].tokens.size() == 12u);
    BOOST_TEST(output.completions[i].finish_reason == sched::FinishReason::length);
  }
  BOOST_TEST(completion_score(output, output.completions[0]) >= completion_score(output, output.completions[1]));
  BOOST_TEST(output.completions[0].tokens != output.completions[1].tokens);
  BOOST_TEST(result.num_steps_with_copies > 0, "beams forked from a partial block never copied it on write");
  BOOST_TEST(result.max_live_sequences <= 3);
  BOOST_TEST(result.max_live_sequences > 1);
}

// Regression test, fixed: once beam_width hypotheses have ended with EOS, apply_beam_step calls
// finish_beams(group, stop), which also turns every beam still running into a finished hypothesis
// labelled `stop`. make_output ranks those with the EOS-ended ones, and a longer truncated beam
// scores higher: here the first completion is 5 tokens ending in 20044, no EOS, well short of
// max_tokens, yet reported as finish_reason stop.
BOOST_AUTO_TEST_CASE(eos_hypotheses_finish_the_search_and_rank_with_the_rest) {
  BeamRunConfig run;
  run.prompt = {21, 22, 23, 24, 25};
  run.params = beam_params(3, 3, 30);
  run.eos_period = 4;
  const BeamRun result = run_beam_request(run);
  const engine::RequestOutput& output = result.output;
  BOOST_TEST(output.finished);
  BOOST_REQUIRE_EQUAL(output.completions.size(), 3u);
  int32_t num_stopped = 0;
  for (size_t i = 0; i < output.completions.size(); ++i) {
    const engine::Completion& completion = output.completions[i];
    if (i > 0) BOOST_TEST(completion_score(output, output.completions[i - 1]) >= completion_score(output, completion));
    if (completion.finish_reason == sched::FinishReason::stop) {
      ++num_stopped;
      BOOST_REQUIRE(!completion.tokens.empty());
      BOOST_TEST(completion.tokens.back() == kEos);
    } else {
      BOOST_TEST(completion.finish_reason == sched::FinishReason::length);
      BOOST_TEST(completion.tokens.size() == 30u);
    }
  }
  BOOST_TEST(num_stopped > 0, "an EOS every ~4 tokens never ended a hypothesis");
}

BOOST_AUTO_TEST_CASE(min_tokens_keeps_eos_hypotheses_out_until_reached) {
  BeamRunConfig run;
  run.prompt = {31, 32, 33, 34, 35, 36, 37};
  run.params = beam_params(2, 2, 20);
  run.params.min_tokens = 10;
  run.eos_period = 3;
  const BeamRun result = run_beam_request(run);
  BOOST_REQUIRE_EQUAL(result.output.completions.size(), 2u);
  for (const engine::Completion& completion : result.output.completions) {
    BOOST_REQUIRE_GE(completion.tokens.size(), 10u);
    // As vLLM's min-tokens logits processor: EOS is not a candidate before the tenth token (it
    // used to be one that extended the beam, and landed in the text).
    for (size_t i = 0; i < 10; ++i) BOOST_TEST(completion.tokens[i] != kEos, "EOS at output index " << i);
  }
}

BOOST_AUTO_TEST_CASE(length_penalty_ranks_the_final_hypotheses) {
  BeamRunConfig run;
  run.prompt = {21, 22, 23, 24, 25};
  run.params = beam_params(3, 3, 30);
  run.eos_period = 4;
  std::vector<std::vector<TokenId>> firsts;
  for (const float length_penalty : {0.0f, 1.0f, 4.0f}) {
    run.params.length_penalty = length_penalty;
    const BeamRun result = run_beam_request(run);
    const engine::RequestOutput& output = result.output;
    BOOST_REQUIRE_EQUAL(output.completions.size(), 3u);
    for (size_t i = 1; i < output.completions.size(); ++i) {
      BOOST_TEST(completion_score(output, output.completions[i - 1], length_penalty) >=
                     completion_score(output, output.completions[i], length_penalty),
                 "length_penalty " << length_penalty << ", completion " << i);
    }
    firsts.push_back(output.completions[0].tokens);
  }
  // 0 ranks by cumulative logprob alone (the shortest hypothesis loses least); 4 favours length.
  BOOST_TEST(firsts.front().size() < firsts.back().size());
}

BOOST_AUTO_TEST_CASE(ignore_eos_runs_every_beam_to_max_tokens) {
  BeamRunConfig run;
  run.prompt = {41, 42, 43};
  run.params = beam_params(2, 2, 15);
  run.params.ignore_eos = true;
  run.eos_period = 3;
  const BeamRun result = run_beam_request(run);
  BOOST_REQUIRE_EQUAL(result.output.completions.size(), 2u);
  for (const engine::Completion& completion : result.output.completions) {
    BOOST_TEST(completion.tokens.size() == 15u);
    BOOST_TEST(completion.finish_reason == sched::FinishReason::length);
  }
}

// Regression test, fixed: make_output builds a finished beam request's completions from finished_beams only. An
// abort finishes the group without moving its running beams there, so the final output of an
// aborted beam request has no completions at all, although every output before it streamed n
// of them (a non-beam request aborted the same way returns its partial completions).
BOOST_AUTO_TEST_CASE(an_aborted_beam_request_returns_its_beams_so_far) {
  const engine::EngineConfig config = beam_engine_config();
  engine::ScriptedExecutor scripted({}, config.cache);
  engine::VirtualClock clock;
  engine::Engine llm(config, scripted, clock);
  sched::Request request;
  request.id = 1;
  request.prompt_tokens = {71, 72, 73, 74, 75};
  request.params = beam_params(2, 2, 30);
  llm.add_request(request);
  size_t num_streamed = 0;
  for (int32_t step = 0; step < 4; ++step) {
    for (const engine::RequestOutput& output : llm.step()) num_streamed = output.completions.size();
  }
  BOOST_REQUIRE_EQUAL(num_streamed, 2u);
  BOOST_REQUIRE(llm.abort_request(1));
  const std::vector<engine::RequestOutput> outputs = llm.step();
  BOOST_REQUIRE_EQUAL(outputs.size(), 1u);
  BOOST_TEST(outputs[0].finished);
  BOOST_TEST(outputs[0].finish_reason == sched::FinishReason::abort);
  BOOST_TEST(outputs[0].completions.size() == 2u);
  for (const engine::Completion& completion : outputs[0].completions) {
    BOOST_TEST(completion.tokens.size() == 4u);
    BOOST_TEST(completion.finish_reason == sched::FinishReason::abort);
  }
  BOOST_TEST(llm.kv().stats().num_sequences == 0);
}

// Regression test, fixed: apply_beam_step never looks at stop_token_ids (only stop_reason() does, for non-beam
// sequences), yet validate() accepts them with beam search: a stop token is silently ignored.
BOOST_AUTO_TEST_CASE(beam_search_honours_stop_token_ids_or_refuses_them) {
  BeamRunConfig run;
  run.prompt = {51, 52, 53, 54, 55, 56};
  run.params = beam_params(2, 2, 12);
  const BeamRun plain = run_beam_request(run);
  BOOST_REQUIRE_EQUAL(plain.output.completions.size(), 2u);
  const TokenId stop_token = plain.output.completions[0].tokens.at(3);
  run.params.stop_token_ids = {stop_token};
  {
    // Refusing the combination up front would be a correct answer too.
    engine::ScriptedExecutor scripted({}, beam_engine_config().cache);
    engine::VirtualClock clock;
    engine::Engine llm(beam_engine_config(), scripted, clock);
    sched::Request request;
    request.prompt_tokens = run.prompt;
    request.params = run.params;
    try {
      llm.add_request(request);
    } catch (const sched::InvalidRequestError&) {
      return;
    }
  }
  const BeamRun stopped = run_beam_request(run);
  for (const engine::Completion& completion : stopped.output.completions) {
    for (size_t i = 0; i + 1 < completion.tokens.size(); ++i) {
      BOOST_TEST(completion.tokens[i] != stop_token,
                 "a beam went on past stop token " << stop_token << " at output " << i);
    }
    if (!completion.tokens.empty() && completion.tokens.back() == stop_token) {
      BOOST_TEST(completion.finish_reason == sched::FinishReason::stop);
    }
  }
}

// Regression test, fixed: apply_beam_step records no top logprobs (and the executor seam defines none for beam
// candidates), yet validate() accepts `logprobs` with beam search: the completions come back
// with empty top_logprobs.
BOOST_AUTO_TEST_CASE(beam_search_returns_logprobs_or_refuses_them) {
  BeamRunConfig run;
  run.prompt = {61, 62, 63, 64, 65};
  run.params = beam_params(2, 2, 8);
  run.params.logprobs = 2;
  {
    engine::ScriptedExecutor scripted({}, beam_engine_config().cache);
    engine::VirtualClock clock;
    engine::Engine llm(beam_engine_config(), scripted, clock);
    sched::Request request;
    request.prompt_tokens = run.prompt;
    request.params = run.params;
    try {
      llm.add_request(request);
    } catch (const sched::InvalidRequestError&) {
      return;
    }
  }
  const BeamRun result = run_beam_request(run);
  for (const engine::Completion& completion : result.output.completions) {
    BOOST_TEST(completion.top_logprobs.size() == completion.tokens.size());
  }
}

BOOST_AUTO_TEST_SUITE_END()
