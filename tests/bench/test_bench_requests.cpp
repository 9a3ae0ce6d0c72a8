#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/trace/trace_synth.h"
#include "tools/bench/bench_requests.h"

namespace bench = pagedllm::bench;
namespace trace = pagedllm::trace;
using nlohmann::json;
using pagedllm::TokenId;

namespace {

pagedllm::sched::SamplingParams greedy() {
  pagedllm::sched::SamplingParams params;
  params.temperature = 0.0f;
  return params;
}

trace::TraceRequest length_request(double arrival, int32_t prompt_len, int32_t output_len,
                                   std::vector<uint64_t> blocks = {}) {
  trace::TraceRequest request;
  request.arrival_time = arrival;
  request.prompt_kind = trace::PromptKind::length;
  request.prompt_len = prompt_len;
  request.output_len = output_len;
  request.prefix_block_ids = std::move(blocks);
  return request;
}

std::vector<TokenId> prompt_ids(const bench::LoadRequest& request) {
  return json::parse(request.body)["prompt"].get<std::vector<TokenId>>();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(bench_request_bodies)

BOOST_AUTO_TEST_CASE(completion_body_with_token_ids_is_exact) {
  bench::BenchBodyConfig config;
  config.model = "tiny";
  const json body = bench::request_body(std::vector<TokenId>{300, 301}, 7, greedy(), config);
  const json expected = {{"model", "tiny"},
                         {"prompt", {300, 301}},
                         {"max_tokens", 7},
                         {"stream", true},
                         {"stream_options", {{"include_usage", true}}},
                         {"ignore_eos", true},
                         {"temperature", 0.0}};
  BOOST_TEST(body == expected, body.dump() << " != " << expected.dump());
}

BOOST_AUTO_TEST_CASE(chat_body_takes_text_and_refuses_token_ids) {
  bench::BenchBodyConfig config;
  config.endpoint = std::string(bench::kChatCompletionsPath);
  config.model = "m";
  config.ignore_eos = false;
  config.include_usage = false;
  const json body = bench::request_body(std::string("hello"), 3, greedy(), config);
  const json expected = {{"model", "m"},
                         {"messages", {{{"role", "user"}, {"content", "hello"}}}},
                         {"max_tokens", 3},
                         {"stream", true},
                         {"temperature", 0.0}};
  BOOST_TEST(body == expected, body.dump());
  BOOST_CHECK_THROW(bench::request_body(std::vector<TokenId>{1}, 3, greedy(), config), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(sampling_fields_are_sent_when_not_default) {
  pagedllm::sched::SamplingParams sampling;
  sampling.n = 3;
  sampling.temperature = 0.7f;
  sampling.top_p = 0.9f;
  sampling.top_k = 40;
  sampling.seed = 42;
  sampling.logprobs = 2;
  bench::BenchBodyConfig config;
  config.model = "m";
  config.extra_body = {{"top_k", 5}, {"priority", 1}};  // the caller's last word
  const json body = bench::request_body(std::string("x"), 4, sampling, config);
  BOOST_TEST(body["temperature"].get<double>() == 0.7);  // not 0.699999988...
  BOOST_TEST(body["top_p"].get<double>() == 0.9);
  BOOST_TEST(body["n"] == 3);
  BOOST_TEST(body["seed"] == 42);
  BOOST_TEST(body["logprobs"] == 2);
  BOOST_TEST(body["top_k"] == 5);
  BOOST_TEST(body["priority"] == 1);
  BOOST_TEST(!body.contains("min_p"));
  BOOST_TEST(!body.contains("presence_penalty"));
  config.endpoint = std::string(bench::kChatCompletionsPath);
  sampling.seed = std::numeric_limits<uint64_t>::max();
  BOOST_TEST(bench::request_body(std::string("x"), 4, sampling, config)["seed"] == std::numeric_limits<int64_t>::max());
  const json chat = bench::request_body(std::string("x"), 4, sampling, config);
  BOOST_TEST(chat["logprobs"] == true);
  BOOST_TEST(chat["top_logprobs"] == 2);
  // Beam search: vLLM's use_beam_search runs n beams, so only beam_width == n can be asked.
  sampling.n = 1;
  sampling.beam_width = 2;
  BOOST_CHECK_THROW(bench::request_body(std::string("x"), 4, sampling, config), std::invalid_argument);
  sampling.n = 2;
  sampling.length_penalty = 0.5f;
  const json beams = bench::request_body(std::string("x"), 4, sampling, config);
  BOOST_TEST(beams["use_beam_search"] == true);
  BOOST_TEST(beams["n"] == 2);
  BOOST_TEST(beams["length_penalty"] == 0.5);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(bench_request_lists)

BOOST_AUTO_TEST_CASE(trace_prompts_go_out_as_text_ids_or_synthetic_ids) {
  trace::Trace input;
  input.header.prefix_block_tokens = 4;
  trace::TraceRequest text;
  text.arrival_time = 0.0;
  text.prompt_kind = trace::PromptKind::text;
  text.prompt_text = "Hello there";
  text.prompt_len = 2;
  text.output_len = 5;
  trace::TraceRequest tokens;
  tokens.arrival_time = 1.0;
  tokens.prompt_kind = trace::PromptKind::tokens;
  tokens.prompt_tokens = {5, 6, 7};
  tokens.prompt_len = 3;
  tokens.output_len = 2;
  input.requests = {text, tokens, length_request(2.0, 10, 3, {0, 1, 2}), length_request(3.0, 6, 1, {0, 9}),
                    length_request(4.0, 0, 1)};  // the last: no prompt at all
  bench::BenchRequestConfig config;
  config.body.model = "tiny";
  config.synthetic_token_begin = 300;
  config.synthetic_token_end = 310;
  config.rate_scale = 2.0;
  const bench::BenchRequests result = bench::build_bench_requests(input, config, "t.jsonl");

  BOOST_TEST_REQUIRE(result.requests.size() == 4u);
  BOOST_TEST_REQUIRE(result.rejected.size() == 1u);
  BOOST_TEST(result.rejected[0].field == "prompt");
  for (size_t i = 0; i < 4; ++i) {
    BOOST_TEST(result.requests[i].id == int64_t(i));
    BOOST_TEST(result.requests[i].send_time == input.requests[i].arrival_time / 2.0);
    BOOST_TEST(result.requests[i].path == "/v1/completions");
  }
  const json first = json::parse(result.requests[0].body);
  BOOST_TEST(first["prompt"] == "Hello there");
  BOOST_TEST(first["max_tokens"] == 5);
  BOOST_TEST(result.requests[0].prompt_tokens == 2);
  BOOST_TEST(prompt_ids(result.requests[1]) == (std::vector<TokenId>{5, 6, 7}), boost::test_tools::per_element());
  const auto synthetic = prompt_ids(result.requests[2]);
  BOOST_TEST(synthetic.size() == 10u);
  BOOST_TEST(result.requests[2].prompt_tokens == 10);
  BOOST_TEST(std::all_of(synthetic.begin(), synthetic.end(), [](TokenId t) { return t >= 300 && t < 310; }));
  // Both name block 0 first: their first 4 tokens are equal; the next block differs.
  const auto shared = prompt_ids(result.requests[3]);
  BOOST_TEST(std::equal(shared.begin(), shared.begin() + 4, synthetic.begin()));
  BOOST_TEST(!std::equal(shared.begin() + 4, shared.end(), synthetic.begin() + 4));
}

BOOST_AUTO_TEST_CASE(synthetic_prompts_follow_the_seed) {
  trace::Trace input;
  input.requests = {length_request(0.0, 64, 1)};
  bench::BenchRequestConfig config;
  const auto a = prompt_ids(bench::build_bench_requests(input, config, "t").requests[0]);
  const auto b = prompt_ids(bench::build_bench_requests(input, config, "t").requests[0]);
  config.seed = 1;
  const auto c = prompt_ids(bench::build_bench_requests(input, config, "t").requests[0]);
  BOOST_TEST(a == b);
  BOOST_TEST(a != c);
  BOOST_TEST(std::all_of(a.begin(), a.end(), [](TokenId t) {
    return t >= bench::kDefaultSyntheticTokenBegin && t < bench::kDefaultSyntheticTokenEnd;
  }));
}

BOOST_AUTO_TEST_CASE(chat_rejects_prompts_without_text) {
  trace::Trace input;
  input.requests = {length_request(0.0, 8, 1)};
  trace::TraceRequest text;
  text.prompt_kind = trace::PromptKind::text;
  text.prompt_text = "hi";
  text.output_len = 2;
  input.requests.push_back(text);
  bench::BenchRequestConfig config;
  config.body.endpoint = std::string(bench::kChatCompletionsPath);
  const auto result = bench::build_bench_requests(input, config, "t");
  BOOST_TEST_REQUIRE(result.requests.size() == 1u);
  BOOST_TEST(result.requests[0].id == 1);
  BOOST_TEST(json::parse(result.requests[0].body)["messages"][0]["content"] == "hi");
  BOOST_TEST_REQUIRE(result.rejected.size() == 1u);
  BOOST_TEST(result.rejected[0].message.find("text prompts") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(chat_without_any_text_prompt_is_one_error_not_one_rejection_per_request) {
  trace::Trace input;
  input.requests = {length_request(0.0, 8, 1), length_request(0.1, 9, 1), length_request(0.2, 10, 1)};
  bench::BenchRequestConfig config;
  config.body.endpoint = std::string(bench::kChatCompletionsPath);
  try {
    bench::build_bench_requests(input, config, "lengths.jsonl");
    BOOST_FAIL("a chat run with no text prompt must be refused as a whole");
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    BOOST_TEST(message.find("lengths.jsonl: no request has a text prompt") != std::string::npos, message);
    BOOST_TEST(message.find("/v1/completions") != std::string::npos, message);
  }
  config.body.endpoint = std::string(bench::kCompletionsPath);  // the same trace is fine there
  BOOST_TEST(bench::build_bench_requests(input, config, "lengths.jsonl").requests.size() == 3u);
}

BOOST_AUTO_TEST_CASE(a_request_rate_replaces_the_trace_arrivals) {
  trace::Trace input;
  for (int i = 0; i < 100; ++i) input.requests.push_back(length_request(0.0, 4, 1));
  bench::BenchRequestConfig config;
  config.request_rate = 50.0;
  config.burstiness = 0.5;
  config.seed = 3;
  const auto result = bench::build_bench_requests(input, config, "t");
  const auto times = bench::arrival_times(100, 50.0, 0.5, 3);
  BOOST_TEST_REQUIRE(result.requests.size() == times.size());
  for (size_t i = 0; i < times.size(); ++i) BOOST_TEST(result.requests[i].send_time == times[i]);
  BOOST_TEST(times.back() > 0.0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(bench_arrivals)

BOOST_AUTO_TEST_CASE(gamma_arrivals_have_the_requested_rate) {
  constexpr int kCount = 20000;
  for (const double burstiness : {0.5, 1.0, 4.0}) {
    const auto times = bench::arrival_times(kCount, 10.0, burstiness, 7);
    BOOST_TEST_REQUIRE(times.size() == size_t{kCount});
    BOOST_TEST(times.front() == 0.0);
    BOOST_TEST(std::is_sorted(times.begin(), times.end()));
    const double mean_gap = times.back() / (kCount - 1);
    BOOST_TEST(mean_gap == 0.1, boost::test_tools::tolerance(0.05));
    // The gaps' coefficient of variation is 1 / sqrt(shape): burstier means more spread.
    double sum_sq = 0.0;
    for (size_t i = 1; i < times.size(); ++i) sum_sq += std::pow(times[i] - times[i - 1] - mean_gap, 2);
    const double cv = std::sqrt(sum_sq / (kCount - 1)) / mean_gap;
    BOOST_TEST(cv == 1.0 / std::sqrt(burstiness), boost::test_tools::tolerance(0.08));
  }
}

BOOST_AUTO_TEST_CASE(arrivals_match_the_synthesizer_and_infinity_sends_all_at_once) {
  trace::SynthConfig synth;
  synth.seed = 11;
  synth.num_requests = 50;
  synth.request_rate = 3.0;
  synth.burstiness = 2.0;
  const trace::Trace reference = trace::synthesize_trace(synth);
  const auto times = bench::arrival_times(50, 3.0, 2.0, 11);
  for (size_t i = 0; i < times.size(); ++i) BOOST_TEST(times[i] == reference.requests[i].arrival_time);
  const auto at_once = bench::arrival_times(5, std::numeric_limits<double>::infinity(), 1.0, 0);
  BOOST_TEST(at_once == std::vector<double>(5, 0.0), boost::test_tools::per_element());
  BOOST_TEST(bench::arrival_times(0, 1.0, 1.0, 0).empty());
}

BOOST_AUTO_TEST_CASE(random_dataset_lengths_and_shared_prefix) {
  bench::RandomDatasetConfig config;
  config.num_prompts = 200;
  config.input_len = 100;
  config.output_len = 20;
  config.range_ratio = 0.5;
  config.prefix_len = 16;
  const trace::Trace dataset = bench::random_dataset(config);
  BOOST_TEST_REQUIRE(dataset.requests.size() == 200u);
  int32_t min_prompt = std::numeric_limits<int32_t>::max(), max_prompt = 0;
  for (const auto& request : dataset.requests) {
    min_prompt = std::min(min_prompt, request.prompt_len);
    max_prompt = std::max(max_prompt, request.prompt_len);
    BOOST_TEST(request.output_len >= 10);
    BOOST_TEST(request.output_len <= 30);
    BOOST_TEST(request.arrival_time == 0.0);  // rate infinite by default
  }
  BOOST_TEST(min_prompt >= 16 + 50);
  BOOST_TEST(max_prompt <= 16 + 150);
  BOOST_TEST(max_prompt - min_prompt > 50);  // the range is used, not one length
  bench::BenchRequestConfig bench;
  const auto requests = bench::build_bench_requests(dataset, bench, "random");
  const auto a = prompt_ids(requests.requests[0]);
  const auto b = prompt_ids(requests.requests[1]);
  BOOST_TEST(std::equal(a.begin(), a.begin() + 16, b.begin()));  // the shared prefix
  BOOST_TEST(!std::equal(a.begin() + 16, a.begin() + 32, b.begin() + 16));
  config.range_ratio = 1.0;
  BOOST_CHECK_THROW(bench::random_dataset(config), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
