// Speculative decoding's n-gram proposer (prompt lookup) and its --speculative-config parsing.
#include <boost/test/unit_test.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "core/spec/ngram_proposer.h"
#include "core/spec/speculative_config.h"

namespace spec = pagedllm::spec;
using pagedllm::TokenId;
using Tokens = std::vector<TokenId>;

namespace {

Tokens propose(const Tokens& tokens, int32_t min_n, int32_t max_n, int32_t k) {
  Tokens proposals{99};  // replaced, never appended to
  spec::propose_ngram(tokens, {.min_n = min_n, .max_n = max_n}, k, proposals);
  return proposals;
}

void expect_refused(const std::string& json, const std::string& field) {
  try {
    static_cast<void>(spec::parse_speculative_config(json));
    BOOST_ERROR("accepted " << json);
  } catch (const std::invalid_argument& error) {
    BOOST_TEST(std::string(error.what()).find(field) != std::string::npos, error.what() << " lacks " << field);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ngram_proposer)

BOOST_AUTO_TEST_CASE(proposes_what_followed_the_suffix_before) {
  // ... 5 6 7 8 9 ... 5 6 7 -> 8 9 10
  const Tokens tokens{1, 5, 6, 7, 8, 9, 10, 2, 3, 5, 6, 7};
  BOOST_TEST(propose(tokens, 1, 3, 3) == (Tokens{8, 9, 10}), boost::test_tools::per_element());
  BOOST_TEST(propose(tokens, 1, 3, 2) == (Tokens{8, 9}), boost::test_tools::per_element());
  // Fewer tokens follow the match than k allows: what there is.
  const Tokens near_end{4, 5, 6, 4, 5};
  BOOST_TEST(propose(near_end, 2, 2, 5) == (Tokens{6, 4, 5}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_longest_suffix_wins_then_the_most_recent) {
  // "7" alone recurs late (7 -> 1), but "6 7" recurs earlier (6 7 -> 8): the longer match wins.
  const Tokens tokens{6, 7, 8, 3, 7, 1, 2, 6, 7};
  BOOST_TEST(propose(tokens, 1, 2, 1) == (Tokens{8}), boost::test_tools::per_element());
  // With only 1-token matches, the most recent one: 7 -> 1.
  BOOST_TEST(propose(tokens, 1, 1, 1) == (Tokens{1}), boost::test_tools::per_element());
  // Two matches as long as max_n: the most recent.
  const Tokens twice{3, 4, 10, 3, 4, 11, 3, 4};
  BOOST_TEST(propose(twice, 2, 2, 1) == (Tokens{11}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(nothing_below_min_n) {
  const Tokens tokens{1, 2, 3, 9, 2, 3};
  BOOST_TEST(propose(tokens, 3, 4, 2).empty());  // only "2 3" recurs
  BOOST_TEST(propose(tokens, 2, 4, 2) == (Tokens{9, 2}), boost::test_tools::per_element());
  BOOST_TEST(propose({1, 2, 3, 4}, 1, 3, 3).empty());  // nothing recurs
  BOOST_TEST(propose({7}, 1, 1, 3).empty());
  BOOST_TEST(propose({}, 1, 1, 3).empty());
  BOOST_TEST(propose({5, 5, 5}, 1, 3, 0).empty());  // k = 0
}

BOOST_AUTO_TEST_CASE(a_loop_proposes_a_whole_draft) {
  // The latest occurrence of "4 4 4" is followed by one token; an earlier one by two.
  BOOST_TEST(propose({4, 4, 4, 4, 4}, 1, 3, 4) == (Tokens{4, 4}), boost::test_tools::per_element());
  // A loop of period 2: the match whose continuation covers k tokens.
  const Tokens loop{9, 1, 2, 1, 2, 1, 2, 1, 2};
  BOOST_TEST(propose(loop, 2, 2, 4) == (Tokens{1, 2, 1, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(config_parses_as_vllm) {
  const spec::SpeculativeConfig both = spec::parse_speculative_config(
      R"({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 5, "prompt_lookup_min": 2})");
  BOOST_TEST((both.method == spec::SpeculativeMethod::ngram));
  BOOST_TEST(both.num_speculative_tokens == 4);
  BOOST_TEST(both.prompt_lookup_min == 2);
  BOOST_TEST(both.prompt_lookup_max == 5);
  BOOST_TEST(both.disable_by_batch_size == spec::kDefaultDisableByBatchSize);
  BOOST_TEST(spec::describe(both) == "ngram k=4 lookup 2-5, off above 8 requests");
  const spec::SpeculativeConfig never = spec::parse_speculative_config(
      R"({"method": "ngram", "num_speculative_tokens": 2, "disable_by_batch_size": null})");
  BOOST_TEST(never.disable_by_batch_size == 0);
  BOOST_TEST(spec::describe(never) == "ngram k=2 lookup 5-5");
  const spec::SpeculativeConfig above_3 =
      spec::parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": 2, "disable_by_batch_size": 3})");
  BOOST_TEST(above_3.disable_by_batch_size == 3);
  // vLLM's defaults: both 5 when neither is given, the other's value when one is.
  const spec::SpeculativeConfig neither =
      spec::parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": 3})");
  BOOST_TEST(neither.prompt_lookup_min == 5);
  BOOST_TEST(neither.prompt_lookup_max == 5);
  const spec::SpeculativeConfig max_only =
      spec::parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4})");
  BOOST_TEST(max_only.prompt_lookup_min == 4);
  BOOST_TEST(spec::describe(spec::SpeculativeConfig{}) == "off");
  // A draft model: named by "model", the method inferred from it as vLLM does.
  for (const char* json : {R"({"method": "draft_model", "model": "draft.gguf", "num_speculative_tokens": 3})",
                           R"({"model": "draft.gguf", "num_speculative_tokens": 3})"}) {
    const spec::SpeculativeConfig draft = spec::parse_speculative_config(json);
    BOOST_TEST((draft.method == spec::SpeculativeMethod::draft_model));
    BOOST_TEST(draft.draft_model == "draft.gguf");
    BOOST_TEST(draft.num_speculative_tokens == 3);
    BOOST_TEST(spec::describe(draft) == "draft_model k=3 (draft.gguf), off above 8 requests");
    BOOST_CHECK_NO_THROW(spec::validate(draft, 4));
  }
  // In the simulator a draft model drafts at every decode; only the acceptance is drawn.
  const spec::SpeculativeConfig simulated = spec::parse_speculative_config(
      R"({"model": "llama-3.2-1b", "num_speculative_tokens": 2, "simulated_acceptance": [0.5, 0.4]})");
  BOOST_TEST_REQUIRE(simulated.simulated.has_value());
  BOOST_TEST(simulated.simulated->draft_rate == 1.0);
  BOOST_TEST(simulated.simulated->accepted_per_position == (std::vector<double>{0.5, 0.4}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(bad_configs_name_the_field) {
  expect_refused("not json", "not JSON");
  expect_refused("[1]", "JSON object");
  expect_refused(R"({"num_speculative_tokens": 3})", "method");
  expect_refused(R"({"method": "medusa", "num_speculative_tokens": 3})", "method");
  expect_refused(R"({"method": "lookahead", "num_speculative_tokens": 3})", "method");
  expect_refused(R"({"method": "ngram"})", "num_speculative_tokens");
  expect_refused(R"({"method": "ngram", "num_speculative_tokens": 0})", "num_speculative_tokens");
  expect_refused(R"({"method": "ngram", "num_speculative_tokens": -2})", "num_speculative_tokens");
  expect_refused(R"({"method": "ngram", "num_speculative_tokens": "4"})", "num_speculative_tokens");
  expect_refused(R"({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 0})", "prompt_lookup_min");
  expect_refused(R"({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 4, "prompt_lookup_max": 2})",
                 "prompt_lookup_min");
  expect_refused(R"({"method": "ngram", "num_speculative_tokens": 4, "model": "x"})", "model");
  expect_refused(R"({"method": "draft_model", "num_speculative_tokens": 4})", "model");
  expect_refused(R"({"model": "", "num_speculative_tokens": 4})", "model");
  expect_refused(R"({"model": 3, "num_speculative_tokens": 4})", "model");
  expect_refused(R"({"model": "d.gguf", "num_speculative_tokens": 4, "prompt_lookup_min": 2})", "prompt_lookup_min");
  expect_refused(R"({"model": "d.gguf", "num_speculative_tokens": 0})", "num_speculative_tokens");
  expect_refused(
      R"({"model": "d", "num_speculative_tokens": 1, "simulated_draft_rate": 0.5, "simulated_acceptance": [0.5]})",
      "simulated_draft_rate");
  expect_refused(R"({"method": "ngram", "num_speculative_tokens": 4, "disable_by_batch_size": 0})",
                 "disable_by_batch_size");
  // k beyond a step's budget: the verify pass (k + 1 tokens) must fit.
  const spec::SpeculativeConfig config =
      spec::parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": 8})");
  BOOST_CHECK_THROW(spec::validate(config, 8), std::invalid_argument);
  BOOST_CHECK_NO_THROW(spec::validate(config, 9));
}

BOOST_AUTO_TEST_SUITE_END()
