#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <vector>

#include "core/sampling/sampler.h"
#include "core/sched/sampling_params.h"
#include "cuda/kernels/sampling.h"
#include "cuda/kernels/token_bitmask.h"
#include "tests/cuda/gpu_test_util.h"

namespace cuda = pagedllm::cuda;
using namespace pagedllm::cuda::testing;

namespace {

std::vector<float> random_logits(std::size_t n, std::mt19937_64& rng, float spread) {
  std::normal_distribution<float> dist(0.0f, spread);
  std::vector<float> logits(n);
  for (float& x : logits) x = dist(rng);
  return logits;
}

struct Filter {
  float temperature;
  int32_t top_k;
  float top_p;
};

// The tokens a correct sampler may return, and each one's probability, in double: weights
// exp((x - max) / T), top-k by rank (ties to lower id), then the smallest top set whose mass
// reaches top_p. `slack` widens the top-p cut to absorb rounding at the boundary.
struct KeptSet {
  std::vector<bool> allowed;
  std::vector<double> probability;  // over the exact (slack-free) kept set
  std::vector<int32_t> ranked;      // kept ids by rank
};

KeptSet kept_set(const std::vector<float>& logits, const Filter& f, double slack) {
  const std::size_t vocab = logits.size();
  const double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> w(vocab);
  for (std::size_t i = 0; i < vocab; ++i) w[i] = std::exp((static_cast<double>(logits[i]) - max) / f.temperature);
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return w[static_cast<std::size_t>(a)] > w[static_cast<std::size_t>(b)] ||
           (w[static_cast<std::size_t>(a)] == w[static_cast<std::size_t>(b)] && a < b);
  });
  std::size_t k = vocab;
  if (f.top_k > 0 && static_cast<std::size_t>(f.top_k) < vocab) k = static_cast<std::size_t>(f.top_k);
  double mass = 0.0;
  for (std::size_t r = 0; r < k; ++r) mass += w[static_cast<std::size_t>(order[r])];
  KeptSet kept;
  kept.allowed.assign(vocab, false);
  kept.probability.assign(vocab, 0.0);
  double before = 0.0;
  double exact_mass = 0.0;
  std::vector<int32_t> exact;
  for (std::size_t r = 0; r < k; ++r) {
    const int32_t id = order[r];
    if (f.top_p < 1.0f && before >= (static_cast<double>(f.top_p) + slack) * mass) break;
    kept.allowed[static_cast<std::size_t>(id)] = true;
    if (f.top_p >= 1.0f || before < static_cast<double>(f.top_p) * mass) {
      exact.push_back(id);
      exact_mass += w[static_cast<std::size_t>(id)];
    }
    before += w[static_cast<std::size_t>(id)];
  }
  for (const int32_t id : exact)
    kept.probability[static_cast<std::size_t>(id)] = w[static_cast<std::size_t>(id)] / exact_mass;
  kept.ranked = exact;
  return kept;
}

