#include <boost/test/unit_test.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "core/trace/trace_stats.h"
#include "core/trace/trace_synth.h"

namespace trace = pagedllm::trace;
namespace tt = boost::test_tools;

namespace {

trace::TraceRequest request(double time, trace::PromptKind kind, int32_t prompt_len, int32_t output_len,
                            std::vector<uint64_t> ids, std::string session) {
  trace::TraceRequest result;
  result.arrival_time = time;
  result.prompt_kind = kind;
  result.prompt_len = prompt_len;
  result.output_len = output_len;
  result.prefix_block_ids = std::move(ids);
  result.session_id = std::move(session);
  return result;
}

// Five requests; every number in the tests below is worked out by hand from them.
//   arrivals 0 1 3 4 6: gaps 1 2 1 2 (mean 1.5, population std 0.5)
//   known prompt lengths 10 4 30 20 (r2 is text of unknown length); outputs 5 1 10 4 100
//   prefix ids [0 1] [0 2] [0 1 3]: 7 blocks, 4 distinct, 3 seen before
trace::Trace hand_made() {
  trace::Trace result;
  using trace::PromptKind;
  result.requests.push_back(request(0.0, PromptKind::length, 10, 5, {0, 1}, "a"));
  result.requests.push_back(request(1.0, PromptKind::tokens, 0, 1, {0, 2}, ""));
  result.requests.back().prompt_tokens = {11, 12, 13, 14};
  result.requests.back().sampling.emplace();
  result.requests.back().sampling->n = 2;
  result.requests.push_back(request(3.0, PromptKind::text, 0, 10, {}, "a"));
  result.requests.back().prompt_text = "hello";
  result.requests.back().sampling.emplace();
  result.requests.back().sampling->beam_width = 2;
  result.requests.push_back(request(4.0, PromptKind::length, 30, 4, {0, 1, 3}, "b"));
  result.requests.push_back(request(6.0, PromptKind::text, 20, 100, {}, ""));
  result.requests.back().prompt_text = "a text someone measured";
  return result;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(trace_stats)

BOOST_AUTO_TEST_CASE(hand_made_trace_arrivals_and_counts) {
  const trace::TraceStats stats = trace::compute_trace_stats(hand_made());
  BOOST_TEST(stats.num_requests == 5);
  BOOST_TEST(stats.num_sessions == 2);
  BOOST_TEST(stats.duration == 6.0);
  BOOST_TEST(stats.mean_rate == 4.0 / 6.0, tt::tolerance(1e-12));
  BOOST_TEST(stats.interarrival_cv == 0.5 / 1.5, tt::tolerance(1e-12));
  BOOST_TEST(stats.num_parallel_sampling == 1);
  BOOST_TEST(stats.num_beam_search == 1);
  BOOST_TEST(stats.num_text_prompts == 2);
  BOOST_TEST(stats.num_token_prompts == 1);
  BOOST_TEST(stats.num_length_prompts == 2);
  BOOST_TEST(stats.num_prefix_blocks == 7);
  BOOST_TEST(stats.num_distinct_prefix_blocks == 4);
  BOOST_TEST(stats.prefix_reuse_fraction == 3.0 / 7.0, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(hand_made_trace_length_summaries) {
  const trace::TraceStats stats = trace::compute_trace_stats(hand_made());
  // Prompts, sorted: 4 10 20 30 (the text prompt of unknown length left out).
  BOOST_TEST(stats.num_unknown_prompt_len == 1);
  BOOST_TEST(stats.total_prompt_tokens == 64);
  BOOST_TEST(stats.prompt_len.count == 4);
  BOOST_TEST(stats.prompt_len.min == 4.0);
  BOOST_TEST(stats.prompt_len.mean == 16.0);
  BOOST_TEST(stats.prompt_len.p50 == 15.0);                        // index 1.5
  BOOST_TEST(stats.prompt_len.p90 == 27.0, tt::tolerance(1e-12));  // index 2.7: 20 + 0.7 * 10
  BOOST_TEST(stats.prompt_len.p99 == 29.7, tt::tolerance(1e-12));  // index 2.97
  BOOST_TEST(stats.prompt_len.max == 30.0);
  // Outputs, sorted: 1 4 5 10 100.
  BOOST_TEST(stats.total_output_tokens == 120);
  BOOST_TEST(stats.output_len.count == 5);
  BOOST_TEST(stats.output_len.min == 1.0);
  BOOST_TEST(stats.output_len.mean == 24.0);
  BOOST_TEST(stats.output_len.p50 == 5.0);
  BOOST_TEST(stats.output_len.p90 == 64.0, tt::tolerance(1e-12));  // index 3.6: 10 + 0.6 * 90
  BOOST_TEST(stats.output_len.p99 == 96.4, tt::tolerance(1e-12));  // index 3.96
  BOOST_TEST(stats.output_len.max == 100.0);
}

BOOST_AUTO_TEST_CASE(empty_and_single_request_traces) {
  const trace::TraceStats empty = trace::compute_trace_stats(trace::Trace{});
  BOOST_TEST(empty.num_requests == 0);
  BOOST_TEST(empty.prompt_len.count == 0);
  BOOST_TEST(empty.prefix_reuse_fraction == 0.0);
  trace::Trace one;
  one.requests.push_back(request(2.0, trace::PromptKind::length, 8, 3, {5}, ""));
  const trace::TraceStats single = trace::compute_trace_stats(one);
  BOOST_TEST(single.duration == 0.0);
  BOOST_TEST(single.mean_rate == 0.0);
  BOOST_TEST(single.interarrival_cv == 0.0);
  BOOST_TEST(single.prompt_len.p99 == 8.0);
}

BOOST_AUTO_TEST_CASE(stats_of_the_hand_checked_session_trace) {
  // The synthesizer's block-by-block example: ids 0 1 2 3 | 0 1 2 4 5 6 7 | 0 1 8 9 | 0 1 8 10 11 12 13.
  trace::SynthConfig config;
  config.request_rate = 0.0;
  config.system_prompt_len = 8;
  config.prompt_len = {trace::LengthKind::fixed, 6, 1, 100, 0.0, 0.0};
  config.output_len = {trace::LengthKind::fixed, 5, 1, 100, 0.0, 0.0};
  config.sessions = {2, 2, 2, 0.0};
  config.prefix_block_tokens = 4;
  const trace::TraceStats stats = trace::compute_trace_stats(trace::synthesize_trace(config));
  BOOST_TEST(stats.num_sessions == 2);
  BOOST_TEST(stats.num_prefix_blocks == 22);
  BOOST_TEST(stats.num_distinct_prefix_blocks == 14);
  BOOST_TEST(stats.prefix_reuse_fraction == 8.0 / 22.0, tt::tolerance(1e-12));
  BOOST_TEST(stats.total_prompt_tokens == 78);  // 14 + 25 + 14 + 25
  BOOST_TEST(stats.num_length_prompts == 4);
}

BOOST_AUTO_TEST_CASE(json_carries_every_statistic) {
  const nlohmann::json json = trace::to_json(trace::compute_trace_stats(hand_made()));
  BOOST_TEST(json.at("num_requests") == 5);
  BOOST_TEST(json.at("num_sessions") == 2);
  BOOST_TEST(json.at("duration").get<double>() == 6.0);
  BOOST_TEST(json.at("prompt_len").at("p50").get<double>() == 15.0);
  BOOST_TEST(json.at("output_len").at("max").get<double>() == 100.0);
  BOOST_TEST(json.at("total_output_tokens") == 120);
  BOOST_TEST(json.at("num_prefix_blocks") == 7);
  BOOST_TEST(json.at("num_distinct_prefix_blocks") == 4);
  BOOST_TEST(json.at("prompt_kinds").at("text") == 2);
  BOOST_TEST(json.at("num_beam_search") == 1);
  BOOST_TEST(json.at("num_unknown_prompt_len") == 1);
}

BOOST_AUTO_TEST_CASE(printout_is_aligned_and_readable) {
  std::ostringstream out;
  out.precision(9);
  trace::print_trace_stats(trace::compute_trace_stats(hand_made()), out);
  const std::string text = out.str();
  const auto has = [&text](const std::string& line) {
    BOOST_TEST(text.find(line + "\n") != std::string::npos, "missing line: '" << line << "'\n" << text);
  };
  has("Requests:                           5");
  has("Sessions:                           2");
  has("Duration (s):                       6.00");
  has("Mean rate (req/s):                  0.67");
  has("Prompts (text / tokens / length):   2 / 1 / 2");
  has("Prompts of unknown length:          1");
  has("Prefix blocks (distinct):           7 (4)");
  has("Prefix blocks seen before:          42.86 %");
  has("Length             min        mean         p50         p90         p99         max");
  has("prompt            4.00       16.00       15.00       27.00       29.70       30.00");
  has("output            1.00       24.00        5.00       64.00       96.40      100.00");
  BOOST_TEST(out.precision() == 9);  // the stream's format is restored
}

BOOST_AUTO_TEST_SUITE_END()
