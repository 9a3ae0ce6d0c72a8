// sampling::Sampler: greedy, seeded streams, temperature / min_p / top_k / top_p, penalties, beam
// candidates and raw logprobs, checked against double-precision references.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/common/mix.h"
#include "core/sampling/sampler.h"

namespace sampling = pagedllm::sampling;
namespace sched = pagedllm::sched;
using pagedllm::TokenId;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

sampling::SamplerInput input_for(const std::vector<float>& logits, const sched::SamplingParams& params,
                                 uint64_t seed = 7, int32_t position = 0) {
  sampling::SamplerInput input;
  input.logits = logits;
  input.params = &params;
  input.seed = seed;
  input.position = position;
  return input;
}

sched::SamplingParams greedy_params() {
  sched::SamplingParams params;
  params.temperature = 0.0f;
  return params;
}

// log_softmax in double.
std::vector<double> reference_logprobs(const std::vector<float>& logits) {
  double max = -std::numeric_limits<double>::infinity();
  for (const float x : logits) max = std::max(max, static_cast<double>(x));
  double sum = 0.0;
  for (const float x : logits) sum += std::exp(static_cast<double>(x) - max);
  std::vector<double> out;
  for (const float x : logits) out.push_back(static_cast<double>(x) - max - std::log(sum));
  return out;
}

// Token ids by logit descending, ties by lower id.
std::vector<TokenId> ranked_ids(const std::vector<float>& values) {
  std::vector<TokenId> ids(values.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](TokenId a, TokenId b) {
    return values[static_cast<size_t>(a)] > values[static_cast<size_t>(b)];
  });
  return ids;
}