// num_rows copies of one row of logits, each with its own position (and seed when asked).
std::vector<int32_t> sample_rows(const std::vector<float>& logits, const Filter& f, int32_t num_rows, uint64_t seed,
                                 bool seed_per_row) {
  const auto vocab = static_cast<int32_t>(logits.size());
  std::vector<float> all;
  all.reserve(logits.size() * static_cast<std::size_t>(num_rows));
  for (int32_t r = 0; r < num_rows; ++r) all.insert(all.end(), logits.begin(), logits.end());
  const std::vector<float> temperatures(static_cast<std::size_t>(num_rows), f.temperature);
  const std::vector<int32_t> top_k(static_cast<std::size_t>(num_rows), f.top_k);
  const std::vector<float> top_p(static_cast<std::size_t>(num_rows), f.top_p);
  std::vector<uint64_t> seeds(static_cast<std::size_t>(num_rows), seed);
  if (seed_per_row) std::iota(seeds.begin(), seeds.end(), seed);
  const std::vector<int32_t> streams(static_cast<std::size_t>(num_rows), 0);
  std::vector<int32_t> positions(static_cast<std::size_t>(num_rows));
  std::iota(positions.begin(), positions.end(), 0);
  DeviceBuffer logits_dev(all);
  DeviceBuffer temperatures_dev(temperatures);
  DeviceBuffer top_k_dev(top_k);
  DeviceBuffer top_p_dev(top_p);
  DeviceBuffer seeds_dev(seeds);
  DeviceBuffer streams_dev(streams);
  DeviceBuffer positions_dev(positions);
  DeviceBuffer out_dev(static_cast<std::size_t>(num_rows) * sizeof(int32_t));
  out_dev.poison();
  cuda::TopKTopPParams params;
  params.logits = logits_dev.as<float>();
  params.num_rows = num_rows;
  params.vocab_size = vocab;
  params.temperatures = temperatures_dev.as<float>();
  params.top_k = top_k_dev.as<int32_t>();
  params.top_p = top_p_dev.as<float>();
  params.seeds = seeds_dev.as<uint64_t>();
  params.streams = streams_dev.as<int32_t>();
  params.positions = positions_dev.as<int32_t>();
  params.out_tokens = out_dev.as<int32_t>();
  cuda::sample_top_k_top_p(params, nullptr);
  return out_dev.download<int32_t>();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sampling)

// Greedy must equal the host sampler (core/sampling) exactly: ties to the lowest id, -inf entries, both the
// argmax kernel and the temperature-0 rows of the sampling kernel.
BOOST_AUTO_TEST_CASE(greedy_matches_cpu_ref_sampler_exactly) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(31);
  const int32_t vocab = 32007;
  const int32_t rows = 9;
  std::vector<float> logits = random_logits(static_cast<std::size_t>(rows) * vocab, rng, 3.0f);
  // Row 3: a tie for the top between ids 200 and 100 (the lower must win).
  logits[3 * vocab + 200] = 50.0f;
  logits[3 * vocab + 100] = 50.0f;
  // Row 5: everything -inf but two tokens.
  for (int32_t i = 0; i < vocab; ++i) logits[static_cast<std::size_t>(5 * vocab + i)] = -INFINITY;
  logits[5 * vocab + 31000] = -3.0f;
  logits[5 * vocab + 7] = -4.0f;
  // Row 8: the maximum is the last token.
  logits[8 * vocab + vocab - 1] = 60.0f;

  pagedllm::sched::SamplingParams greedy;
  greedy.temperature = 0.0f;
  pagedllm::sampling::Sampler sampler;
  std::vector<int32_t> expected;
  for (int32_t r = 0; r < rows; ++r) {
    pagedllm::sampling::SamplerInput input;
    input.logits =
        std::span<const float>(logits.data() + static_cast<std::size_t>(r) * vocab, static_cast<std::size_t>(vocab));
    input.params = &greedy;
    expected.push_back(sampler.sample(input).samples.at(0).token);
  }

  DeviceBuffer logits_dev(logits);
  DeviceBuffer out_dev(static_cast<std::size_t>(rows) * sizeof(int32_t));
  out_dev.poison();
  cuda::argmax({logits_dev.as<float>(), rows, vocab, out_dev.as<int32_t>()}, nullptr);
  const std::vector<int32_t> by_argmax = out_dev.download<int32_t>();
  BOOST_TEST(by_argmax == expected, boost::test_tools::per_element());

  const std::vector<float> temperatures(static_cast<std::size_t>(rows), 0.0f);
  const std::vector<int32_t> top_k(static_cast<std::size_t>(rows), 0);
  const std::vector<float> top_p(static_cast<std::size_t>(rows), 1.0f);
  const std::vector<uint64_t> seeds(static_cast<std::size_t>(rows), 1);
  const std::vector<int32_t> zeros(static_cast<std::size_t>(rows), 0);
  DeviceBuffer temperatures_dev(temperatures);
  DeviceBuffer top_k_dev(top_k);
  DeviceBuffer top_p_dev(top_p);
  DeviceBuffer seeds_dev(seeds);
  DeviceBuffer zeros_dev(zeros);
  out_dev.poison();
  cuda::TopKTopPParams params;
  params.logits = logits_dev.as<float>();
  params.num_rows = rows;
  params.vocab_size = vocab;
  params.temperatures = temperatures_dev.as<float>();
  params.top_k = top_k_dev.as<int32_t>();
  params.top_p = top_p_dev.as<float>();
  params.seeds = seeds_dev.as<uint64_t>();
  params.streams = zeros_dev.as<int32_t>();
  params.positions = zeros_dev.as<int32_t>();
  params.out_tokens = out_dev.as<int32_t>();
  cuda::sample_top_k_top_p(params, nullptr);
  const std::vector<int32_t> by_sampler = out_dev.download<int32_t>();
  BOOST_TEST(by_sampler == expected, boost::test_tools::per_element());
}

