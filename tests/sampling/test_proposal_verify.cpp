// sampling::verify_proposals, the acceptance rule of speculative decoding: the tokens it returns
// follow the target model's distribution at every position (a chi-square test with a stated
// power), it accepts a proposal with the probability the target gives it, and each token equals
// what the sampler draws at that position without speculation.
#include <boost/test/unit_test.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "core/sampling/proposal_verify.h"
#include "core/sampling/sampler.h"

namespace sampling = pagedllm::sampling;
namespace sched = pagedllm::sched;
using pagedllm::TokenId;

namespace {

constexpr size_t kVocab = 8;
// Three rows: after the confirmed tokens, after proposal 1, after proposal 2.
const std::array<std::array<float, kVocab>, 3> kRows = {{{1.0f, 0.2f, 1.6f, -0.5f, 0.9f, 0.0f, -1.0f, 0.4f},
                                                         {0.3f, 1.1f, -0.2f, 0.8f, 0.1f, 1.4f, 0.0f, -0.6f},
                                                         {0.0f, 0.5f, 0.5f, 0.5f, -2.0f, 1.0f, 0.2f, 0.7f}}};
constexpr TokenId kProposal1 = 2;  // the row-0 favourite (p ~ 0.29)
constexpr TokenId kProposal2 = 5;  // row 1's favourite

std::array<double, kVocab> softmax(const std::array<float, kVocab>& logits) {
  double sum = 0.0;
  std::array<double, kVocab> p{};
  for (size_t i = 0; i < kVocab; ++i) sum += p[i] = std::exp(static_cast<double>(logits[i]));
  for (double& x : p) x /= sum;
  return p;
}

// Pearson's statistic of observed counts against expected probabilities.
double chi_square(const std::array<int64_t, kVocab>& counts, const std::array<double, kVocab>& expected) {
  int64_t total = 0;
  for (const int64_t c : counts) total += c;
  double statistic = 0.0;
  for (size_t i = 0; i < kVocab; ++i) {
    const double e = expected[i] * static_cast<double>(total);
    statistic += (static_cast<double>(counts[i]) - e) * (static_cast<double>(counts[i]) - e) / e;
  }
  return statistic;
}

// The chi-square distribution's 1 - 1e-4 quantile with 7 degrees of freedom.
constexpr double kCritical = 29.88;

// A decode of 3 prompt tokens' sequence with 2 proposals: tokens = prompt, proposal 1, proposal 2.
sched::ScheduledSequence two_proposals(std::span<const TokenId> tokens, const sched::SamplingParams& params,
                                       sched::RequestId request = 0) {
  sched::ScheduledSequence scheduled;
  scheduled.request = request;
  scheduled.tokens = tokens;
  scheduled.num_prompt_tokens = 3;
  scheduled.start = 2;
  scheduled.end = 5;
  scheduled.sample = true;
  scheduled.num_proposed_tokens = 2;
  scheduled.params = &params;
  return scheduled;
}

struct Verified {
  std::array<int64_t, kVocab> first{};   // the first returned token
  std::array<int64_t, kVocab> second{};  // the second, when proposal 1 was accepted
  int64_t accepted_1 = 0;
  int64_t accepted_both = 0;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(proposal_verify)

BOOST_AUTO_TEST_CASE(the_output_follows_the_target_distribution) {
  // 40,000 requests (each its own stream) verify the same two proposals at temperature 1.
  constexpr int64_t kTrials = 40000;
  sched::SamplingParams params;
  params.temperature = 1.0f;
  std::vector<float> logits;
  for (const auto& row : kRows) logits.insert(logits.end(), row.begin(), row.end());
  const std::vector<TokenId> tokens = {4, 6, 1, kProposal1, kProposal2};  // 3 prompt tokens, 2 proposals
  sampling::Sampler sampler;
  Verified verified;
  for (int64_t trial = 0; trial < kTrials; ++trial) {
    const sched::ScheduledSequence scheduled = two_proposals(tokens, params, static_cast<sched::RequestId>(trial));
    const sched::SequenceOutput output = sampling::verify_proposals(sampler, scheduled, logits, kVocab);
    BOOST_REQUIRE(!output.samples.empty());
    BOOST_REQUIRE(output.samples.size() <= 3u);
    ++verified.first[static_cast<size_t>(output.samples[0].token)];
    if (output.samples[0].token == kProposal1 && output.samples.size() >= 2) {
      ++verified.accepted_1;
      ++verified.second[static_cast<size_t>(output.samples[1].token)];
      if (output.samples[1].token == kProposal2) {
        BOOST_REQUIRE(output.samples.size() == 3u);
        ++verified.accepted_both;
      }
    } else {
      BOOST_REQUIRE(output.samples.size() == 1u);  // a rejection ends the walk
    }
    // Each token is the one the sampler draws at its position without speculation.
    const sampling::SamplerOutput plain = sampler.sample({.logits = std::span<const float>(logits).first(kVocab),
                                                          .params = &params,
                                                          .prompt_tokens = std::span(tokens).first(3),
                                                          .output_tokens = {},
                                                          .seed = sampling::stream_seed(params, scheduled.request),
                                                          .position = 0});
    BOOST_REQUIRE(plain.samples.front().token == output.samples[0].token);
  }
  const std::array<double, kVocab> p0 = softmax(kRows[0]);
  const std::array<double, kVocab> p1 = softmax(kRows[1]);
  // The first token ~ p0, the token after an accepted proposal ~ p1.
  const double first = chi_square(verified.first, p0);
  const double second = chi_square(verified.second, p1);
  BOOST_TEST(first < kCritical);
  BOOST_TEST(second < kCritical);
  // Power: a verifier that redraws from all of p0 after rejecting proposal 1 (forgetting to remove
  // it) returns proposal 1 with probability p + (1 - p) p. The noncentrality of the statistic
  // under that alternative, n * sum (q - p)^2 / p, is far above the ~60 at which a test at this
  // level detects it with probability > 0.999.
  std::array<double, kVocab> wrong{};
  const double p = p0[static_cast<size_t>(kProposal1)];
  for (size_t i = 0; i < kVocab; ++i) wrong[i] = (1.0 - p) * p0[i] + (i == static_cast<size_t>(kProposal1) ? p : 0.0);
  double noncentrality = 0.0;
  for (size_t i = 0; i < kVocab; ++i) noncentrality += (wrong[i] - p0[i]) * (wrong[i] - p0[i]) / p0[i];
  noncentrality *= static_cast<double>(kTrials);
  BOOST_TEST(noncentrality > 60.0);
  // Acceptance rates: p0(d1), and p0(d1) p1(d2), each within 5 standard deviations.
  const auto within = [](int64_t count, int64_t trials, double probability) {
    const double n = static_cast<double>(trials);
    return std::abs(static_cast<double>(count) - n * probability) <
           5.0 * std::sqrt(n * probability * (1 - probability));
  };
  const double p_both = p * p1[static_cast<size_t>(kProposal2)];
  BOOST_TEST(within(verified.accepted_1, kTrials, p));
  BOOST_TEST(within(verified.accepted_both, kTrials, p_both));
  BOOST_TEST_MESSAGE("chi-square " << first << " / " << second << " (critical " << kCritical << "), accepted "
                                   << verified.accepted_1 << " (expected " << p * kTrials << "), both "
                                   << verified.accepted_both << " (expected " << p_both * kTrials
                                   << "), noncentrality of the wrong verifier " << noncentrality);
}

BOOST_AUTO_TEST_CASE(greedy_accepts_while_the_argmax_agrees) {
  sched::SamplingParams params;
  params.temperature = 0.0f;
  std::vector<float> logits;
  for (const auto& row : kRows) logits.insert(logits.end(), row.begin(), row.end());
  sampling::Sampler sampler;
  const auto verify = [&](const std::vector<TokenId>& tokens) {
    const sched::ScheduledSequence scheduled = two_proposals(tokens, params);
    std::vector<TokenId> out;
    for (const sched::SampledToken& token : sampling::verify_proposals(sampler, scheduled, logits, kVocab).samples) {
      out.push_back(token.token);
    }
    return out;
  };
  // Argmaxes: row 0 -> 2, row 1 -> 5, row 2 -> 5.
  BOOST_TEST(verify({4, 6, 1, 2, 5}) == (std::vector<TokenId>{2, 5, 5}), boost::test_tools::per_element());
  BOOST_TEST(verify({4, 6, 1, 2, 3}) == (std::vector<TokenId>{2, 5}), boost::test_tools::per_element());
  BOOST_TEST(verify({4, 6, 1, 0, 5}) == (std::vector<TokenId>{2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(each_position_takes_its_own_constraint_mask) {
  // Row 0 allows {2, 7}, row 1 allows {4, 6}, row 2 everything: greedy keeps proposal 1 (2, the
  // best allowed at row 0), then row 1's best allowed token, 4, replaces proposal 2.
  sched::SamplingParams params;
  params.temperature = 0.0f;
  std::vector<float> logits;
  for (const auto& row : kRows) logits.insert(logits.end(), row.begin(), row.end());
  const std::vector<uint32_t> masks = {(1u << 2) | (1u << 7), (1u << 4) | (1u << 6), 0xffu};
  const std::vector<TokenId> tokens = {4, 6, 1, kProposal1, kProposal2};
  sched::ScheduledSequence scheduled = two_proposals(tokens, params);
  scheduled.allowed_tokens = masks;
  sampling::Sampler sampler;
  const sched::SequenceOutput output = sampling::verify_proposals(sampler, scheduled, logits, kVocab);
  BOOST_REQUIRE_EQUAL(output.samples.size(), 2u);
  BOOST_TEST(output.samples[0].token == kProposal1);
  BOOST_TEST(output.samples[1].token == 4);
  const std::vector<uint32_t> one_row = {0xffu};  // a mask for one position where three are verified
  scheduled.allowed_tokens = one_row;
  BOOST_CHECK_THROW(sampling::verify_proposals(sampler, scheduled, logits, kVocab), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(malformed_input_is_refused) {
  sched::SamplingParams params;
  const std::vector<TokenId> tokens = {4, 6, 1, 2};
  std::vector<float> logits(kVocab, 0.0f);  // one row where two are needed
  sched::ScheduledSequence scheduled;
  scheduled.tokens = tokens;
  scheduled.num_prompt_tokens = 3;
  scheduled.start = 2;
  scheduled.end = 4;
  scheduled.num_proposed_tokens = 1;
  scheduled.params = &params;
  sampling::Sampler sampler;
  BOOST_CHECK_THROW(sampling::verify_proposals(sampler, scheduled, logits, kVocab), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