// Deterministic pseudo-random logits: mean 0, spread about `scale`.
std::vector<float> random_logits(size_t vocab, uint64_t seed, float scale) {
  std::vector<float> logits(vocab);
  for (size_t i = 0; i < vocab; ++i) {
    const uint64_t h = pagedllm::mix64(seed * 0x9e3779b97f4a7c15ULL + i + 1);
    const double u1 = (static_cast<double>(h >> 40) + 0.5) / 16777216.0;
    const double u2 = static_cast<double>((h >> 16) & 0xffffff) / 16777216.0;
    logits[i] = static_cast<float>(scale * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
  return logits;
}

TokenId sample_one(sampling::Sampler& sampler, const sampling::SamplerInput& input) {
  const sampling::SamplerOutput output = sampler.sample(input);
  BOOST_REQUIRE_EQUAL(output.samples.size(), 1u);
  return output.samples.front().token;
}

// Draws `num_draws` tokens (positions 0..num_draws-1 of one stream) and counts them.
std::vector<int> histogram(const std::vector<float>& logits, const sched::SamplingParams& params, int num_draws,
                           uint64_t seed = 12345) {
  sampling::Sampler sampler;
  std::vector<int> counts(logits.size(), 0);
  for (int position = 0; position < num_draws; ++position) {
    ++counts[static_cast<size_t>(sample_one(sampler, input_for(logits, params, seed, position)))];
  }
  return counts;
}

// Every count within 4 standard deviations of num_draws * p (binomial).
void expect_frequencies(const std::vector<int>& counts, const std::vector<double>& probs, int num_draws) {
  BOOST_REQUIRE_EQUAL(counts.size(), probs.size());
  for (size_t i = 0; i < probs.size(); ++i) {
    const double expected = num_draws * probs[i];
    const double sigma = std::sqrt(num_draws * probs[i] * (1.0 - probs[i]));
    BOOST_TEST_CONTEXT("token " << i << ": " << counts[i] << " draws, expected " << expected) {
      if (probs[i] == 0.0) {
        BOOST_TEST(counts[i] == 0);
      } else {
        BOOST_TEST(std::abs(counts[i] - expected) <= 4.0 * sigma);
      }
    }
  }
}

std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  std::vector<double> probs;
  double max = -std::numeric_limits<double>::infinity();
  for (const float x : logits) max = std::max(max, x / temperature);
  double sum = 0.0;
  for (const float x : logits) sum += std::exp(x / temperature - max);
  for (const float x : logits) probs.push_back(std::exp(x / temperature - max) / sum);
  return probs;
}

// logits with softmax exactly proportional to `probs`.
std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (const double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

// The draw in double precision, as the header defines it: weights exp(x / T - max / T), min_p,
// top_k, top_p over the rank order (weight descending, ties by lower id), inverse CDF.
TokenId reference_draw(const std::vector<float>& logits, const sched::SamplingParams& params, double u) {
  const double t = params.temperature;
  double max = -std::numeric_limits<double>::infinity();
  for (const float x : logits) max = std::max(max, x / t);
  std::vector<double> weights;
  for (const float x : logits) weights.push_back(std::exp(x / t - max));
  std::vector<TokenId> ranked(logits.size());
  std::iota(ranked.begin(), ranked.end(), 0);
  std::stable_sort(ranked.begin(), ranked.end(), [&](TokenId a, TokenId b) {
    return weights[static_cast<size_t>(a)] > weights[static_cast<size_t>(b)];
  });
  std::vector<TokenId> kept;
  for (const TokenId token : ranked) {
    if (weights[static_cast<size_t>(token)] >= params.min_p) kept.push_back(token);
  }
  const auto top_k = static_cast<size_t>(params.top_k);
  if (params.top_k > 0 && top_k < kept.size()) kept.resize(top_k);
  double total = 0.0;
  for (const TokenId token : kept) total += weights[static_cast<size_t>(token)];
  if (params.top_p < 1.0f) {
    double before = 0.0;
    size_t cut = 0;
    while (cut < kept.size() && (cut == 0 || before < params.top_p * total)) {
      before += weights[static_cast<size_t>(kept[cut++])];
    }
    kept.resize(cut);
    total = before;
  }
  double cum = 0.0;
  for (const TokenId token : kept) {
    cum += weights[static_cast<size_t>(token)];
    if (cum > u * total) return token;
  }
  return kept.back();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sampler)

BOOST_AUTO_TEST_CASE(greedy_picks_the_argmax_and_breaks_ties_to_the_lowest_id) {
  sampling::Sampler sampler;
  const std::vector<float> logits{1.0f, 3.0f, 2.0f, 3.0f, -kInf};
  for (const float temperature : {0.0f, 1e-6f, 9.9e-6f}) {
    sched::SamplingParams params = greedy_params();
    params.temperature = temperature;
    for (int32_t position = 0; position < 20; ++position) {
      const sampling::SamplerOutput output = sampler.sample(input_for(logits, params, 99, position));
      BOOST_REQUIRE_EQUAL(output.samples.size(), 1u);
      BOOST_TEST(output.samples[0].token == 1);
      BOOST_TEST(std::abs(output.samples[0].logprob - reference_logprobs(logits)[1]) <= 1e-6);
      BOOST_TEST(output.top_logprobs.empty());
    }
  }
  // Greedy with n samples: the same token n times.
  sched::SamplingParams params = greedy_params();
  sampling::SamplerInput input = input_for(logits, params);
  input.num_samples = 3;
  const sampling::SamplerOutput output = sampler.sample(input);
  BOOST_REQUIRE_EQUAL(output.samples.size(), 3u);
  for (const sched::SampledToken& sampled : output.samples) BOOST_TEST(sampled.token == 1);
}

BOOST_AUTO_TEST_CASE(draws_depend_only_on_seed_stream_and_position) {
  // The uniform numbers: pure, in [0, 1), distinct across seeds, streams and positions.
  std::set<double> values;
  for (uint64_t seed : {0ULL, 1ULL, 0xdeadbeefULL}) {
    for (int32_t stream = 0; stream < 8; ++stream) {
      for (int32_t position = 0; position < 256; ++position) {
        const double u = sampling::uniform_draw(seed, stream, position);
        BOOST_TEST(u == sampling::uniform_draw(seed, stream, position));
        BOOST_TEST((u >= 0.0 && u < 1.0));
        values.insert(u);
      }
    }
  }
  BOOST_TEST(values.size() == 3u * 8u * 256u);

  // Tokens: a flat-ish distribution over 1000 tokens, so distinct draws rarely coincide.
  const std::vector<float> logits = random_logits(1000, 3, 0.5f);
  sched::SamplingParams params;
  params.temperature = 1.0f;
  sampling::Sampler sampler;
  sampling::Sampler other;
  const std::vector<float> unrelated = random_logits(333, 4, 2.0f);
  int same_across_streams = 0;
  int same_across_positions = 0;
  for (int32_t position = 0; position < 200; ++position) {
    sampling::SamplerInput input = input_for(logits, params, 42, position);
    const TokenId token = sample_one(sampler, input);
    // Reproducible: a fresh sampler, and a sampler that served other requests in between.
    BOOST_TEST(sample_one(other, input) == token);
    sampler.sample(input_for(unrelated, params, 5, position));
    BOOST_TEST(sample_one(sampler, input) == token);
    input.first_stream_index = 1;
    same_across_streams += sample_one(sampler, input) == token ? 1 : 0;
    input.first_stream_index = 0;
    input.position = position + 1000;
    same_across_positions += sample_one(sampler, input) == token ? 1 : 0;
  }
  BOOST_TEST(same_across_streams <= 10);
  BOOST_TEST(same_across_positions <= 10);

  // Unseeded requests get a seed from their id; seeded ones use theirs.
  sched::SamplingParams seeded;
  seeded.seed = 1234;
  BOOST_TEST(sampling::stream_seed(seeded, 1) == 1234u);
  BOOST_TEST(sampling::stream_seed(params, 1) == sampling::stream_seed(params, 1));
  BOOST_TEST(sampling::stream_seed(params, 1) != sampling::stream_seed(params, 2));
}

BOOST_AUTO_TEST_CASE(temperature_sampling_frequencies_match_the_softmax) {
  const std::vector<float> logits{0.0f, 1.0f, 2.0f, -1.0f};
  constexpr int kDraws = 20000;
  for (const float temperature : {1.0f, 0.5f, 2.0f}) {
    BOOST_TEST_CONTEXT("temperature " << temperature) {
      sched::SamplingParams params;
      params.temperature = temperature;
      expect_frequencies(histogram(logits, params, kDraws), softmax(logits, temperature), kDraws);
    }
  }
}

BOOST_AUTO_TEST_CASE(draws_follow_the_inverse_cdf_in_rank_order) {
  // Spread-out distributions, so draws walk deep into the rank order (the lazily sorted chunks
  // and the tail below the head band); every filter combination against the double reference.
  sampling::Sampler sampler;
  struct Setting {
    float temperature;
    int32_t top_k;
    float top_p;
    float min_p;
  };
  const std::vector<Setting> settings{{1.0f, 0, 1.0f, 0.0f},   {3.0f, 0, 1.0f, 0.0f},  {1.5f, 300, 1.0f, 0.0f},
                                      {1.0f, 40, 1.0f, 0.0f},  {2.0f, 0, 0.9f, 0.0f},  {1.0f, 500, 0.7f, 0.0f},
                                      {0.7f, 20, 0.8f, 0.05f}, {2.0f, 0, 1.0f, 0.001f}};
  int num_draws = 0;
  for (const Setting& setting : settings) {
    sched::SamplingParams params;
    params.temperature = setting.temperature;
    params.top_k = setting.top_k;
    params.top_p = setting.top_p;
    params.min_p = setting.min_p;
    for (const uint64_t logits_seed : {1ULL, 2ULL, 3ULL}) {
      std::vector<float> logits = random_logits(3000, logits_seed, 2.0f);
      if (logits_seed == 3) {
        // One token far above a flat rest: the rest (weights below 1/1024 of the top) holds
        // about a third of the mass, so draws reach the candidates ranked last.
        logits = random_logits(3000, logits_seed, 0.5f);
        logits[17] = *std::max_element(logits.begin(), logits.end()) + 9.0f;
      }
      for (int32_t position = 0; position < 150; ++position) {
        const double u = sampling::uniform_draw(77, 0, position);
        BOOST_TEST_CONTEXT("temperature " << setting.temperature << " top_k " << setting.top_k << " top_p "
                                          << setting.top_p << " min_p " << setting.min_p << " u " << u) {
          BOOST_TEST(sample_one(sampler, input_for(logits, params, 77, position)) == reference_draw(logits, params, u));
        }
        ++num_draws;
      }
    }
  }
  BOOST_TEST(num_draws == 8 * 3 * 150);
}

BOOST_AUTO_TEST_CASE(top_k_of_one_equals_greedy) {
  sampling::Sampler sampler;
  sched::SamplingParams top1;
  top1.temperature = 1.3f;
  top1.top_k = 1;
  const sched::SamplingParams greedy = greedy_params();
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> logits = random_logits(2000, seed, 1.0f);
    if (seed % 2 == 0) logits[1500] = logits[300] = 4.5f;  // a tie for the max: the lower id wins
    for (int32_t position = 0; position < 5; ++position) {
      BOOST_TEST(sample_one(sampler, input_for(logits, top1, seed, position)) ==
                 sample_one(sampler, input_for(logits, greedy, seed, position)));
    }
    if (seed % 2 == 0) BOOST_TEST(sample_one(sampler, input_for(logits, top1, seed)) == 300);
  }
}

BOOST_AUTO_TEST_CASE(top_k_keeps_the_k_most_likely_with_renormalized_mass) {
  const std::vector<double> probs{0.1, 0.4, 0.05, 0.3, 0.15};
  sched::SamplingParams params;
  params.top_k = 3;  // tokens 1, 3, 4
  constexpr int kDraws = 20000;
  expect_frequencies(histogram(logits_of(probs), params, kDraws), {0.0, 0.4 / 0.85, 0.0, 0.3 / 0.85, 0.15 / 0.85},
                     kDraws);
}

BOOST_AUTO_TEST_CASE(tiny_top_p_keeps_only_the_most_likely) {
  sampling::Sampler sampler;
  sched::SamplingParams params;
  params.top_p = 1e-6f;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const std::vector<float> logits = random_logits(5000, seed, 0.3f);  // nearly flat
    const TokenId best = ranked_ids(logits).front();
    for (int32_t position = 0; position < 20; ++position) {
      BOOST_TEST(sample_one(sampler, input_for(logits, params, seed, position)) == best);
    }
  }
  // top_p = 0.7 over {0.5, 0.3, 0.15, 0.05}: the first two (0.5 before the second is < 0.7, 0.8
  // before the third is not), renormalized.
  params.top_p = 0.7f;
  constexpr int kDraws = 20000;
  const std::vector<float> logits = logits_of({0.15, 0.5, 0.05, 0.3});
  expect_frequencies(histogram(logits, params, kDraws), {0.0, 0.625, 0.0, 0.375}, kDraws);
  params.top_p = 0.85f;
  expect_frequencies(histogram(logits, params, kDraws), {0.15 / 0.95, 0.5 / 0.95, 0.0, 0.3 / 0.95}, kDraws);
  // Exact arithmetic at the boundary: four equal tokens, top_p = 0.5. The third token has exactly
  // half the mass before it, which is not less than top_p: the first two stay (ties by lower id).
  params.top_p = 0.5f;
  expect_frequencies(histogram({0.0f, 0.0f, 0.0f, 0.0f}, params, kDraws), {0.5, 0.5, 0.0, 0.0}, kDraws);
}