// Every draw lies in the top-k / top-p set; the most likely tokens are drawn about as often as
// their probability says (6 sigma); top_k = 1 is greedy; a (seed, position) gives the same token
// every time, and other seeds give other draws.
BOOST_AUTO_TEST_CASE(draws_stay_in_the_top_k_top_p_set_with_sane_frequencies) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(37);
  const std::vector<float> logits = random_logits(5003, rng, 2.5f);
  const int32_t num_rows = 2048;
  const std::vector<Filter> filters{{1.0f, 0, 1.0f},  {0.7f, 50, 1.0f}, {1.0f, 0, 0.9f},
                                    {1.3f, 20, 0.8f}, {1.0f, 1, 1.0f},  {0.5f, 0, 0.5f}};
  for (const Filter& f : filters) {
    std::ostringstream name;
    name << "T " << f.temperature << " top_k " << f.top_k << " top_p " << f.top_p;
    const KeptSet kept = kept_set(logits, f, 1e-4);
    const std::vector<int32_t> tokens = sample_rows(logits, f, num_rows, 1234, false);
    std::vector<int32_t> counts(logits.size(), 0);
    std::size_t outside = 0;
    for (const int32_t t : tokens) {
      if (t < 0 || static_cast<std::size_t>(t) >= logits.size() || !kept.allowed[static_cast<std::size_t>(t)]) {
        ++outside;
      } else {
        ++counts[static_cast<std::size_t>(t)];
      }
    }
    BOOST_TEST(outside == 0u, name.str() << ": " << outside << " draws outside the kept set");
    BOOST_TEST_MESSAGE(name.str() << ": " << kept.ranked.size() << " tokens kept");
    for (std::size_t r = 0; r < std::min<std::size_t>(3, kept.ranked.size()); ++r) {
      const auto id = static_cast<std::size_t>(kept.ranked[r]);
      const double p = kept.probability[id];
      const double expected = p * num_rows;
      const double sigma = std::sqrt(num_rows * p * (1.0 - p));
      BOOST_TEST_MESSAGE(name.str() << ": rank " << r << " drawn " << counts[id] << " times, expected " << expected);
      BOOST_TEST(std::abs(counts[id] - expected) <= 6.0 * sigma + 2.0,
                 name.str() << ": rank " << r << " drawn " << counts[id] << " times, expected " << expected);
    }
    if (f.top_k == 1) {
      const auto top = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      BOOST_TEST(static_cast<std::size_t>(std::count(tokens.begin(), tokens.end(), top)) == tokens.size());
    }
  }

  const Filter f{1.0f, 0, 1.0f};
  const std::vector<int32_t> first = sample_rows(logits, f, 256, 99, true);
  const std::vector<int32_t> again = sample_rows(logits, f, 256, 99, true);
  const std::vector<int32_t> other = sample_rows(logits, f, 256, 1000099, true);
  BOOST_TEST((first == again), "the same (seed, position) must give the same token");
  BOOST_TEST((first != other), "different seeds gave identical draws for 256 rows");
}

