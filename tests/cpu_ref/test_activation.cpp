#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cpu_ref/activation.h"

namespace cpu_ref = pagedllm::cpu_ref;

BOOST_AUTO_TEST_SUITE(activation)

BOOST_AUTO_TEST_CASE(swiglu_matches_a_double_precision_reference) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-20.0f, 20.0f);
  const std::size_t n = 1001;
  std::vector<float> gate(n), up(n), out(n);
  for (std::size_t i = 0; i < n; ++i) {
    gate[i] = dist(rng);
    up[i] = dist(rng);
  }
  gate[0] = 0.0f;
  gate[1] = -100.0f;  // exp(100) overflows to inf: silu -> -0, as x / inf
  gate[2] = 100.0f;
  cpu_ref::swiglu({.gate = gate.data(), .up = up.data(), .out = out.data(), .n = static_cast<std::int64_t>(n)});
  for (std::size_t i = 0; i < n; ++i) {
    const double g = gate[i];
    const double expected = g / (1.0 + std::exp(-g)) * up[i];
    BOOST_TEST(std::abs(out[i] - expected) <= 1e-6 * std::abs(expected) + 1e-30,
               "gate " << gate[i] << " up " << up[i] << ": " << out[i] << " vs " << expected);
  }
  BOOST_TEST(out[0] == 0.0f);
}

BOOST_AUTO_TEST_CASE(swiglu_in_place_and_per_element_results_do_not_depend_on_the_length) {
  std::mt19937 rng(10);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  const std::size_t n = 37;
  std::vector<float> gate(n), up(n);
  for (std::size_t i = 0; i < n; ++i) {
    gate[i] = dist(rng);
    up[i] = dist(rng);
  }
  std::vector<float> out(n);
  cpu_ref::swiglu({.gate = gate.data(), .up = up.data(), .out = out.data(), .n = static_cast<std::int64_t>(n)});
  std::vector<float> in_place = gate;
  cpu_ref::swiglu(
      {.gate = in_place.data(), .up = up.data(), .out = in_place.data(), .n = static_cast<std::int64_t>(n)});
  BOOST_TEST(std::memcmp(in_place.data(), out.data(), n * sizeof(float)) == 0);
  for (std::size_t i = 0; i < n; ++i) {
    float one = 0.0f;
    cpu_ref::swiglu({.gate = &gate[i], .up = &up[i], .out = &one, .n = 1});
    BOOST_TEST(std::memcmp(&one, &out[i], sizeof(float)) == 0);
    const float silu = cpu_ref::silu(gate[i]);
    const float direct = silu * up[i];
    BOOST_TEST(std::memcmp(&direct, &out[i], sizeof(float)) == 0);
  }
}

BOOST_AUTO_TEST_SUITE_END()
