// Turning trace entries into engine requests: synthetic tokens that share exactly the blocks the
// trace says are shared, clipping and rejection at max_model_len, sampling and arrival scaling.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <set>

#include "core/trace/materialize.h"

namespace pagedllm::trace {
namespace {

MaterializeConfig small_config() {
  MaterializeConfig config;
  config.max_model_len = 64;
  config.synthetic_token_begin = 3;
  config.synthetic_token_end = 1000;
  config.vocab_size = 1000;
  config.seed = 11;
  return config;
}

TraceRequest length_request(double arrival, int32_t prompt_len, int32_t output_len, int64_t line,
                            std::vector<uint64_t> blocks = {}) {
  TraceRequest request;
  request.arrival_time = arrival;
  request.prompt_kind = PromptKind::length;
  request.prompt_len = prompt_len;
  request.output_len = output_len;
  request.prefix_block_ids = std::move(blocks);
  request.source_line = line;
  return request;
}

BOOST_AUTO_TEST_SUITE(materialize)

BOOST_AUTO_TEST_CASE(equal_block_ids_give_equal_tokens_and_nothing_else_is_shared) {
  Trace trace;
  trace.header.prefix_block_tokens = 4;
  trace.requests = {length_request(0.0, 10, 2, 1, {7, 8, 9}), length_request(0.5, 9, 2, 2, {7, 8, 5}),
                    length_request(1.0, 10, 2, 3)};
  const MaterializedTrace result = materialize_requests(trace, small_config(), "t.jsonl");
  BOOST_REQUIRE_EQUAL(result.requests.size(), 3u);
  const auto& a = result.requests[0].prompt_tokens;
  const auto& b = result.requests[1].prompt_tokens;
  const auto& c = result.requests[2].prompt_tokens;
  BOOST_TEST(a.size() == 10u);
  BOOST_TEST(b.size() == 9u);
  BOOST_TEST(std::equal(a.begin(), a.begin() + 8, b.begin()));           // blocks 7 and 8
  BOOST_TEST(!std::equal(a.begin() + 8, a.begin() + 9, b.begin() + 8));  // block 9 vs block 5
  BOOST_TEST(!std::equal(a.begin(), a.begin() + 4, c.begin()));          // no ids: its own tokens
  for (const auto& request : result.requests) {
    for (TokenId token : request.prompt_tokens) {
      BOOST_TEST(token >= 3);
      BOOST_TEST(token < 1000);
    }
  }
  // Same input, same seed: same tokens; another seed: other tokens.
  BOOST_TEST(materialize_requests(trace, small_config(), "t").requests[2].prompt_tokens == c);
  MaterializeConfig reseeded = small_config();
  reseeded.seed = 12;
  BOOST_TEST(materialize_requests(trace, reseeded, "t").requests[2].prompt_tokens != c);
}

BOOST_AUTO_TEST_CASE(requests_keep_their_trace_index_as_id_and_scale_arrivals) {
  Trace trace;
  trace.requests = {length_request(0.0, 5, 2, 1), length_request(3.0, 5, 2, 2)};
  MaterializeConfig config = small_config();
  config.rate_scale = 2.0;
  const MaterializedTrace result = materialize_requests(trace, config, "t");
  BOOST_REQUIRE_EQUAL(result.requests.size(), 2u);
  BOOST_TEST(result.requests[1].id == 1);
  BOOST_TEST(result.requests[1].arrival_time == 1.5);
}

BOOST_AUTO_TEST_CASE(over_length_requests_are_clipped_keeping_the_prompt_head) {
  Trace trace;
  trace.header.prefix_block_tokens = 4;
  trace.requests = {length_request(0.0, 100, 10, 1, {1, 2}), length_request(0.0, 20, 200, 2),
                    length_request(0.0, 30, 10, 3, {1, 2})};
  const MaterializedTrace result = materialize_requests(trace, small_config(), "t");
  BOOST_REQUIRE_EQUAL(result.requests.size(), 3u);
  BOOST_TEST(result.requests[0].prompt_tokens.size() == 54u);  // 64 - 10
  BOOST_TEST(result.requests[0].params.max_tokens == 10);
  BOOST_TEST(result.requests[1].prompt_tokens.size() == 1u);  // output alone leaves no room
  BOOST_TEST(result.requests[1].params.max_tokens == 63);
  BOOST_TEST(result.num_clipped == 2);
  BOOST_TEST(result.num_clipped_prompt_tokens == 46 + 19);
  BOOST_TEST(result.num_clipped_output_tokens == 137);
  // The shared head survives clipping.
  BOOST_TEST(std::equal(result.requests[2].prompt_tokens.begin(), result.requests[2].prompt_tokens.begin() + 8,
                        result.requests[0].prompt_tokens.begin()));
}

BOOST_AUTO_TEST_CASE(named_blocks_are_handed_on_as_content_ids_up_to_the_prompt_end) {
  Trace trace;
  trace.header.prefix_block_tokens = 4;
  trace.requests = {length_request(0.0, 10, 2, 1, {7, 8, 9}),  // ends inside id 9's block
                    length_request(0.0, 14, 2, 2, {7, 8}),     // runs past its ids
                    length_request(0.0, 100, 10, 3, {7, 8}),   // clipped to 54, ids cover 8
                    length_request(0.0, 10, 2, 4)};            // no ids
  MaterializeConfig config = small_config();
  const MaterializedTrace result = materialize_requests(trace, config, "t");
  BOOST_REQUIRE_EQUAL(result.requests.size(), 4u);
  const kv::PromptContentIds& first = result.requests[0].content_ids;
  BOOST_TEST(first.ids == (std::vector<uint64_t>{7, 8, 9}));
  BOOST_TEST(first.tokens_per_id == 4);
  BOOST_TEST(first.num_tokens == 10);
  BOOST_TEST(first.num_stream_tokens == 0);
  BOOST_TEST(result.requests[1].content_ids.num_tokens == 8);
  BOOST_TEST(result.requests[2].content_ids.num_tokens == 8);
  // The tokens past the ids are named by the request's own stream (its index), to the prompt end.
  BOOST_TEST(result.requests[1].content_ids.num_stream_tokens == 6);
  BOOST_TEST(result.requests[1].content_ids.stream == 1u);
  BOOST_TEST(result.requests[2].content_ids.num_stream_tokens == 54 - 8);
  BOOST_TEST(result.requests[3].content_ids.ids.empty());
  BOOST_TEST(result.requests[3].content_ids.num_tokens == 0);
  BOOST_TEST(result.requests[3].content_ids.num_stream_tokens == 10);
  BOOST_TEST(result.requests[3].content_ids.stream == 3u);
  BOOST_TEST(result.requests[1].content_ids.seed == first.seed);
  // The seed stands for everything the tokens depend on besides (id, offset).
  MaterializeConfig reseeded = config;
  reseeded.seed = 12;
  BOOST_TEST(materialize_requests(trace, reseeded, "t").requests[0].content_ids.seed != first.seed);
  MaterializeConfig narrower = config;
  narrower.synthetic_token_end = 999;
  BOOST_TEST(materialize_requests(trace, narrower, "t").requests[0].content_ids.seed != first.seed);
  // Prompts given as tokens name nothing: their tokens are what they are.
  Trace tokens = trace;
  tokens.requests[0].prompt_kind = PromptKind::tokens;
  tokens.requests[0].prompt_tokens = std::vector<TokenId>(10, 5);
  BOOST_TEST(materialize_requests(tokens, config, "t").requests[0].content_ids.empty());
}

BOOST_AUTO_TEST_CASE(over_length_requests_are_rejected_with_their_line_when_asked) {
  Trace trace;
  trace.requests = {length_request(0.0, 10, 2, 4), length_request(0.0, 100, 10, 5), length_request(0.0, 10, 2, 6)};
  MaterializeConfig config = small_config();
  config.over_length = OverLength::reject;
  const MaterializedTrace result = materialize_requests(trace, config, "trace.jsonl");
  BOOST_REQUIRE_EQUAL(result.requests.size(), 2u);
  BOOST_TEST(result.requests[1].id == 2);
  BOOST_REQUIRE_EQUAL(result.rejected.size(), 1u);
  BOOST_TEST(result.rejected[0].line == 5);
  BOOST_TEST(result.rejected[0].file == "trace.jsonl");
  BOOST_TEST(result.rejected[0].message.find("max_model_len 64") != std::string::npos);
  BOOST_TEST(result.num_clipped == 0);
}

BOOST_AUTO_TEST_CASE(text_prompts_need_a_tokenizer_and_token_ids_must_fit_the_vocabulary) {
  Trace trace;
  TraceRequest text = length_request(0.0, 0, 3, 1);
  text.prompt_kind = PromptKind::text;
  text.prompt_text = "hello";
  TraceRequest tokens = length_request(0.0, 0, 3, 2);
  tokens.prompt_kind = PromptKind::tokens;
  tokens.prompt_tokens = {5, 6, 1000};
  trace.requests = {text, tokens};
  const MaterializedTrace without = materialize_requests(trace, small_config(), "t");
  BOOST_TEST(without.requests.empty());
  BOOST_REQUIRE_EQUAL(without.rejected.size(), 2u);
  BOOST_TEST(without.rejected[0].field == "prompt");
  BOOST_TEST(without.rejected[1].field == "prompt_token_ids");
  BOOST_TEST(without.rejected[1].message.find("1000") != std::string::npos);

  MaterializeConfig config = small_config();
  config.encode = [](const std::string& s) { return std::vector<TokenId>(s.begin(), s.end()); };
  const MaterializedTrace with = materialize_requests(trace, config, "t");
  BOOST_REQUIRE_EQUAL(with.requests.size(), 1u);
  BOOST_TEST(with.requests[0].prompt_tokens == (std::vector<TokenId>{'h', 'e', 'l', 'l', 'o'}));
}

BOOST_AUTO_TEST_CASE(sampling_comes_from_the_trace_or_the_default_with_the_trace_length) {
  Trace trace;
  TraceRequest sampled = length_request(0.0, 5, 7, 1);
  sampled.sampling = sched::SamplingParams{};
  sampled.sampling->n = 3;
  sampled.sampling->temperature = 0.8f;
  sampled.sampling->max_tokens = 999;  // the trace's output_len rules
  trace.requests = {length_request(0.0, 5, 4, 1), sampled};
  const MaterializedTrace result = materialize_requests(trace, small_config(), "t");
  BOOST_REQUIRE_EQUAL(result.requests.size(), 2u);
  BOOST_TEST(result.requests[0].params.temperature == 0.0f);
  BOOST_TEST(result.requests[0].params.max_tokens == 4);
  BOOST_TEST(result.requests[0].params.ignore_eos);
  BOOST_TEST(!result.requests[0].params.seed.has_value());
  BOOST_TEST(result.requests[1].params.n == 3);
  BOOST_TEST(result.requests[1].params.max_tokens == 7);
  BOOST_TEST(result.requests[1].params.seed.has_value());  // sampled: reproducible anyway
}

BOOST_AUTO_TEST_CASE(unusable_configs_name_the_field) {
  MaterializeConfig config = small_config();
  config.synthetic_token_end = 2;
  BOOST_CHECK_EXCEPTION(validate(config), std::invalid_argument, [](const std::invalid_argument& error) {
    return std::string(error.what()).find("synthetic_token") != std::string::npos;
  });
  config = small_config();
  config.rate_scale = 0.0;
  BOOST_CHECK_THROW(validate(config), std::invalid_argument);
  config = small_config();
  config.vocab_size = 500;
  BOOST_CHECK_THROW(validate(config), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(deferred_prompts_are_described_and_written_as_exactly_the_eager_tokens) {
  Trace trace;
  trace.header.prefix_block_tokens = 4;
  TraceRequest tokens = length_request(0.3, 0, 3, 4);
  tokens.prompt_kind = PromptKind::tokens;
  tokens.prompt_tokens = {5, 6, 7};
  trace.requests = {length_request(0.0, 10, 2, 1, {7, 8, 9}),  // named blocks and a tail
                    length_request(0.1, 9, 2, 2),              // no ids: its own tokens
                    length_request(0.2, 0, 2, 3),              // empty: rejected either way
                    tokens,                                    // given as ids: never deferred
                    length_request(0.4, 70, 30, 5, {7, 8})};   // clipped to 64 - 30 = 34
  const MaterializedTrace eager = materialize_requests(trace, small_config(), "t");
  MaterializeConfig config = small_config();
  config.defer_synthetic_prompts = true;
  MaterializedTrace deferred = materialize_requests(trace, config, "t");
  BOOST_REQUIRE_EQUAL(deferred.requests.size(), eager.requests.size());
  BOOST_REQUIRE_EQUAL(deferred.requests.size(), 4u);
  BOOST_TEST(deferred.rejected.size() == eager.rejected.size());
  BOOST_TEST(deferred.num_clipped == eager.num_clipped);
  BOOST_TEST(deferred.num_clipped_prompt_tokens == eager.num_clipped_prompt_tokens);
  BOOST_TEST(deferred.num_clipped_prompt_tokens == 36);
  BOOST_TEST(deferred.requests[0].prompt_tokens.empty());  // nothing written
  BOOST_TEST(deferred.requests[2].prompt_tokens == (std::vector<TokenId>{5, 6, 7}));
  BOOST_TEST(!deferred.requests[2].prompt_synthesis);  // given as ids: not described
  for (size_t i = 0; i < deferred.requests.size(); ++i) {
    sched::Request& request = deferred.requests[i];
    const sched::Request& expected = eager.requests[i];
    BOOST_TEST(sched::prompt_length(request) == static_cast<int32_t>(expected.prompt_tokens.size()));
    if (i != 2) {
      // Every token of a described prompt, made alone, is the one written.
      BOOST_REQUIRE(request.prompt_synthesis);
      BOOST_TEST(request.content_ids.num_named_tokens() == sched::prompt_length(request));
      for (int32_t p = 0; p < sched::prompt_length(request); ++p) {
        BOOST_TEST(request.prompt_synthesis->token_at(request.content_ids, p) ==
                   expected.prompt_tokens[static_cast<size_t>(p)]);
      }
    }
    sched::write_prompt(request);
    BOOST_TEST(request.id == expected.id);
    BOOST_TEST(request.prompt_tokens == expected.prompt_tokens, boost::test_tools::per_element());
    BOOST_TEST(request.content_ids.ids == expected.content_ids.ids, boost::test_tools::per_element());
    BOOST_TEST(request.content_ids.num_tokens == expected.content_ids.num_tokens);
    BOOST_TEST(request.content_ids.num_stream_tokens == expected.content_ids.num_stream_tokens);
    BOOST_TEST(request.content_ids.stream == expected.content_ids.stream);
    BOOST_TEST(request.params.max_tokens == expected.params.max_tokens);
    // Writing twice changes nothing.
    const std::vector<TokenId> once = request.prompt_tokens;
    sched::write_prompt(request);
    BOOST_TEST(request.prompt_tokens == once, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm::trace