// The device draws the host sampler's random stream: for the same (seed, stream, position) the two
// samplers pick the same token, but for a draw within rounding of a token boundary (integer masses
// on the device, double on the host). Before they shared the draw, they agreed about as often as
// two independent draws do (the sum of the squared probabilities, ~0.2 here).
BOOST_AUTO_TEST_CASE(the_device_draws_the_host_samplers_stream) {
  if (skip_without_gpu()) return;
  const std::vector<float> logits = {1.0f, 0.5f, 0.0f, -0.5f, 1.5f, 0.25f, -1.0f, 0.75f};
  const Filter f{1.0f, 0, 1.0f};
  constexpr int32_t kRows = 400;
  constexpr uint64_t kSeed = 4242;
  const std::vector<int32_t> device = sample_rows(logits, f, kRows, kSeed, false);
  pagedllm::sched::SamplingParams params;
  params.temperature = 1.0f;
  pagedllm::sampling::Sampler host;
  int32_t same = 0;
  for (int32_t position = 0; position < kRows; ++position) {
    pagedllm::sampling::SamplerInput input;
    input.logits = logits;
    input.params = &params;
    input.seed = kSeed;
    input.position = position;
    const pagedllm::sampling::SamplerOutput out = host.sample(input);
    same += out.samples.front().token == device[static_cast<std::size_t>(position)] ? 1 : 0;
  }
  BOOST_TEST(same >= kRows - 2, same << " of " << kRows << " draws agree");
}

// Structured outputs' mask on the device: every refused token's logit becomes -inf, every
// allowed one and every row without a mask (-1) is left bit for bit, for vocabularies that end
// mid-word and rows that share a mask row.
BOOST_AUTO_TEST_CASE(token_bitmask_refuses_exactly_the_cleared_bits) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(77);
  for (const int32_t vocab : {1, 33, 1000, 8200}) {
    constexpr int32_t kRows = 6;
    const int32_t words = (vocab + 31) / 32;
    std::vector<float> logits =
        random_logits(static_cast<std::size_t>(kRows) * static_cast<std::size_t>(vocab), rng, 3.0f);
    std::vector<uint32_t> bitmask(static_cast<std::size_t>(3) * static_cast<std::size_t>(words));
    for (std::size_t i = 0; i < bitmask.size(); ++i) {
      const uint64_t r = rng();
      bitmask[i] =
          i % 5 == 0 ? 0xffffffffu : static_cast<uint32_t>(r & (r >> 32));  // sparse, and some whole words open
    }
    const std::vector<int32_t> mask_rows = {0, -1, 2, 1, 2, -1};
    DeviceBuffer logits_dev(logits);
    DeviceBuffer bitmask_dev(bitmask);
    DeviceBuffer rows_dev(mask_rows);
    cuda::apply_token_bitmask(cuda::TokenBitmaskParams{.logits = logits_dev.as<float>(),
                                                       .num_rows = kRows,
                                                       .vocab_size = vocab,
                                                       .bitmask = bitmask_dev.as<uint32_t>(),
                                                       .mask_rows = rows_dev.as<int32_t>()},
                              nullptr);
    const std::vector<float> out = logits_dev.download<float>();
    int32_t mismatches = 0;
    for (int32_t r = 0; r < kRows; ++r) {
      for (int32_t t = 0; t < vocab; ++t) {
        const std::size_t at =
            static_cast<std::size_t>(r) * static_cast<std::size_t>(vocab) + static_cast<std::size_t>(t);
        const int32_t mask_row = mask_rows[static_cast<std::size_t>(r)];
        const bool allowed =
            mask_row < 0 || ((bitmask[static_cast<std::size_t>(mask_row * words + t / 32)] >> (t % 32)) & 1u) != 0;
        const float expected = allowed ? logits[at] : -std::numeric_limits<float>::infinity();
        mismatches += out[at] == expected ? 0 : 1;
      }
    }
    BOOST_TEST(mismatches == 0, "vocab " << vocab << ": " << mismatches << " logits wrong");
  }
  BOOST_CHECK_THROW(cuda::validate(cuda::TokenBitmaskParams{.num_rows = 1, .vocab_size = 4}),
                    cuda::KernelArgumentError);
}

BOOST_AUTO_TEST_SUITE_END()
