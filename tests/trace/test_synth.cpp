#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/trace/trace_random.h"
#include "core/trace/trace_stats.h"
#include "core/trace/trace_synth.h"

namespace trace = pagedllm::trace;
namespace tt = boost::test_tools;
using Ids = std::vector<uint64_t>;

namespace {

// Mean and population standard deviation.
struct Moments {
  double mean = 0.0;
  double stddev = 0.0;
};

Moments moments(const std::vector<double>& values) {
  Moments result;
  for (const double value : values) result.mean += value;
  result.mean /= static_cast<double>(values.size());
  for (const double value : values) result.stddev += (value - result.mean) * (value - result.mean);
  result.stddev = std::sqrt(result.stddev / static_cast<double>(values.size()));
  return result;
}

std::vector<double> draws(int count, const std::function<double()>& draw) {
  std::vector<double> values;
  for (int i = 0; i < count; ++i) values.push_back(draw());
  return values;
}

trace::SynthConfig lone_requests(int32_t num_requests, double rate, double burstiness) {
  trace::SynthConfig config;
  config.seed = 7;
  config.num_requests = num_requests;
  config.request_rate = rate;
  config.burstiness = burstiness;
  return config;
}

// Everything the synthesizer sets, with times compared to the bit.
bool same_request(const trace::TraceRequest& a, const trace::TraceRequest& b) {
  if (a.arrival_time != b.arrival_time || a.prompt_kind != b.prompt_kind || a.prompt_len != b.prompt_len ||
      a.output_len != b.output_len || a.prefix_block_ids != b.prefix_block_ids || a.session_id != b.session_id ||
      a.sampling.has_value() != b.sampling.has_value()) {
    return false;
  }
  if (!a.sampling) return true;
  return a.sampling->n == b.sampling->n && a.sampling->beam_width == b.sampling->beam_width &&
         a.sampling->temperature == b.sampling->temperature && a.sampling->seed == b.sampling->seed &&
         a.sampling->max_tokens == b.sampling->max_tokens;
}

trace::SynthConfig everything_on(uint64_t seed) {
  trace::SynthConfig config;
  config.seed = seed;
  config.request_rate = 4.0;
  config.burstiness = 0.5;
  config.system_prompt_len = 100;
  config.prompt_len = {trace::LengthKind::lognormal, 0, 10, 4000, 5.0, 1.0};
  config.output_len = {trace::LengthKind::uniform, 0, 1, 300, 0.0, 0.0};
  config.mix = {0.2, 3, 0.1, 2};
  config.sessions = {20, 1, 5, 10.0};
  config.prefix_block_tokens = 16;
  return config;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(trace_random)

BOOST_AUTO_TEST_CASE(the_generator_is_splitmix64) {
  // SplitMix64's published first outputs from state 0.
  trace::TraceRandom random(0);
  BOOST_TEST(random.next_u64() == 0xe220a8397b1dcdafULL);
  BOOST_TEST(random.next_u64() == 0x6e789e6aa1b965f4ULL);
  BOOST_TEST(random.next_u64() == 0x06c45d188009454fULL);
}

BOOST_AUTO_TEST_CASE(portable_log_and_exp_agree_with_the_library_to_a_few_ulps) {
  double worst_log = 0.0;
  double worst_exp = 0.0;
  for (double x = 1e-300; x < 1e300; x *= 1.0137) {
    worst_log = std::max(worst_log, std::fabs(trace::portable_log(x) - std::log(x)) / std::fabs(std::log(x)));
  }
  for (double x = 0.5; x < 2.0; x += 0.000731) {
    if (x == 1.0) continue;
    worst_log = std::max(worst_log, std::fabs(trace::portable_log(x) - std::log(x)) / std::fabs(std::log(x)));
  }
  for (double x = -700.0; x < 700.0; x += 0.0137) {
    worst_exp = std::max(worst_exp, std::fabs(trace::portable_exp(x) - std::exp(x)) / std::exp(x));
  }
  BOOST_TEST(worst_log < 1e-15);
  BOOST_TEST(worst_exp < 1e-15);
  BOOST_TEST(trace::portable_log(1.0) == 0.0);
  BOOST_TEST(trace::portable_exp(0.0) == 1.0);
  BOOST_TEST(std::isinf(trace::portable_exp(710.0)));
  BOOST_TEST(trace::portable_exp(-800.0) == 0.0);
  BOOST_TEST(trace::portable_log(0.0) == -std::numeric_limits<double>::infinity());
  BOOST_TEST(std::isnan(trace::portable_log(-1.0)));
}

BOOST_AUTO_TEST_CASE(uniform_integers_cover_the_range_evenly) {
  trace::TraceRandom random(3);
  std::vector<int> counts(5, 0);
  for (int i = 0; i < 50000; ++i) ++counts[static_cast<size_t>(random.uniform_int(10, 14) - 10)];
  for (const int count : counts) BOOST_TEST(std::abs(count - 10000) < 400);
  for (int i = 0; i < 1000; ++i) {
    const double u = random.uniform();
    BOOST_TEST((u >= 0.0 && u < 1.0));
  }
}

BOOST_AUTO_TEST_CASE(distributions_have_their_theoretical_moments) {
  trace::TraceRandom random(11);
  constexpr int kDraws = 100000;
  const Moments normal = moments(draws(kDraws, [&] { return random.normal(); }));
  BOOST_TEST(std::fabs(normal.mean) < 0.02);
  BOOST_TEST(normal.stddev == 1.0, tt::tolerance(0.02));
  const Moments exponential = moments(draws(kDraws, [&] { return random.exponential(3.0); }));
  BOOST_TEST(exponential.mean == 3.0, tt::tolerance(0.02));
  BOOST_TEST(exponential.stddev == 3.0, tt::tolerance(0.02));
  // Gamma(k, theta): mean k theta, std sqrt(k) theta; both branches (k < 1 uses the boost).
  for (const double shape : {0.3, 1.0, 4.5}) {
    const Moments gamma = moments(draws(kDraws, [&] { return random.gamma(shape, 2.0); }));
    BOOST_TEST(gamma.mean == shape * 2.0, tt::tolerance(0.02));
    BOOST_TEST(gamma.stddev == std::sqrt(shape) * 2.0, tt::tolerance(0.03));
  }
  std::vector<double> logs = draws(kDraws, [&] { return std::log(random.lognormal(1.5, 0.5)); });
  const Moments lognormal = moments(logs);
  BOOST_TEST(lognormal.mean == 1.5, tt::tolerance(0.01));
  BOOST_TEST(lognormal.stddev == 0.5, tt::tolerance(0.02));
}

BOOST_AUTO_TEST_CASE(streams_of_different_purposes_differ) {
  trace::TraceRandom a = trace::TraceRandom::stream(1, 1);
  trace::TraceRandom b = trace::TraceRandom::stream(1, 2);
  trace::TraceRandom c = trace::TraceRandom::stream(2, 1);
  const uint64_t first = a.next_u64();
  BOOST_TEST(first != b.next_u64());
  BOOST_TEST(first != c.next_u64());
  BOOST_TEST(first == trace::TraceRandom::stream(1, 1).next_u64());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(trace_synth)

BOOST_AUTO_TEST_CASE(same_seed_gives_the_same_trace_bit_for_bit) {
  const trace::Trace a = trace::synthesize_trace(everything_on(5));
  const trace::Trace b = trace::synthesize_trace(everything_on(5));
  BOOST_TEST(a.requests.size() == b.requests.size());
  BOOST_TEST(a.requests.size() >= 20U);
  for (size_t i = 0; i < a.requests.size(); ++i)
    BOOST_TEST(same_request(a.requests[i], b.requests[i]), "request " << i);
  BOOST_TEST(a.header.source == "synth");
  BOOST_TEST(a.header.prefix_block_tokens == 16);
  BOOST_TEST(a.header.command.empty());

  const trace::Trace c = trace::synthesize_trace(everything_on(6));
  size_t num_same = 0;
  for (size_t i = 0; i < std::min(a.requests.size(), c.requests.size()); ++i) {
    num_same += a.requests[i].arrival_time == c.requests[i].arrival_time ? 1 : 0;
  }
  BOOST_TEST(num_same <= 1U);  // the first arrival is at 0 in both
}

BOOST_AUTO_TEST_CASE(arrivals_are_pinned_to_the_bit) {
  // A regression pin for "same numbers on every platform": these values come from integer
  // arithmetic and correctly rounded double operations only.
  const trace::Trace trace = trace::synthesize_trace(lone_requests(4, 2.0, 0.5));
  BOOST_TEST(trace.requests[0].arrival_time == 0.0);
  BOOST_TEST(trace.requests[1].arrival_time == 0x1.e8d5e542b4ad9p-4);
  BOOST_TEST(trace.requests[2].arrival_time == 0x1.3763fd2413c2fp-3);
  BOOST_TEST(trace.requests[3].arrival_time == 0x1.3d252fd084fp-3);
}

BOOST_AUTO_TEST_CASE(changing_lengths_leaves_arrivals_unchanged) {
  trace::SynthConfig config = lone_requests(50, 3.0, 1.0);
  const trace::Trace a = trace::synthesize_trace(config);
  config.output_len = {trace::LengthKind::uniform, 0, 1, 1000, 0.0, 0.0};
  const trace::Trace b = trace::synthesize_trace(config);
  for (size_t i = 0; i < a.requests.size(); ++i) BOOST_TEST(a.requests[i].arrival_time == b.requests[i].arrival_time);
}

BOOST_AUTO_TEST_CASE(poisson_arrivals_have_the_asked_rate) {
  // 20,000 exponential gaps: the rate estimate's relative standard error is 1 / sqrt(20000) = 0.7%.
  const trace::Trace trace = trace::synthesize_trace(lone_requests(20001, 25.0, 1.0));
  BOOST_TEST(trace.requests.front().arrival_time == 0.0);  // vLLM sends the first at once
  const trace::TraceStats stats = trace::compute_trace_stats(trace);
  BOOST_TEST(stats.mean_rate == 25.0, tt::tolerance(0.03));
  BOOST_TEST(stats.interarrival_cv == 1.0, tt::tolerance(0.03));
}

BOOST_AUTO_TEST_CASE(burstiness_sets_the_coefficient_of_variation_to_one_over_sqrt_shape) {
  for (const double shape : {0.25, 0.5, 2.0, 4.0}) {
    const trace::TraceStats stats =
        trace::compute_trace_stats(trace::synthesize_trace(lone_requests(20001, 10.0, shape)));
    BOOST_TEST(stats.interarrival_cv == 1.0 / std::sqrt(shape), tt::tolerance(0.06));
    BOOST_TEST(stats.mean_rate == 10.0, tt::tolerance(0.04));  // the mean gap stays 1 / rate
  }
}

BOOST_AUTO_TEST_CASE(rate_zero_or_infinite_puts_every_arrival_at_time_zero) {
  for (const double rate : {0.0, std::numeric_limits<double>::infinity()}) {
    const trace::Trace trace = trace::synthesize_trace(lone_requests(10, rate, 1.0));
    BOOST_TEST(trace.requests.size() == 10U);
    for (const trace::TraceRequest& request : trace.requests) BOOST_TEST(request.arrival_time == 0.0);
  }
}

BOOST_AUTO_TEST_CASE(lone_requests_have_length_prompts_and_no_session) {
  trace::SynthConfig config = lone_requests(3, 1.0, 1.0);
  config.prompt_len = {trace::LengthKind::fixed, 40, 1, 100, 0.0, 0.0};
  config.output_len = {trace::LengthKind::fixed, 7, 1, 100, 0.0, 0.0};
  config.system_prompt_len = 20;
  config.prefix_block_tokens = 16;
  const trace::Trace trace = trace::synthesize_trace(config);
  // 60 tokens: block 0 lies in the system prompt (shared), blocks 1..3 are each request's own.
  BOOST_TEST(trace.requests[0].prefix_block_ids == Ids({0, 1, 2, 3}), tt::per_element());
  BOOST_TEST(trace.requests[1].prefix_block_ids == Ids({0, 4, 5, 6}), tt::per_element());
  BOOST_TEST(trace.requests[2].prefix_block_ids == Ids({0, 7, 8, 9}), tt::per_element());
  for (const trace::TraceRequest& request : trace.requests) {
    BOOST_TEST((request.prompt_kind == trace::PromptKind::length));
    BOOST_TEST(request.prompt_len == 60);
    BOOST_TEST(request.output_len == 7);
    BOOST_TEST(request.session_id.empty());
    BOOST_TEST(!request.sampling.has_value());
    BOOST_TEST(request.source_line == 0);
  }
}

BOOST_AUTO_TEST_CASE(fit_lognormal_recovers_mu_and_sigma) {
  // By hand: ln 1 = 0, ln 100, ln 10000 = 2 ln 100: mu = ln 100, sigma = ln 100 * sqrt(2/3).
  const std::vector<int32_t> hand = {1, 100, 10000};
  const trace::LengthDistribution exact = trace::fit_lognormal(hand, 1, 20000);
  BOOST_TEST((exact.kind == trace::LengthKind::lognormal));
  BOOST_TEST(exact.mu == std::log(100.0), tt::tolerance(1e-12));
  BOOST_TEST(exact.sigma == std::log(100.0) * std::sqrt(2.0 / 3.0), tt::tolerance(1e-12));
  BOOST_TEST(exact.min == 1);
  BOOST_TEST(exact.max == 20000);

  // Synthesize 20,000 lengths from a known lognormal and fit them back.
  trace::SynthConfig config = lone_requests(20000, 0.0, 1.0);
  config.prompt_len = {trace::LengthKind::lognormal, 0, 1, 1000000, 6.0, 0.8};
  const trace::Trace trace = trace::synthesize_trace(config);
  std::vector<int32_t> lengths;
  for (const trace::TraceRequest& request : trace.requests) lengths.push_back(request.prompt_len);
  const trace::LengthDistribution fitted = trace::fit_lognormal(lengths, 1, 1000000);
  BOOST_TEST(fitted.mu == 6.0, tt::tolerance(0.005));
  BOOST_TEST(fitted.sigma == 0.8, tt::tolerance(0.02));

  BOOST_CHECK_THROW(trace::fit_lognormal({}, 1, 10), std::invalid_argument);
  const std::vector<int32_t> zero = {3, 0};
  BOOST_CHECK_THROW(trace::fit_lognormal(zero, 1, 10), std::invalid_argument);
  BOOST_CHECK_THROW(trace::fit_lognormal(hand, 0, 10), std::invalid_argument);
  BOOST_CHECK_THROW(trace::fit_lognormal(hand, 10, 9), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(lengths_are_clipped_to_min_and_max) {
  trace::SynthConfig config = lone_requests(5000, 0.0, 1.0);
  config.prompt_len = {trace::LengthKind::lognormal, 0, 50, 2000, std::log(300.0), 2.0};
  config.output_len = {trace::LengthKind::uniform, 0, 3, 5, 0.0, 0.0};
  const trace::Trace trace = trace::synthesize_trace(config);
  std::set<int32_t> outputs;
  int32_t shortest = std::numeric_limits<int32_t>::max();
  int32_t longest = 0;
  for (const trace::TraceRequest& request : trace.requests) {
    shortest = std::min(shortest, request.prompt_len);
    longest = std::max(longest, request.prompt_len);
    outputs.insert(request.output_len);
  }
  BOOST_TEST(shortest == 50);  // sigma 2: many draws fall below 50 and above 2000
  BOOST_TEST(longest == 2000);
  BOOST_TEST(outputs == std::set<int32_t>({3, 4, 5}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(session_prefix_ids_block_by_block) {
  // B = 4, an 8-token system prompt, user messages of 6 tokens, outputs of 5, two sessions of two
  // turns, everything at time 0 (ties keep generation order: s0 turn 1, s0 turn 2, s1 ...).
  trace::SynthConfig config;
  config.request_rate = 0.0;
  config.system_prompt_len = 8;
  config.prompt_len = {trace::LengthKind::fixed, 6, 1, 100, 0.0, 0.0};
  config.output_len = {trace::LengthKind::fixed, 5, 1, 100, 0.0, 0.0};
  config.sessions = {2, 2, 2, 0.0};
  config.prefix_block_tokens = 4;
  const trace::Trace trace = trace::synthesize_trace(config);
  BOOST_TEST(trace.requests.size() == 4U);
  // Turn 1: 8 + 6 = 14 tokens, 4 blocks: [0,4) and [4,8) system (ids 0, 1), [8,12) new (2),
  // [12,14) partial, new (3).
  // Turn 2: 14 + 5 + 6 = 25 tokens, 7 blocks: system 0, 1; [8,12) lies in turn 1's prompt (2);
  // [12,16) held turn 1's partial block, now full with other content: new (4); [16,20), [20,24)
  // and the partial [24,25) are new (5, 6, 7).
  const trace::TraceRequest& s0_turn1 = trace.requests[0];
  const trace::TraceRequest& s0_turn2 = trace.requests[1];
  BOOST_TEST(s0_turn1.session_id == "s0");
  BOOST_TEST(s0_turn1.prompt_len == 14);
  BOOST_TEST(s0_turn1.prefix_block_ids == Ids({0, 1, 2, 3}), tt::per_element());
  BOOST_TEST(s0_turn2.session_id == "s0");
  BOOST_TEST(s0_turn2.prompt_len == 25);
  BOOST_TEST(s0_turn2.prefix_block_ids == Ids({0, 1, 2, 4, 5, 6, 7}), tt::per_element());
  // The second session shares only the system prompt's blocks.
  BOOST_TEST(trace.requests[2].session_id == "s1");
  BOOST_TEST(trace.requests[2].prefix_block_ids == Ids({0, 1, 8, 9}), tt::per_element());
  BOOST_TEST(trace.requests[3].prefix_block_ids == Ids({0, 1, 8, 10, 11, 12, 13}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(sessions_interleave_by_time_and_keep_turn_prefixes) {
  trace::SynthConfig config = everything_on(9);
  config.sessions = {30, 2, 6, 5.0};
  const trace::Trace trace = trace::synthesize_trace(config);
  const int32_t block = trace.header.prefix_block_tokens;
  BOOST_TEST(std::is_sorted(trace.requests.begin(), trace.requests.end(),
                            [](const auto& a, const auto& b) { return a.arrival_time < b.arrival_time; }));
  // Ids are numbered by first appearance: each id is at most one above the largest so far.
  int64_t largest = -1;
  for (const trace::TraceRequest& request : trace.requests) {
    for (const uint64_t id : request.prefix_block_ids) {
      BOOST_TEST(static_cast<int64_t>(id) <= largest + 1);
      largest = std::max(largest, static_cast<int64_t>(id));
    }
  }
  // Within a session each turn extends the previous turn's context and shares its full blocks.
  std::set<std::string> sessions;
  for (size_t i = 0; i < trace.requests.size(); ++i) {
    const trace::TraceRequest& request = trace.requests[i];
    const size_t num_blocks = static_cast<size_t>((request.prompt_len + block - 1) / block);
    BOOST_TEST(request.prefix_block_ids.size() == num_blocks);
    if (!sessions.insert(request.session_id).second) continue;  // find this session's next turn
    const trace::TraceRequest* previous = &request;
    for (size_t j = i + 1; j < trace.requests.size(); ++j) {
      const trace::TraceRequest& next = trace.requests[j];
      if (next.session_id != request.session_id) continue;
      BOOST_TEST(next.prompt_len > previous->prompt_len + previous->output_len);
      BOOST_TEST(next.arrival_time >= previous->arrival_time);
      const size_t shared = static_cast<size_t>(previous->prompt_len / block);
      for (size_t k = 0; k < shared; ++k) BOOST_TEST(next.prefix_block_ids[k] == previous->prefix_block_ids[k]);
      BOOST_TEST(next.prefix_block_ids[shared] != previous->prefix_block_ids.back());
      previous = &next;
    }
  }
  BOOST_TEST(sessions.size() == 30U);
  // The system prompt (100 tokens = 6 full blocks of 16) opens every request.
  for (const trace::TraceRequest& request : trace.requests) {
    BOOST_TEST(Ids(request.prefix_block_ids.begin(), request.prefix_block_ids.begin() + 6) == Ids({0, 1, 2, 3, 4, 5}),
               tt::per_element());
  }
}

BOOST_AUTO_TEST_CASE(request_mix_assigns_parallel_sampling_and_beam_search) {
  trace::SynthConfig config = lone_requests(10000, 0.0, 1.0);
  config.mix = {0.3, 4, 0.2, 3};
  const trace::Trace trace = trace::synthesize_trace(config);
  int num_parallel = 0;
  int num_beam = 0;
  std::set<uint64_t> seeds;
  for (const trace::TraceRequest& request : trace.requests) {
    if (!request.sampling) continue;
    BOOST_TEST(request.sampling->max_tokens == request.output_len);
    if (request.sampling->use_beam_search()) {
      ++num_beam;
      BOOST_TEST(request.sampling->beam_width == 3);
      BOOST_TEST(request.sampling->n == 1);
    } else {
      ++num_parallel;
      BOOST_TEST(request.sampling->n == 4);
      BOOST_TEST(request.sampling->temperature == 1.0f);
      BOOST_TEST(request.sampling->seed.has_value());
      seeds.insert(*request.sampling->seed);
    }
  }
  // Binomial(10000, p): standard deviations 46 and 40.
  BOOST_TEST(std::abs(num_parallel - 3000) < 200);
  BOOST_TEST(std::abs(num_beam - 2000) < 200);
  BOOST_TEST(seeds.size() == static_cast<size_t>(num_parallel));
}

BOOST_AUTO_TEST_CASE(config_errors_name_the_field) {
  using Mutation = std::function<void(trace::SynthConfig&)>;
  const std::vector<std::pair<std::string, Mutation>> cases = {
      {"num_requests", [](auto& c) { c.num_requests = 0; }},
      {"num_requests", [](auto& c) { c.sessions.num_sessions = 2; }},
      {"sessions.num_sessions", [](auto& c) { c.sessions.num_sessions = -1; }},
      {"request_rate", [](auto& c) { c.request_rate = -1.0; }},
      {"request_rate", [](auto& c) { c.request_rate = std::nan(""); }},
      {"burstiness", [](auto& c) { c.burstiness = 0.0; }},
      {"system_prompt_len", [](auto& c) { c.system_prompt_len = -1; }},
      {"prompt_len.min", [](auto& c) { c.prompt_len.min = 0; }},
      {"output_len.max", [](auto& c) { c.output_len.max = 0; }},
      {"prompt_len.value",
       [](auto& c) {
         c.prompt_len.value = 200;
         c.prompt_len.max = 100;
       }},
      {"output_len.sigma",
       [](auto& c) {
         c.output_len.kind = trace::LengthKind::lognormal;
         c.output_len.sigma = -1;
       }},
      {"prompt_len.mu",
       [](auto& c) {
         c.prompt_len.kind = trace::LengthKind::lognormal;
         c.prompt_len.mu = INFINITY;
       }},
      {"mix.parallel_fraction", [](auto& c) { c.mix.parallel_fraction = 1.5; }},
      {"mix.beam_fraction",
       [](auto& c) {
         c.mix.parallel_fraction = 0.5;
         c.mix.beam_fraction = 0.6;
       }},
      {"mix.parallel_n", [](auto& c) { c.mix.parallel_n = 1; }},
      {"mix.beam_width", [](auto& c) { c.mix.beam_width = 0; }},
      {"sessions.min_turns", [](auto& c) { c.sessions.min_turns = 0; }},
      {"sessions.max_turns",
       [](auto& c) {
         c.sessions.min_turns = 3;
         c.sessions.max_turns = 2;
       }},
      {"sessions.mean_think_time", [](auto& c) { c.sessions.mean_think_time = -1.0; }},
      {"prefix_block_tokens", [](auto& c) { c.prefix_block_tokens = 0; }},
  };
  BOOST_CHECK_NO_THROW(trace::validate(lone_requests(10, 1.0, 1.0)));
  for (const auto& [field, mutate] : cases) {
    trace::SynthConfig config = lone_requests(10, 1.0, 1.0);
    mutate(config);
    try {
      trace::synthesize_trace(config);
      BOOST_ERROR("no error for " << field);
    } catch (const trace::SynthConfigError& error) {
      BOOST_TEST(error.field() == field);
      BOOST_TEST(std::string(error.what()).find(field) != std::string::npos, error.what());
    }
  }
  // A SynthConfigError is a std::invalid_argument.
  BOOST_CHECK_THROW(trace::synthesize_trace(trace::SynthConfig{}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(length_kinds_have_names) {
  for (const auto kind : {trace::LengthKind::fixed, trace::LengthKind::uniform, trace::LengthKind::lognormal}) {
    BOOST_TEST((trace::parse_length_kind(trace::to_string(kind)) == kind));
  }
  BOOST_CHECK_THROW(trace::parse_length_kind("zipf"), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
