// Structured outputs through the engine (core/engine/engine.h with a constrained request): every
// sample and beam of a constrained request keeps to its constraint, through parallel sampling,
// beam search and both kinds of preemption (a regex, and a recursive grammar); a finished-as-stop
// output is a whole match; the engine refuses a token the constraint does not allow.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/structured/grammar_automaton.h"
#include "core/structured/regex_compiler.h"
#include "core/structured/token_mask.h"
#include "tests/engine/engine_harness.h"

namespace structured = pagedllm::structured;
using namespace pagedllm;
using namespace pagedllm::test;

namespace {

constexpr int32_t kConstrainedVocab = 1000;  // the scripted executor's

// Ids below kFirstPromptToken are special (no text; kEos among them), then the 256 single bytes,
// then random pieces of 2-5 characters from the constraint's alphabet, as a BPE vocabulary has.
std::vector<std::string> constrained_vocabulary() {
  std::vector<std::string> vocab(static_cast<size_t>(kFirstPromptToken));
  for (int byte = 0; byte < 256; ++byte) vocab.emplace_back(1, static_cast<char>(byte));
  std::mt19937 rng(23);
  const std::string alphabet = "{}[]\":, abc0123456789id";
  while (static_cast<int32_t>(vocab.size()) < kConstrainedVocab) {
    std::string piece;
    const int length = 2 + static_cast<int>(rng() % 4);
    for (int i = 0; i < length; ++i) piece += alphabet[rng() % alphabet.size()];
    vocab.push_back(piece);
  }
  return vocab;
}

// The nested lists of a recursive grammar, read by a recursive descent of the test's own.
bool read_list(std::string_view text, std::size_t& at);
bool read_item(std::string_view text, std::size_t& at) {
  if (at < text.size() && text[at] == '[') return read_list(text, at);
  const std::size_t begin = at;
  if (at < text.size() && text[at] >= 'a' && text[at] <= 'c') {
    while (at < text.size() && text[at] >= 'a' && text[at] <= 'c') ++at;
    return true;
  }
  while (at < text.size() && at - begin < 3 && text[at] >= '0' && text[at] <= '9') ++at;
  return at > begin && !(at < text.size() && text[at] >= '0' && text[at] <= '9');
}
bool read_list(std::string_view text, std::size_t& at) {
  if (at >= text.size() || text[at] != '[') return false;
  ++at;
  if (at < text.size() && text[at] == ']') return ++at, true;
  while (true) {
    if (!read_item(text, at)) return false;
    if (at < text.size() && text[at] == ']') return ++at, true;
    if (at >= text.size() || text[at] != ',') return false;
    ++at;
  }
}
bool is_nested_list(std::string_view text) {
  std::size_t at = 0;
  return read_list(text, at) && at == text.size();
}

const char* const kNestedListGrammar = R"(root ::= list
list ::= "[" (item ("," item)*)? "]"
item ::= list | [a-c]+ | [0-9]{1,3}
)";

struct Constraint {
  std::vector<std::string> vocab = constrained_vocabulary();
  std::shared_ptr<structured::TokenMaskCache> cache;
  explicit Constraint(const std::string& pattern)
      : cache(std::make_shared<structured::TokenMaskCache>(
            std::make_shared<structured::ByteDfa>(structured::compile_regex(pattern)),
            std::make_shared<structured::TokenTrie>(vocab))) {}
  explicit Constraint(const structured::PushdownGrammar& grammar)
      : cache(std::make_shared<structured::TokenMaskCache>(std::make_shared<const structured::PushdownGrammar>(grammar),
                                                           std::make_shared<structured::TokenTrie>(vocab))) {}

  std::string text_of(const std::vector<TokenId>& tokens) const {
    std::string text;
    for (const TokenId token : tokens) text += vocab.at(static_cast<size_t>(token));
    return text;
  }
};

const char* const kRecordPattern = R"(\{"id": [0-9]{1,4}, "tags": \[("[a-c]{1,3}"(, "[a-c]{1,3}")*)?\]\})";