BOOST_AUTO_TEST_CASE(min_p_drops_tokens_below_a_fraction_of_the_top_probability) {
  const std::vector<float> logits = logits_of({0.15, 0.5, 0.05, 0.3});
  constexpr int kDraws = 20000;
  sched::SamplingParams params;
  params.min_p = 0.2f;  // below 0.1: token 2 goes
  expect_frequencies(histogram(logits, params, kDraws), {0.15 / 0.95, 0.5 / 0.95, 0.0, 0.3 / 0.95}, kDraws);
  params.min_p = 0.5f;  // below 0.25: tokens 0 and 2 go
  expect_frequencies(histogram(logits, params, kDraws), {0.0, 0.625, 0.0, 0.375}, kDraws);
  params.min_p = 1.0f;  // only the top
  expect_frequencies(histogram(logits, params, 500), {0.0, 1.0, 0.0, 0.0}, 500);
}

BOOST_AUTO_TEST_CASE(repetition_penalty_divides_positive_and_multiplies_negative_logits_of_seen_tokens) {
  sampling::Sampler sampler;
  sched::SamplingParams params = greedy_params();
  params.repetition_penalty = 2.0f;
  {
    // Positive: 2.0 / 2 = 1.0 < 1.9, whether the token was in the prompt or the output.
    const std::vector<float> logits{2.0f, 1.9f, -1.0f};
    const std::vector<TokenId> seen{0};
    sampling::SamplerInput input = input_for(logits, params);
    BOOST_TEST(sample_one(sampler, input) == 0);
    input.prompt_tokens = seen;
    sampling::SamplerOutput output = sampler.sample(input);
    BOOST_TEST(output.samples[0].token == 1);
    BOOST_TEST(std::abs(output.samples[0].logprob - reference_logprobs(logits)[1]) <= 1e-6);  // raw
    input.prompt_tokens = {};
    input.output_tokens = seen;
    BOOST_TEST(sample_one(sampler, input) == 1);
  }
  {
    // Negative: -1.0 * 2 = -2.0 < -1.5.
    const std::vector<float> logits{-1.0f, -1.5f};
    const std::vector<TokenId> seen{0};
    sampling::SamplerInput input = input_for(logits, params);
    BOOST_TEST(sample_one(sampler, input) == 0);
    input.output_tokens = seen;
    BOOST_TEST(sample_one(sampler, input) == 1);
  }
  {
    // Once per distinct token: 2.0 / 1.5 = 1.33 > 1.1 however often token 0 was seen.
    params.repetition_penalty = 1.5f;
    const std::vector<float> logits{2.0f, 1.1f};
    const std::vector<TokenId> prompt{0, 0, 0};
    const std::vector<TokenId> output{0, 0};
    sampling::SamplerInput input = input_for(logits, params);
    input.prompt_tokens = prompt;
    input.output_tokens = output;
    BOOST_TEST(sample_one(sampler, input) == 0);
  }
  {
    // A penalty below 1 favours seen tokens: 1.0 / 0.5 = 2.0 > 1.9.
    params.repetition_penalty = 0.5f;
    const std::vector<float> logits{1.9f, 1.0f};
    const std::vector<TokenId> prompt{1};
    sampling::SamplerInput input = input_for(logits, params);
    input.prompt_tokens = prompt;
    BOOST_TEST(sample_one(sampler, input) == 1);
  }
  {
    // Sampling sees the penalized distribution: token 0 (logit ln 0.9) penalized by 100 has
    // probability ~0; the logprob reported for token 1 stays the raw one.
    sched::SamplingParams random;
    random.repetition_penalty = 100.0f;
    const std::vector<float> logits = logits_of({0.9, 0.1});
    const std::vector<TokenId> prompt{0};
    for (int32_t position = 0; position < 200; ++position) {
      sampling::SamplerInput input = input_for(logits, random, 3, position);
      input.prompt_tokens = prompt;
      const sampling::SamplerOutput output = sampler.sample(input);
      BOOST_TEST(output.samples[0].token == 1);
      BOOST_TEST(std::abs(output.samples[0].logprob - reference_logprobs(logits)[1]) <= 1e-6);
    }
  }
}

