#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <random>
#include <vector>

#include "core/model/model_config.h"
#include "cpu_ref/rotary.h"
#include "tests/cpu_ref/random_weights.h"

namespace cpu_ref = pagedllm::cpu_ref;
namespace model = pagedllm::model;

namespace {

std::vector<float> unit_floats(std::size_t n, std::uint32_t seed) {
  return pagedllm::test::uniform_floats(n, seed, -1.0f, 1.0f);
}

cpu_ref::RotaryConfig config(std::int32_t head_dim, double theta, std::int32_t cached = 64,
                             model::RopeScaling scaling = {}) {
  return {.head_dim = head_dim, .rope_theta = theta, .scaling = scaling, .num_cached_positions = cached};
}

std::vector<float> rotated(const cpu_ref::RotaryEmbedding& rope, std::vector<float> x, std::int32_t position) {
  rope.apply(x.data(), static_cast<std::int32_t>(x.size()) / rope.head_dim(), position);
  return x;
}

double dot_in_double(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

model::RopeScaling llama3_scaling() {
  model::RopeScaling s;
  s.kind = model::RopeScaling::Kind::llama3;
  s.factor = 8.0;
  s.low_freq_factor = 1.0;
  s.high_freq_factor = 4.0;
  s.original_max_position_embeddings = 8192;
  return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(rotary)

BOOST_AUTO_TEST_CASE(inv_freq_is_one_over_theta_to_the_2j_over_d) {
  const cpu_ref::RotaryEmbedding rope(config(64, 10000.0));
  BOOST_TEST_REQUIRE(rope.inv_freq().size() == 32u);
  for (std::size_t j = 0; j < 32; ++j) {
    const double expected = 1.0 / std::pow(10000.0, double(2 * j) / 64.0);
    BOOST_TEST(std::abs(rope.inv_freq()[j] - expected) <= 4e-7 * expected, "j " << j);
  }
  BOOST_TEST(rope.inv_freq()[0] == 1.0f);
}

BOOST_AUTO_TEST_CASE(rotates_pairs_j_and_j_plus_half_as_hugging_face_rotate_half) {
  const cpu_ref::RotaryEmbedding rope(config(8, 100.0));
  const std::vector<float> x = unit_floats(8, 1);
  for (const std::int32_t position : {1, 7, 50}) {
    const std::vector<float> y = rotated(rope, x, position);
    for (std::size_t j = 0; j < 4; ++j) {
      const double angle = double(position) * rope.inv_freq()[j];
      const double c = std::cos(angle), s = std::sin(angle);
      BOOST_TEST(std::abs(y[j] - (x[j] * c - x[j + 4] * s)) <= 1e-6);
      BOOST_TEST(std::abs(y[j + 4] - (x[j + 4] * c + x[j] * s)) <= 1e-6);
    }
  }
}

BOOST_AUTO_TEST_CASE(position_zero_is_the_identity) {
  const cpu_ref::RotaryEmbedding rope(config(64, 10000.0));
  const std::vector<float> x = unit_floats(3 * 64, 2);  // three heads
  const std::vector<float> y = rotated(rope, x, 0);
  BOOST_TEST(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
}

BOOST_AUTO_TEST_CASE(rotation_preserves_the_norm_of_every_pair) {
  const cpu_ref::RotaryEmbedding rope(config(64, 10000.0, 16));
  const std::vector<float> x = unit_floats(64, 3);
  for (const std::int32_t position : {1, 15, 16, 1000, 100000}) {  // cached and computed
    const std::vector<float> y = rotated(rope, x, position);
    for (std::size_t j = 0; j < 32; ++j) {
      const double before = double(x[j]) * x[j] + double(x[j + 32]) * x[j + 32];
      const double after = double(y[j]) * y[j] + double(y[j + 32]) * y[j + 32];
      BOOST_TEST(std::abs(after - before) <= 2e-6 * before + 1e-12, "position " << position << " pair " << j);
    }
  }
}

BOOST_AUTO_TEST_CASE(scores_depend_only_on_the_relative_position) {
  const cpu_ref::RotaryEmbedding rope(config(64, 10000.0, 128));
  const std::vector<float> q = unit_floats(64, 4);
  const std::vector<float> k = unit_floats(64, 5);
  const double scale = std::sqrt(dot_in_double(q, q) * dot_in_double(k, k));
  for (const std::int32_t distance : {0, 1, 3, 17, 100}) {
    const double reference = dot_in_double(rotated(rope, q, distance), rotated(rope, k, 0));
    for (const std::int32_t start : {1, 5, 64, 500, 3000}) {
      const double score = dot_in_double(rotated(rope, q, start + distance), rotated(rope, k, start));
      // fp32 angles: position * inv_freq is rounded, ~position * 2^-24 radians at most.
      BOOST_TEST(std::abs(score - reference) <= 1e-6 * (start + distance + 10) * scale,
                 "distance " << distance << " start " << start);
    }
  }
}

BOOST_AUTO_TEST_CASE(cached_and_computed_positions_give_identical_results) {
  const cpu_ref::RotaryEmbedding cached(config(64, 10000.0, 300));
  const cpu_ref::RotaryEmbedding uncached(config(64, 10000.0, 0));
  const std::vector<float> x = unit_floats(2 * 64, 6);
  for (std::int32_t position = 0; position < 300; position += 7) {
    const std::vector<float> a = rotated(cached, x, position);
    const std::vector<float> b = rotated(uncached, x, position);
    BOOST_TEST(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  }
  std::vector<float> cos(32), sin(32);
  cached.cos_sin(299, cos.data(), sin.data());
  BOOST_TEST(cos[0] == std::cos(299.0f));
  BOOST_TEST(sin[0] == std::sin(299.0f));
}

BOOST_AUTO_TEST_CASE(llama3_scaling_keeps_high_frequencies_and_divides_low_ones_by_factor) {
  const cpu_ref::RotaryEmbedding plain(config(128, 500000.0));
  const cpu_ref::RotaryEmbedding scaled(config(128, 500000.0, 64, llama3_scaling()));
  int num_high = 0, num_low = 0, num_medium = 0;
  for (std::size_t j = 0; j < 64; ++j) {
    const double f = plain.inv_freq()[j];
    const double wavelen = 2.0 * std::numbers::pi / f;
    if (wavelen < 8192.0 / 4.0) {
      ++num_high;
      BOOST_TEST(scaled.inv_freq()[j] == plain.inv_freq()[j], "j " << j);
    } else if (wavelen > 8192.0 / 1.0) {
      ++num_low;
      BOOST_TEST(scaled.inv_freq()[j] == plain.inv_freq()[j] / 8.0f, "j " << j);
    } else {
      ++num_medium;  // blended: between f / factor and f
      const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
      const double expected = (1.0 - smooth) * f / 8.0 + smooth * f;
      BOOST_TEST(std::abs(scaled.inv_freq()[j] - expected) <= 1e-5 * expected, "j " << j);
      BOOST_TEST(scaled.inv_freq()[j] <= plain.inv_freq()[j]);
      BOOST_TEST(scaled.inv_freq()[j] >= plain.inv_freq()[j] / 8.0f);
    }
  }
  BOOST_TEST(num_high > 0);
  BOOST_TEST(num_low > 0);
  BOOST_TEST(num_medium > 0);
}

BOOST_AUTO_TEST_CASE(linear_scaling_divides_every_frequency_by_factor) {
  model::RopeScaling linear;
  linear.kind = model::RopeScaling::Kind::linear;
  linear.factor = 4.0;
  const cpu_ref::RotaryEmbedding plain(config(64, 10000.0));
  const cpu_ref::RotaryEmbedding scaled(config(64, 10000.0, 64, linear));
  for (std::size_t j = 0; j < 32; ++j) BOOST_TEST(scaled.inv_freq()[j] == plain.inv_freq()[j] / 4.0f);
}

BOOST_AUTO_TEST_CASE(config_from_a_model_caps_the_cache) {
  model::ModelConfig m;
  m.head_dim = 64;
  m.rope_theta = 100000.0;
  m.max_position_embeddings = 131072;
  m.rope_scaling = llama3_scaling();
  const cpu_ref::RotaryConfig c = cpu_ref::rotary_config(m, 4096);
  BOOST_TEST(c.head_dim == 64);
  BOOST_TEST(c.rope_theta == 100000.0);
  BOOST_TEST(c.num_cached_positions == 4096);
  BOOST_TEST((c.scaling.kind == model::RopeScaling::Kind::llama3));
}

BOOST_AUTO_TEST_SUITE_END()
