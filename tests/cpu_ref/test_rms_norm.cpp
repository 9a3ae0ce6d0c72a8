#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cpu_ref/rms_norm.h"
#include "tests/cpu_ref/random_weights.h"

namespace cpu_ref = pagedllm::cpu_ref;

namespace {

using pagedllm::test::uniform_floats;

std::vector<float> run(const std::vector<float>& x, const std::vector<float>& weight, std::int64_t num_rows,
                       float eps) {
  std::vector<float> y(x.size(), -1.0f);
  cpu_ref::rms_norm({.x = x.data(),
                     .weight = weight.data(),
                     .y = y.data(),
                     .num_rows = num_rows,
                     .dim = static_cast<std::int64_t>(weight.size()),
                     .eps = eps});
  return y;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(rms_norm)

BOOST_AUTO_TEST_CASE(matches_a_double_precision_reference) {
  for (const std::int64_t dim : {1, 7, 64, 576, 1000}) {
    const std::int64_t rows = 5;
    const std::vector<float> x = uniform_floats(static_cast<std::size_t>(rows * dim), 1, -3.0f, 3.0f);
    const std::vector<float> weight = uniform_floats(static_cast<std::size_t>(dim), 2, 0.5f, 1.5f);
    const float eps = 1e-5f;
    const std::vector<float> y = run(x, weight, rows, eps);
    for (std::int64_t r = 0; r < rows; ++r) {
      double sum = 0.0;
      for (std::int64_t i = 0; i < dim; ++i) sum += double(x[r * dim + i]) * x[r * dim + i];
      const double inv = 1.0 / std::sqrt(sum / double(dim) + double(eps));
      for (std::int64_t i = 0; i < dim; ++i) {
        const double expected = double(x[r * dim + i]) * inv * weight[i];
        BOOST_TEST(std::abs(y[r * dim + i] - expected) <= 1e-6 * std::abs(expected) + 1e-30,
                   "dim " << dim << " row " << r << " element " << i);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(eps_dominates_a_zero_row) {
  const std::vector<float> x(8, 0.0f);
  const std::vector<float> weight(8, 1.0f);
  const std::vector<float> y = run(x, weight, 1, 1e-6f);
  for (const float v : y) BOOST_TEST(v == 0.0f);
}

BOOST_AUTO_TEST_CASE(a_row_is_bit_identical_alone_in_a_batch_and_in_place) {
  const std::int64_t dim = 576, rows = 9;
  const std::vector<float> x = uniform_floats(static_cast<std::size_t>(rows * dim), 3, -2.0f, 2.0f);
  const std::vector<float> weight = uniform_floats(static_cast<std::size_t>(dim), 4, -1.0f, 1.0f);
  const std::vector<float> batch = run(x, weight, rows, 1e-6f);
  std::vector<float> in_place = x;
  cpu_ref::rms_norm({.x = in_place.data(),
                     .weight = weight.data(),
                     .y = in_place.data(),
                     .num_rows = rows,
                     .dim = dim,
                     .eps = 1e-6f});
  BOOST_TEST(std::memcmp(in_place.data(), batch.data(), batch.size() * sizeof(float)) == 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::vector<float> row(x.begin() + r * dim, x.begin() + (r + 1) * dim);
    const std::vector<float> alone = run(row, weight, 1, 1e-6f);
    BOOST_TEST(std::memcmp(alone.data(), batch.data() + r * dim, dim * sizeof(float)) == 0);
  }
}

BOOST_AUTO_TEST_SUITE_END()