BOOST_AUTO_TEST_CASE(frequency_and_presence_penalties_subtract_per_output_count) {
  sampling::Sampler sampler;
  const std::vector<float> logits{3.0f, 2.5f, 2.0f};
  const std::vector<TokenId> output{0, 0, 0, 1};
  const auto greedy_with = [&](float frequency, float presence, std::span<const TokenId> prompt) {
    sched::SamplingParams params = greedy_params();
    params.frequency_penalty = frequency;
    params.presence_penalty = presence;
    sampling::SamplerInput input = input_for(logits, params);
    input.prompt_tokens = prompt;
    input.output_tokens = output;
    const sampling::SamplerOutput result = sampler.sample(input);
    BOOST_TEST(std::abs(result.samples[0].logprob -
                        reference_logprobs(logits)[static_cast<size_t>(result.samples[0].token)]) <= 1e-6);
    return result.samples[0].token;
  };
  // Frequency: 3.0 - 0.3 * 3 = 2.1 < 2.5 - 0.3 * 1 = 2.2 (a single count would leave 2.7).
  BOOST_TEST(greedy_with(0.3f, 0.0f, {}) == 1);
  BOOST_TEST(greedy_with(0.1f, 0.0f, {}) == 0);  // 2.7 > 2.4
  // Frequency and presence: 2.1 - 0.25 = 1.85, 2.2 - 0.25 = 1.95 < 2.0 (token 2 unseen).
  BOOST_TEST(greedy_with(0.3f, 0.25f, {}) == 2);
  // Presence alone is per distinct token: 3.0 - 0.6 = 2.4 > 1.9, 2.0.
  BOOST_TEST(greedy_with(0.0f, 0.6f, {}) == 0);
  BOOST_TEST(greedy_with(0.0f, 1.1f, {}) == 2);  // 1.9, 1.4, 2.0
  // Negative penalties reward repetition: 3.0 + 3 * 1.0 = 6.0 > 2.5 + 1.0.
  BOOST_TEST(greedy_with(-1.0f, 0.0f, {}) == 0);
  // The prompt does not count: token 2 in the prompt keeps its logit.
  const std::vector<TokenId> prompt{2, 2, 2};
  BOOST_TEST(greedy_with(0.3f, 0.25f, prompt) == 2);
  // Without output tokens nothing changes.
  sched::SamplingParams params = greedy_params();
  params.frequency_penalty = 2.0f;
  params.presence_penalty = 2.0f;
  sampling::SamplerInput input = input_for(logits, params);
  input.prompt_tokens = prompt;
  BOOST_TEST(sample_one(sampler, input) == 0);
}