// A completion keeps to the constraint: one that stopped is a whole match followed by its stop
// token, one cut by length a prefix of a match.
void check_completion(const Constraint& constraint, const engine::Completion& completion) {
  if (constraint.cache->is_grammar()) {
    std::vector<TokenId> tokens = completion.tokens;
    if (completion.finish_reason == FinishReason::stop) {
      BOOST_REQUIRE(!tokens.empty());
      BOOST_CHECK_EQUAL(tokens.back(), kEos);
      tokens.pop_back();
      BOOST_CHECK_MESSAGE(is_nested_list(constraint.text_of(tokens)),
                          "not nested lists: " << constraint.text_of(tokens));
      return;
    }
    BOOST_CHECK_EQUAL(completion.finish_reason, FinishReason::length);
    structured::TokenMatcher replay(constraint.cache, {kEos});
    for (const TokenId token : tokens) {
      BOOST_REQUIRE_MESSAGE(replay.accept(token), "not a prefix of nested lists: " << constraint.text_of(tokens));
    }
    return;
  }
  const structured::ByteDfa& dfa = constraint.cache->dfa();
  std::vector<TokenId> tokens = completion.tokens;
  if (completion.finish_reason == FinishReason::stop) {
    BOOST_REQUIRE(!tokens.empty());
    BOOST_CHECK_EQUAL(tokens.back(), kEos);
    tokens.pop_back();
    BOOST_CHECK_MESSAGE(dfa.matches(constraint.text_of(tokens)), "not a whole match: " << constraint.text_of(tokens));
  } else {
    BOOST_CHECK_EQUAL(completion.finish_reason, FinishReason::length);
    BOOST_CHECK_MESSAGE(dfa.walk(dfa.start, constraint.text_of(tokens)) != structured::ByteDfa::kDead,
                        "not a prefix of a match: " << constraint.text_of(tokens));
  }
}

std::vector<sched::Request> constrained_workload(const Constraint& constraint, int32_t num_requests) {
  std::vector<sched::Request> requests;
  for (int32_t i = 0; i < num_requests; ++i) {
    // Sizes that let a group of 3 fit the small pool even unshared (after a recompute).
    sched::Request request = make_request(i + 1, 6 + (i * 5) % 12, 24 + (i * 7) % 20);
    request.params.output_constraint = constraint.cache;
    if (i % 4 == 1) request.params.n = 3;
    if (i % 4 == 2) request.params.beam_width = 2;
    if (i % 5 == 3) request.params.min_tokens = 12;
    requests.push_back(std::move(request));
  }
  return requests;
}

// The constrained workload under both kinds of preemption, each completion checked against the
// constraint; the counts for the caller to judge, and the completions' texts.
struct ConstrainedRuns {
  int64_t preemptions = 0;
  int32_t whole_matches = 0;
  std::vector<std::string> texts;
};

ConstrainedRuns run_under_preemption(const Constraint& constraint) {
  const std::vector<sched::Request> requests = constrained_workload(constraint, 24);
  ConstrainedRuns runs;
  for (const auto mode : {PreemptionMode::recompute, PreemptionMode::swap}) {
    EngineSetup setup = small_pool(mode, /*chunked_prefill=*/true);
    setup.eos_period = 4;  // the scripted executor offers EOS often; the constraint holds it back
    const RunResult run = run_workload(setup, requests, {.requests_per_step = 3});
    runs.preemptions += run.counters.preemptions_recompute + run.counters.preemptions_swap;
    BOOST_REQUIRE_EQUAL(run.outputs.size(), requests.size());
    for (const auto& [id, output] : run.outputs) {
      BOOST_TEST_CONTEXT("request " << id) {
        BOOST_CHECK(output.finish_reason != FinishReason::rejected);
        for (const engine::Completion& completion : output.completions) {
          check_completion(constraint, completion);
          runs.whole_matches += completion.finish_reason == FinishReason::stop ? 1 : 0;
          runs.texts.push_back(constraint.text_of(completion.tokens));
        }
      }
    }
  }
  BOOST_TEST_MESSAGE("preemptions " << runs.preemptions << ", whole matches " << runs.whole_matches);
  return runs;
}

