// frontend::generate: offline generation with text. Stop strings cut each sample where its text
// reaches one (the sample's blocks freed at once, its siblings going on), as the server does,
// since both run on RequestStream.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "core/engine/scripted_executor.h"
#include "core/frontend/generate.h"
#include "tests/tokenizer/tiny_tokenizers.h"

namespace pagedllm::frontend {
namespace {

// The scripted executor (tokens a fixed function of request, sample and position) over byte
// tokens, so that any output's text is known.
struct GenerateHarness {
  tokenizer::Tokenizer tokenizer{tokenizer::testing::byte_level_spec({})};
  GenerateConfig config;
  engine::ScriptedExecutorConfig script;

  GenerateHarness() {
    config.engine.cache = {.block_size = 16, .num_device_blocks = 256, .num_host_blocks = 32};
    config.engine.scheduler.max_model_len = 512;
    script.vocab_size = 256;
  }
  std::vector<TextOutput> run(const std::vector<TextRequest>& requests) {
    engine::ScriptedExecutor executor(script, config.engine.cache);
    return generate(requests, executor, tokenizer, config);
  }
};

TextRequest text_request_of(int32_t max_tokens, int32_t n = 1, std::vector<std::string> stop = {}) {
  TextRequest request;
  request.prompt = {'h', 'e', 'l', 'l', 'o'};
  request.params.max_tokens = max_tokens;
  request.params.n = n;
  request.params.ignore_eos = true;
  request.params.stop = std::move(stop);
  request.decode.skip_special_tokens = false;
  return request;
}

BOOST_AUTO_TEST_SUITE(offline_text_generation)

BOOST_AUTO_TEST_CASE(texts_are_the_tokens_decoded_in_input_order) {
  GenerateHarness harness;
  const std::vector<TextOutput> outputs = harness.run({text_request_of(30), text_request_of(12, 2)});
  BOOST_REQUIRE_EQUAL(outputs.size(), 2u);
  BOOST_REQUIRE_EQUAL(outputs[0].completions.size(), 1u);
  BOOST_REQUIRE_EQUAL(outputs[1].completions.size(), 2u);
  for (const TextOutput& output : outputs) {
    BOOST_TEST(output.num_prompt_tokens == 5);
    for (const TextCompletion& completion : output.completions) {
      BOOST_TEST(completion.text == harness.tokenizer.decode(completion.tokens));
      BOOST_TEST(completion.finish_reason == "length");
    }
  }
  BOOST_TEST(outputs[0].completions[0].tokens.size() == 30u);
}

BOOST_AUTO_TEST_CASE(a_stop_string_cuts_the_text_and_frees_the_sample_early) {
  GenerateHarness harness;
  // The uncut text, then a stop string taken from its middle.
  const std::string whole = harness.run({text_request_of(60)})[0].completions[0].text;
  BOOST_REQUIRE(whole.size() > 40u);
  const std::string stop = whole.substr(20, 3);
  const std::string expected = whole.substr(0, whole.find(stop));
  const TextCompletion cut = harness.run({text_request_of(60, 1, {stop})})[0].completions[0];
  BOOST_TEST(cut.text == expected);
  BOOST_TEST(cut.finish_reason == "stop");
  BOOST_TEST(cut.tokens.size() < 60u, "generation stopped at the string, not at max_tokens");

  TextRequest with_stop = text_request_of(60, 1, {stop});
  with_stop.include_stop_str_in_output = true;
  BOOST_TEST(harness.run({with_stop})[0].completions[0].text == expected + stop);
}

BOOST_AUTO_TEST_CASE(each_sample_stops_on_its_own_text) {
  GenerateHarness harness;
  const std::vector<TextCompletion> whole = harness.run({text_request_of(40, 3)})[0].completions;
  BOOST_REQUIRE_EQUAL(whole.size(), 3u);
  const std::string stop = whole[1].text.substr(10, 2);  // sample 1's text holds it
  const std::vector<TextCompletion> cut = harness.run({text_request_of(40, 3, {stop})})[0].completions;
  BOOST_REQUIRE_EQUAL(cut.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const size_t at = whole[i].text.find(stop);
    BOOST_TEST(cut[i].text == (at == std::string::npos ? whole[i].text : whole[i].text.substr(0, at)));
    BOOST_TEST(cut[i].finish_reason == (at == std::string::npos ? "length" : "stop"));
  }
}

BOOST_AUTO_TEST_CASE(an_invalid_request_throws_before_anything_runs) {
  GenerateHarness harness;
  TextRequest empty_stop = text_request_of(10, 1, {""});
  BOOST_CHECK_THROW(harness.run({text_request_of(10), empty_stop}), sched::InvalidRequestError);
  BOOST_CHECK_THROW(harness.run({text_request_of(600)}), sched::InvalidRequestError);  // beyond max_model_len 512
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm::frontend