BOOST_AUTO_TEST_CASE(min_tokens_gives_stop_tokens_no_mass_until_reached) {
  sampling::Sampler sampler;
  const std::vector<float> logits{1.0f, 4.0f, 3.5f, 0.5f};  // token 1 (a stop token) leads
  sched::SamplingParams params = greedy_params();
  params.min_tokens = 3;
  params.all_stop_token_ids = {1, 7};  // 7 lies outside this vocabulary: ignored
  // Outputs 0..2 (positions 0, 1, 2) cannot be the stop token; from the fourth on it may be.
  for (int32_t position = 0; position < 5; ++position) {
    const TokenId expected = position < 3 ? 2 : 1;
    BOOST_TEST(sample_one(sampler, input_for(logits, params, 7, position)) == expected, "position " << position);
  }
  // Random draws never pick it either (it would take ~55% of the mass), and the others keep
  // their relative odds: token 2 over token 0 by e^2.5.
  sched::SamplingParams random = params;
  random.temperature = 1.0f;
  random.all_stop_token_ids = {1};
  std::vector<int> counts(logits.size(), 0);
  constexpr int kDraws = 4000;
  for (int draw = 0; draw < kDraws; ++draw) {
    ++counts[static_cast<size_t>(sample_one(sampler, input_for(logits, random, 1000 + draw, 2)))];
  }
  BOOST_TEST(counts[1] == 0);
  const std::vector<double> rest = softmax({1.0f, -kInf, 3.5f, 0.5f}, 1.0);
  expect_frequencies(counts, rest, kDraws);
  // Without stop ids (ignore_eos and none given) nothing is held back.
  params.all_stop_token_ids.clear();
  BOOST_TEST(sample_one(sampler, input_for(logits, params, 7, 0)) == 1);
}

BOOST_AUTO_TEST_CASE(logit_bias_is_added_before_the_penalties_and_logprobs_stay_raw) {
  sampling::Sampler sampler;
  const std::vector<float> logits{1.0f, 2.0f, 0.5f, 4.0f};
  const std::vector<double> reference = reference_logprobs(logits);
  sched::SamplingParams params = greedy_params();
  params.logit_bias = {{3, -100.0f}, {2, 3.0f}};  // 4 - 100 vs 0.5 + 3: token 2 leads
  const sampling::SamplerOutput output = sampler.sample(input_for(logits, params));
  BOOST_REQUIRE_EQUAL(output.samples.size(), 1u);
  BOOST_TEST(output.samples[0].token == 2);
  BOOST_TEST(std::abs(output.samples[0].logprob - reference[2]) <= 1e-6);
  // Bias, then repetition penalty (vLLM's order): token 2 seen, (0.5 + 3) / 4 = 0.875 < 2, so
  // token 1 wins; the other order, 0.5 / 4 + 3 = 3.125, would keep token 2.
  params.repetition_penalty = 4.0f;
  sampling::SamplerInput input = input_for(logits, params);
  const std::vector<TokenId> seen{2};
  input.output_tokens = seen;
  BOOST_TEST(sample_one(sampler, input) == 1);
  // Random draws follow the biased distribution: token 3 (bias -100) never comes.
  sched::SamplingParams random;
  random.logit_bias = {{3, -100.0f}, {0, 1.0f}};
  std::vector<int> counts(logits.size(), 0);
  constexpr int kDraws = 4000;
  for (int draw = 0; draw < kDraws; ++draw) {
    ++counts[static_cast<size_t>(sample_one(sampler, input_for(logits, random, 77 + draw, 0)))];
  }
  expect_frequencies(counts, softmax({2.0f, 2.0f, 0.5f, -96.0f}, 1.0), kDraws);
}

BOOST_AUTO_TEST_CASE(bad_words_ban_their_last_token_after_their_prefix) {
  sampling::Sampler sampler;
  const std::vector<float> logits{1.0f, 4.0f, 3.5f, 0.5f, 3.0f};  // by logit: 1, 2, 4, 0, 3
  sched::SamplingParams params = greedy_params();
  params.bad_words_token_ids = {{1}, {3, 2}, {0, 2}, {0, 0, 4}};
  const auto sample_after = [&](std::vector<TokenId> output) {
    sampling::SamplerInput input = input_for(logits, params);
    input.output_tokens = output;
    return sample_one(sampler, input);
  };
  // A one-token word is banned everywhere; a longer one only right after its other tokens.
  BOOST_TEST(sample_after({}) == 2);
  BOOST_TEST(sample_after({3}) == 4);     // "3 2" would complete
  BOOST_TEST(sample_after({3, 1}) == 2);  // its prefix is not at the end
  BOOST_TEST(sample_after({1, 0}) == 4);  // "0 2" would complete; "0 0 4" needs two 0s
  BOOST_TEST(sample_after({0, 0}) == 0);  // both would: 1, 2 and 4 banned
  BOOST_TEST(sample_after({0}) == 4);     // a prefix longer than the output cannot match
  params.bad_words_token_ids = {{5}};
  BOOST_CHECK_THROW(sample_after({}), std::invalid_argument);  // outside the vocabulary
}