// An executor that ignores masks: its first sampled token is one no constraint allows.
class MaskIgnoringExecutor final : public engine::Executor {
 public:
  explicit MaskIgnoringExecutor(engine::Executor& inner) : inner_(inner) {}
  sched::StepResult execute(const sched::StepPlan& plan) override {
    sched::StepResult result = inner_.execute(plan);
    for (sched::SequenceOutput& output : result.outputs) output.samples.front().token = 0;  // special: no text
    return result;
  }
  std::string name() const override { return "mask-ignoring"; }

 private:
  engine::Executor& inner_;
};

// An executor that, for a constrained sequence, samples `preferred` wherever its mask allows it (a
// model that keeps writing the same character), else the lowest id allowed; a verify pass accepts
// proposals while they equal that choice. Unconstrained sequences get the inner executor's tokens.
class PreferringExecutor final : public engine::Executor {
 public:
  PreferringExecutor(engine::Executor& inner, TokenId preferred) : inner_(inner), preferred_(preferred) {}
  sched::StepResult execute(const sched::StepPlan& plan) override {
    sched::StepResult result = inner_.execute(plan);
    size_t next = 0;
    for (const sched::ScheduledSequence& scheduled : plan.sequences) {
      if (!scheduled.sample) continue;
      sched::SequenceOutput& output = result.outputs.at(next++);
      if (scheduled.allowed_tokens.empty()) continue;
      const auto num_proposed = static_cast<size_t>(scheduled.num_proposed_tokens);
      const std::span<const TokenId> proposals = scheduled.tokens.last(num_proposed);
      const float logprob = output.samples.front().logprob;
      output.samples.clear();
      output.top_logprobs.clear();
      for (size_t j = 0; j <= num_proposed; ++j) {
        const std::span<const uint32_t> row = scheduled.allowed_row(j);
        TokenId pick = preferred_;
        if (!structured::is_allowed(row, pick)) {
          pick = 0;
          while (!structured::is_allowed(row, pick)) ++pick;
        }
        output.samples.push_back({.token = pick, .logprob = logprob});
        if (j == num_proposed || pick != proposals[j]) break;
      }
    }
    return result;
  }
  std::string name() const override { return "preferring"; }