BOOST_AUTO_TEST_CASE(allowed_token_ids_keep_every_other_token_out) {
  sampling::Sampler sampler;
  const std::vector<float> logits = random_logits(300, 5, 1.0f);
  sched::SamplingParams params;
  params.allowed_token_ids = {17, 4, 250};
  std::vector<float> kept(logits.size(), -kInf);
  for (const TokenId token : params.allowed_token_ids)
    kept[static_cast<size_t>(token)] = logits[static_cast<size_t>(token)];
  std::vector<int> counts(logits.size(), 0);
  constexpr int kDraws = 3000;
  for (int draw = 0; draw < kDraws; ++draw) {
    ++counts[static_cast<size_t>(sample_one(sampler, input_for(logits, params, 9 + draw, 0)))];
  }
  expect_frequencies(counts, softmax(kept, 1.0), kDraws);
  int32_t outside = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (kept[i] == -kInf) outside += counts[i];
  }
  BOOST_TEST(outside == 0);
  // Greedy takes the best allowed token, not the argmax.
  params.temperature = 0.0f;
  const TokenId best = *std::max_element(
      params.allowed_token_ids.begin(), params.allowed_token_ids.end(),
      [&](TokenId a, TokenId b) { return kept[static_cast<size_t>(a)] < kept[static_cast<size_t>(b)]; });
  BOOST_TEST(sample_one(sampler, input_for(logits, params)) == best);
  // The sampler's scratch stays clean: without the list every token may come again.
  sched::SamplingParams open = params;
  open.allowed_token_ids.clear();
  BOOST_TEST(sample_one(sampler, input_for(logits, open)) == ranked_ids(logits)[0]);
}

BOOST_AUTO_TEST_CASE(a_structured_output_mask_comes_first_and_its_logprobs_are_of_the_masked_distribution) {
  sampling::Sampler sampler;
  const std::vector<float> logits = random_logits(100, 11, 2.0f);
  std::vector<uint32_t> mask((logits.size() + 31) / 32, 0u);
  std::vector<float> kept(logits.size(), -kInf);
  for (const TokenId token : {3, 40, 41, 64, 99}) {
    mask[static_cast<size_t>(token) / 32] |= 1u << (token % 32);
    kept[static_cast<size_t>(token)] = logits[static_cast<size_t>(token)];
  }
  const std::vector<double> masked_logprobs = reference_logprobs(kept);
  sched::SamplingParams params;
  params.logprobs = 2;
  std::vector<int> counts(logits.size(), 0);
  constexpr int kDraws = 3000;
  for (int draw = 0; draw < kDraws; ++draw) {
    sampling::SamplerInput input = input_for(logits, params, 5 + draw, 0);
    input.allowed_tokens = mask;
    const sampling::SamplerOutput output = sampler.sample(input);
    const sched::SampledToken sampled = output.samples.front();
    ++counts[static_cast<size_t>(sampled.token)];
    BOOST_TEST(sampled.logprob == masked_logprobs[static_cast<size_t>(sampled.token)],
               boost::test_tools::tolerance(1e-5));
    for (const sched::SampledToken& top : output.top_logprobs.front()) {
      BOOST_TEST(kept[static_cast<size_t>(top.token)] != -kInf);  // the top lists are masked too
    }
  }
  expect_frequencies(counts, softmax(kept, 1.0), kDraws);
  // Beam candidates: the allowed tokens only, fewer than asked when fewer are allowed.
  sampling::SamplerInput beams = input_for(logits, params);
  beams.allowed_tokens = mask;
  beams.num_beam_candidates = 8;
  const sampling::SamplerOutput candidates = sampler.sample(beams);
  BOOST_TEST(candidates.samples.size() == 5u);
  for (const sched::SampledToken& candidate : candidates.samples) {
    BOOST_TEST(kept[static_cast<size_t>(candidate.token)] != -kInf);
  }
  // min_tokens holding back the only allowed token: the constraint wins, greedily.
  sched::SamplingParams held = greedy_params();
  held.min_tokens = 4;
  held.all_stop_token_ids = {40};
  std::vector<uint32_t> only_stop(mask.size(), 0u);
  only_stop[1] = 1u << (40 % 32);
  sampling::SamplerInput stop_only = input_for(logits, held, 7, 1);
  stop_only.allowed_tokens = only_stop;
  BOOST_TEST(sample_one(sampler, stop_only) == 40);
  held.temperature = 1.0f;
  BOOST_TEST(sample_one(sampler, stop_only) == 40);
  // Beam candidates too: the only allowed token is offered, or every beam would die.
  stop_only.num_beam_candidates = 4;
  const sampling::SamplerOutput held_beams = sampler.sample(stop_only);
  BOOST_REQUIRE_EQUAL(held_beams.samples.size(), 1u);
  BOOST_TEST(held_beams.samples.front().token == 40);
  // A mask of the wrong size, or one that allows nothing, is refused.
  sampling::SamplerInput wrong = input_for(logits, params);
  const std::vector<uint32_t> short_mask(1, ~0u);
  wrong.allowed_tokens = short_mask;
  BOOST_CHECK_THROW(sampler.sample(wrong), std::invalid_argument);
  const std::vector<uint32_t> empty_mask(mask.size(), 0u);
  wrong.allowed_tokens = empty_mask;
  BOOST_CHECK_THROW(sampler.sample(wrong), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(beam_candidates_are_the_top_tokens_by_raw_logprob) {
  sampling::Sampler sampler;
  std::vector<float> logits = random_logits(500, 11, 2.0f);
  const float best = *std::max_element(logits.begin(), logits.end()) + 1.0f;
  logits[30] = logits[20] = logits[10] = best;  // ties rank by lower id
  logits[40] = -kInf;
  const std::vector<double> reference = reference_logprobs(logits);
  const std::vector<TokenId> ranked = ranked_ids(logits);
  sched::SamplingParams params;  // temperature, penalties and filters do not apply to beams
  params.temperature = 0.3f;
  params.top_k = 2;
  params.repetition_penalty = 3.0f;
  params.logprobs = 3;
  const std::vector<TokenId> seen{10, 20};
  for (const int32_t num_candidates : {1, 6, 100}) {
    for (const uint64_t seed : {1ULL, 2ULL}) {
      sampling::SamplerInput input = input_for(logits, params, seed, static_cast<int32_t>(seed));
      input.num_beam_candidates = num_candidates;
      input.prompt_tokens = seen;
      const sampling::SamplerOutput output = sampler.sample(input);
      BOOST_REQUIRE_EQUAL(output.samples.size(), static_cast<size_t>(num_candidates));
      for (size_t i = 0; i < output.samples.size(); ++i) {
        BOOST_TEST(output.samples[i].token == ranked[i]);
        BOOST_TEST(std::abs(output.samples[i].logprob - reference[static_cast<size_t>(ranked[i])]) <= 1e-6);
      }
      BOOST_REQUIRE_EQUAL(output.top_logprobs.size(), static_cast<size_t>(num_candidates));
      for (const auto& top : output.top_logprobs) {
        BOOST_REQUIRE_EQUAL(top.size(), 3u);
        for (size_t i = 0; i < 3; ++i) BOOST_TEST(top[i].token == ranked[i]);
      }
    }
  }
  BOOST_TEST(ranked[0] == 10);
  BOOST_TEST(ranked[1] == 20);
  BOOST_TEST(ranked[2] == 30);
}

BOOST_AUTO_TEST_CASE(beam_candidates_leave_out_stop_tokens_below_min_tokens_and_tokens_without_mass) {
  sampling::Sampler sampler;
  const std::vector<float> logits{1.0f, 4.0f, 3.5f, 0.5f, -kInf};  // token 1, a stop token, leads
  const std::vector<double> reference = reference_logprobs(logits);
  sched::SamplingParams params;
  params.min_tokens = 2;
  params.all_stop_token_ids = {1};
  params.logprobs = 2;
  for (int32_t position = 0; position < 3; ++position) {
    BOOST_TEST_CONTEXT("position " << position) {
      sampling::SamplerInput input = input_for(logits, params, 5, position);
      input.num_beam_candidates = 5;
      const sampling::SamplerOutput output = sampler.sample(input);
      // Token 4 has no mass: never a candidate. Token 1 only once min_tokens are out.
      const std::vector<TokenId> expected =
          position < 2 ? std::vector<TokenId>{2, 0, 3} : std::vector<TokenId>{1, 2, 0, 3};
      BOOST_REQUIRE_EQUAL(output.samples.size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        BOOST_TEST(output.samples[i].token == expected[i]);
        // Logprobs stay raw: the mask changes which tokens are offered, not what they report.
        BOOST_TEST(std::abs(output.samples[i].logprob - reference[static_cast<size_t>(expected[i])]) <= 1e-6);
      }
      // The top lists describe the position's raw distribution, the stop token included.
      BOOST_REQUIRE_EQUAL(output.top_logprobs.size(), expected.size());
      for (const auto& top : output.top_logprobs) {
        BOOST_REQUIRE_EQUAL(top.size(), 2u);
        BOOST_TEST(top[0].token == 1);
        BOOST_TEST(top[1].token == 2);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(logprob_lists_match_a_double_precision_log_softmax) {
  sampling::Sampler sampler;
  struct Case {
    size_t vocab;
    float scale;
    int32_t num_logprobs;
  };
  for (const Case& c : {Case{64, 0.7f, 5}, Case{64, 0.7f, 64}, Case{1000, 1.5f, 20}, Case{49152, 3.0f, 20}}) {
    BOOST_TEST_CONTEXT("vocab " << c.vocab << " logprobs " << c.num_logprobs) {
      std::vector<float> logits = random_logits(c.vocab, c.vocab, c.scale);
      const float best = *std::max_element(logits.begin(), logits.end()) + 0.5f;
      logits[5] = logits[9] = logits[2] = best;  // a tie at the top
      const std::vector<double> reference = reference_logprobs(logits);
      const std::vector<TokenId> ranked = ranked_ids(logits);
      sched::SamplingParams params;
      params.logprobs = c.num_logprobs;
      params.temperature = 0.8f;
      params.top_p = 0.9f;
      params.frequency_penalty = 0.5f;  // processing never shows in the logprobs
      const std::vector<TokenId> output_tokens{5, 5, 9};
      sampling::SamplerInput input = input_for(logits, params, 3, 4);
      input.output_tokens = output_tokens;
      input.num_samples = 2;
      const sampling::SamplerOutput output = sampler.sample(input);
      BOOST_REQUIRE_EQUAL(output.top_logprobs.size(), 2u);
      // Rounded fp32 results: 1e-6 absolute where the logprobs are small, relative beyond.
      const auto tolerance = [](double value) { return 1e-6 * std::max(1.0, std::abs(value) / 8.0); };
      for (size_t s = 0; s < 2; ++s) {
        const sched::SampledToken& sampled = output.samples[s];
        BOOST_TEST(std::abs(sampled.logprob - reference[static_cast<size_t>(sampled.token)]) <=
                   tolerance(reference[static_cast<size_t>(sampled.token)]));
        const std::vector<sched::SampledToken>& top = output.top_logprobs[s];
        BOOST_REQUIRE_EQUAL(top.size(), static_cast<size_t>(c.num_logprobs));
        for (size_t i = 0; i < top.size(); ++i) {
          BOOST_TEST(top[i].token == ranked[i]);
          const double expected = reference[static_cast<size_t>(ranked[i])];
          BOOST_TEST(std::abs(top[i].logprob - expected) <= tolerance(expected));
          if (i > 0) BOOST_TEST(top[i - 1].logprob >= top[i].logprob);
        }
      }
      BOOST_TEST(ranked[0] == 2);
      BOOST_TEST(ranked[1] == 5);
      BOOST_TEST(ranked[2] == 9);
    }
  }
  // logprobs = 0: the sampled token's logprob only; an empty list per sample.
  sched::SamplingParams params;
  params.logprobs = 0;
  const std::vector<float> logits{0.5f, 0.25f};
  const sampling::SamplerOutput output = sampler.sample(input_for(logits, params));
  BOOST_REQUIRE_EQUAL(output.top_logprobs.size(), 1u);
  BOOST_TEST(output.top_logprobs[0].empty());
  // Small logits: 1e-6 absolute everywhere.
  const std::vector<float> small = random_logits(200, 8, 1.0f);
  const std::vector<double> reference = reference_logprobs(small);
  params.logprobs = 20;
  const sampling::SamplerOutput small_output = sampler.sample(input_for(small, params));
  for (const sched::SampledToken& entry : small_output.top_logprobs[0]) {
    BOOST_TEST(std::abs(entry.logprob - reference[static_cast<size_t>(entry.token)]) <= 1e-6);
  }
}

BOOST_AUTO_TEST_CASE(parallel_samples_come_from_consecutive_streams) {
  sampling::Sampler sampler;
  const std::vector<float> logits = random_logits(3000, 21, 1.0f);
  sched::SamplingParams params;
  params.top_k = 200;
  params.top_p = 0.95f;
  params.logprobs = 2;
  std::set<TokenId> distinct;
  for (int32_t position = 0; position < 30; ++position) {
    sampling::SamplerInput input = input_for(logits, params, 555, position);
    input.num_samples = 3;
    const sampling::SamplerOutput output = sampler.sample(input);
    BOOST_REQUIRE_EQUAL(output.samples.size(), 3u);
    BOOST_REQUIRE_EQUAL(output.top_logprobs.size(), 3u);
    for (int32_t j = 0; j < 3; ++j) {
      sampling::SamplerInput single = input_for(logits, params, 555, position);
      single.first_stream_index = j;
      const sampling::SamplerOutput alone = sampler.sample(single);
      BOOST_TEST(output.samples[static_cast<size_t>(j)].token == alone.samples[0].token);
      BOOST_TEST(output.samples[static_cast<size_t>(j)].logprob == alone.samples[0].logprob);
      distinct.insert(output.samples[static_cast<size_t>(j)].token);
    }
  }
  BOOST_TEST(distinct.size() > 20u);
}

BOOST_AUTO_TEST_CASE(malformed_input_is_refused) {
  sampling::Sampler sampler;
  const sched::SamplingParams params;
  const std::vector<float> logits{0.0f, 1.0f};
  const auto refused = [&](const sampling::SamplerInput& input) {
    BOOST_CHECK_THROW(sampler.sample(input), std::invalid_argument);
  };
  sampling::SamplerInput input = input_for(logits, params);
  input.params = nullptr;
  refused(input);
  refused(input_for({}, params));
  refused(input_for({0.0f, std::numeric_limits<float>::quiet_NaN()}, params));
  refused(input_for({0.0f, kInf}, params));
  refused(input_for({-kInf, -kInf}, params));
  input = input_for(logits, params);
  input.num_samples = 0;
  refused(input);
  input = input_for(logits, params);
  input.num_beam_candidates = 3;
  refused(input);
  sched::SamplingParams penalized;
  penalized.presence_penalty = 1.0f;
  const std::vector<TokenId> bad{2};
  input = input_for(logits, penalized);
  input.output_tokens = bad;
  refused(input);
  // A refused call leaves the sampler usable, its penalty buffers clean.
  input.output_tokens = {};
  BOOST_TEST(sample_one(sampler, input) == sample_one(sampler, input_for(logits, params)));
  sched::SamplingParams biased;
  biased.logit_bias = {{0, 1.0f}, {2, 1.0f}};
  refused(input_for(logits, biased));
  sched::SamplingParams allowed;
  allowed.allowed_token_ids = {1, 5};
  refused(input_for(logits, allowed));
  allowed.allowed_token_ids = {0};
  BOOST_TEST(sample_one(sampler, input_for(logits, allowed)) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