 private:
  engine::Executor& inner_;
  TokenId preferred_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(structured_outputs)

BOOST_AUTO_TEST_CASE(every_sample_and_beam_keeps_to_the_constraint_under_preemption) {
  const ConstrainedRuns runs = run_under_preemption(Constraint(kRecordPattern));
  BOOST_CHECK_GT(runs.preemptions, 0);     // the pool is small enough to preempt
  BOOST_CHECK_GT(runs.whole_matches, 10);  // and most outputs complete the record before max_tokens
}

BOOST_AUTO_TEST_CASE(speculation_under_a_constraint_changes_no_token) {
  // Each verified position takes the mask of the constraint's state after the proposals before
  // it, and proposals the constraint refuses are never made: the tokens are those of plain
  // decoding, for a regex and a recursive grammar, under both kinds of preemption.
  const Constraint regex(kRecordPattern);
  const Constraint grammar(structured::compile_grammar(kNestedListGrammar));
  for (const Constraint* constraint : {&regex, &grammar}) {
    const std::vector<sched::Request> requests = constrained_workload(*constraint, 24);
    for (const auto mode : {PreemptionMode::recompute, PreemptionMode::swap}) {
      BOOST_TEST_CONTEXT((constraint == &regex ? "regex" : "grammar") << ", " << static_cast<int>(mode)) {
        EngineSetup setup = small_pool(mode, /*chunked_prefill=*/true);
        setup.eos_period = 4;
        const RunResult plain = run_workload(setup, requests, {.requests_per_step = 3});
        setup.speculative = {.method = spec::SpeculativeMethod::ngram,
                             .num_speculative_tokens = 3,
                             .prompt_lookup_min = 1,
                             .prompt_lookup_max = 3,
                             .disable_by_batch_size = 0};
        const RunResult speculative = run_workload(setup, requests, {.requests_per_step = 3});
        check_same_tokens(plain, speculative);
        BOOST_TEST(speculative.counters.spec_drafts > 0);
        BOOST_TEST(speculative.counters.spec_accepted_tokens > 0);
        // A draft model knows nothing of the constraint: its proposals are cut where it refuses them.
        setup.speculative = {.method = spec::SpeculativeMethod::draft_model,
                             .num_speculative_tokens = 3,
                             .draft_model = "scripted",
                             .disable_by_batch_size = 0};
        setup.draft = executor_config(setup);
        const RunResult drafted = run_workload(setup, requests, {.requests_per_step = 3});
        check_same_tokens(plain, drafted);
        BOOST_TEST(drafted.counters.spec_drafts > 0);
        BOOST_TEST(drafted.counters.spec_accepted_tokens > 0);
        BOOST_TEST_MESSAGE("constrained speculation: n-gram "
                           << speculative.counters.spec_accepted_tokens << " of "
                           << speculative.counters.spec_draft_tokens << " proposals accepted, draft model "
                           << drafted.counters.spec_accepted_tokens << " of " << drafted.counters.spec_draft_tokens);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_recursive_grammar_holds_through_samples_beams_and_preemption) {
  BOOST_TEST(is_nested_list("[a,[12,[]],[bc]]"));  // the test's own reader, both ways
  BOOST_TEST(!is_nested_list("[a,[12,[]],[bc]"));
  BOOST_TEST(!is_nested_list("[1234]"));
  const ConstrainedRuns runs = run_under_preemption(Constraint(structured::compile_grammar(kNestedListGrammar)));
  const auto nested = std::count_if(runs.texts.begin(), runs.texts.end(), [](const std::string& text) {
    return std::count(text.begin(), text.end(), '[') > 1;  // a list inside a list
  });
  BOOST_TEST_MESSAGE("nested " << nested);
  BOOST_CHECK_GT(runs.preemptions, 0);
  BOOST_CHECK_GT(runs.whole_matches, 10);
  BOOST_CHECK_GT(nested, 0);  // the outputs do use the recursion
}

BOOST_AUTO_TEST_CASE(a_choice_ends_the_output_once_complete_even_when_eos_is_ignored) {
  const Constraint constraint("yes|no");
  sched::Request request = make_request(1, 6, 50);
  request.params.output_constraint = constraint.cache;
  request.params.ignore_eos = true;
  request.params.n = 2;
  const engine::RequestOutput output = run_one(EngineSetup{}, request);
  BOOST_REQUIRE_EQUAL(output.completions.size(), 2u);
  for (const engine::Completion& completion : output.completions) {
    BOOST_CHECK_EQUAL(completion.finish_reason, FinishReason::stop);
    std::vector<TokenId> text = completion.tokens;
    BOOST_REQUIRE(!text.empty());
    text.pop_back();  // the stop token the matcher ended on
    const std::string answer = constraint.text_of(text);
    BOOST_CHECK_MESSAGE(answer == "yes" || answer == "no", answer);
  }
}

BOOST_AUTO_TEST_CASE(requests_a_constraint_cannot_serve_are_refused) {
  const Constraint constraint("a+");
  engine::EngineConfig config = engine_config(EngineSetup{});
  sched::SamplingParams params;
  params.output_constraint = constraint.cache;
  params.beam_width = 2;
  params.ignore_eos = true;
  BOOST_CHECK_THROW(engine::validate_request(config, params, 4), sched::InvalidRequestError);
  params.beam_width = 0;
  config.vocab_size = kConstrainedVocab + 1;
  BOOST_CHECK_THROW(engine::validate_request(config, params, 4), sched::InvalidRequestError);
  config.vocab_size = kConstrainedVocab;
  config.eos_token_ids.clear();
  BOOST_CHECK_THROW(engine::validate_request(config, params, 4), sched::InvalidRequestError);
  params.stop_token_ids = {kEos};
  BOOST_CHECK_NO_THROW(engine::validate_request(config, params, 4));
}

BOOST_AUTO_TEST_CASE(a_grammar_too_ambiguous_to_follow_ends_its_request_and_no_other) {
  // Each "a" doubles the parses alive: past GrammarMasks::kMaxLiveStacks the request ends as
  // rejected, with the reason, in the step that found it; the engine and the other requests go on.
  // With n-gram speculation the proposals are runs of "a", so the matcher fails inside a verify
  // pass's rows too.
  const Constraint ambiguous(
      structured::compile_grammar("root ::= s\ns ::= \"a\" s \"b\" | \"a\" x \"c\" | \"\"\n"
                                  "x ::= s \"d\"\n"));
  const Constraint nested(structured::compile_grammar(kNestedListGrammar));
  const auto run = [&](const EngineSetup& setup) {
    const engine::EngineConfig config = engine_config(setup);
    engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
    PreferringExecutor writes_a(scripted, kFirstPromptToken + 'a');
    engine::VirtualClock clock;
    engine::Engine engine(config, writes_a, clock);
    sched::Request bad = make_request(1, 6, 60);
    bad.params.output_constraint = ambiguous.cache;
    sched::Request good = make_request(2, 6, 60);
    good.params.output_constraint = nested.cache;
    engine.add_request(bad);
    engine.add_request(good);
    engine.add_request(make_request(3, 6, 30));
    std::map<sched::RequestId, engine::RequestOutput> finished;
    for (int step = 0; step < 200 && engine.has_unfinished(); ++step) {
      for (engine::RequestOutput& output : engine.step()) {
        if (output.finished) finished[output.id] = std::move(output);
      }
    }
    BOOST_REQUIRE_EQUAL(finished.size(), 3u);
    const engine::RequestOutput& failed = finished.at(1);
    BOOST_TEST(failed.finish_reason == FinishReason::rejected);
    BOOST_TEST(failed.message.find("structured outputs: grammar: too ambiguous to follow") == 0u, failed.message);
    const std::vector<TokenId>& written = failed.completions.at(0).tokens;
    BOOST_TEST(written.size() >= 8u);  // it did follow the first parses
    BOOST_TEST(written.size() < 60u);
    BOOST_TEST(finished.at(2).finish_reason != FinishReason::rejected);
    BOOST_TEST(finished.at(2).message.empty());
    check_completion(nested, finished.at(2).completions.at(0));
    BOOST_TEST(finished.at(3).finish_reason != FinishReason::rejected);
    BOOST_TEST(engine.counters().requests_rejected == 1);
    BOOST_TEST(engine.counters().requests_finished == 2);
    return engine.counters();
  };
  run(EngineSetup{});
  EngineSetup speculating;
  speculating.speculative = {.method = spec::SpeculativeMethod::ngram,
                             .num_speculative_tokens = 3,
                             .prompt_lookup_min = 1,
                             .prompt_lookup_max = 3,
                             .disable_by_batch_size = 0};
  BOOST_TEST(run(speculating).spec_accepted_tokens > 0);
}

BOOST_AUTO_TEST_CASE(a_token_outside_the_mask_is_the_executors_fault) {
  const Constraint constraint("[0-9]+");
  const EngineSetup setup;
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  MaskIgnoringExecutor faulty(scripted);
  engine::VirtualClock clock;
  engine::Engine engine(config, faulty, clock);
  sched::Request request = make_request(1, 6, 8);
  request.params.output_constraint = constraint.cache;
  engine.add_request(request);
  BOOST_CHECK_EXCEPTION(engine.step(), std::logic_error, [](const std::logic_error& error) {
    return std::string(error.what()).find("does not allow") != std::string::npos;
  });
}

BOOST_AUTO_TEST_SUITE_END()
