#include <omp.h>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "cpu_ref/dot.h"
#include "cpu_ref/linear.h"
#include "tests/cpu_ref/random_weights.h"

namespace cpu_ref = pagedllm::cpu_ref;

namespace {

// Uniform in [-scale, scale).
std::vector<float> symmetric_floats(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  return pagedllm::test::uniform_floats(n, seed, -scale, scale);
}

bool bit_equal(const float* a, const float* b, std::size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

struct Problem {
  std::int64_t in = 0;
  std::int64_t out = 0;
  std::vector<float> weight;
  std::vector<float> bias;

  Problem(std::int64_t in_features, std::int64_t out_features, std::uint32_t seed)
      : in(in_features),
        out(out_features),
        weight(symmetric_floats(static_cast<std::size_t>(in * out), seed, 0.5f)),
        bias(symmetric_floats(static_cast<std::size_t>(out), seed + 1)) {}

  std::vector<float> run(const std::vector<float>& x, std::int64_t num_rows, bool with_bias,
                         cpu_ref::LinearKernel kernel = cpu_ref::LinearKernel::best) const {
    std::vector<float> y(static_cast<std::size_t>(num_rows * out), -1.0f);
    cpu_ref::LinearArgs args;
    args.x = x.data();
    args.weight = cpu_ref::WeightMatrix::f32(weight.data(), in);
    args.bias = with_bias ? bias.data() : nullptr;
    args.y = y.data();
    args.num_rows = num_rows;
    args.in_features = in;
    args.out_features = out;
    args.kernel = kernel;
    cpu_ref::linear(args);
    return y;
  }
};

// Kernels to check: generic always, avx2 where the CPU has it.
std::vector<cpu_ref::LinearKernel> available_kernels() {
  std::vector<cpu_ref::LinearKernel> kernels = {cpu_ref::LinearKernel::generic};
  if (cpu_ref::cpu_has_avx2()) kernels.push_back(cpu_ref::LinearKernel::avx2);
  if (cpu_ref::cpu_has_avx512()) kernels.push_back(cpu_ref::LinearKernel::avx512);
  return kernels;
}

// Restores the OpenMP thread count a test changed.
struct ThreadCount {
  int saved = omp_get_max_threads();
  ~ThreadCount() { omp_set_num_threads(saved); }
};

// dot.h's definition, written out one scalar operation at a time: the oracle for dot() and its
// vector fold.
float dot_by_definition(const float* a, const float* b, std::int64_t n) {
  float acc[16] = {};
  const std::int64_t n16 = n - n % 16;
  for (std::int64_t k = 0; k < n16; ++k) acc[k % 16] = acc[k % 16] + a[k] * b[k];
  for (std::int64_t k = n16; k < n; ++k) acc[k - n16] = acc[k - n16] + a[k] * b[k];
  for (int width = 8; width >= 1; width /= 2) {
    for (int j = 0; j < width; ++j) acc[j] = acc[j] + acc[j + width];
  }
  return acc[0];
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dot)

BOOST_AUTO_TEST_CASE(dot_is_its_definition_bit_for_bit) {
  for (const std::int64_t n : {0, 1, 15, 16, 17, 64, 83, 96, 576}) {
    for (std::uint32_t seed = 0; seed < 20; ++seed) {
      const std::vector<float> a = symmetric_floats(static_cast<std::size_t>(n), 100 + seed);
      const std::vector<float> b = symmetric_floats(static_cast<std::size_t>(n), 200 + seed);
      const float got = cpu_ref::dot(a.data(), b.data(), n);
      const float expected = dot_by_definition(a.data(), b.data(), n);
      BOOST_TEST(bit_equal(&got, &expected, 1), "n " << n << " seed " << seed << ": " << got << " vs " << expected);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(linear)

BOOST_AUTO_TEST_CASE(matches_a_double_precision_reference_within_the_dot_error_bound) {
  // Shapes with and without a 16-element tail, and output counts that leave partial tiles.
  const std::int64_t shapes[][3] = {{1, 576, 37}, {5, 70, 11}, {7, 15, 3}, {3, 1, 4}, {4, 576, 64}};
  for (const auto& shape : shapes) {
    const auto [rows, in, out] = std::tuple(shape[0], shape[1], shape[2]);
    const Problem problem(in, out, 7);
    const std::vector<float> x = symmetric_floats(static_cast<std::size_t>(rows * in), 11);
    for (const cpu_ref::LinearKernel kernel : available_kernels()) {
      for (const bool with_bias : {false, true}) {
        const std::vector<float> y = problem.run(x, rows, with_bias, kernel);
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t o = 0; o < out; ++o) {
            double exact = with_bias ? problem.bias[o] : 0.0;
            double magnitude = with_bias ? std::abs(problem.bias[o]) : 0.0;
            for (std::int64_t k = 0; k < in; ++k) {
              const double term = double(x[r * in + k]) * double(problem.weight[o * in + k]);
              exact += term;
              magnitude += std::abs(term);
            }
            // Each lane adds ceil(in / 16) products, the tree 4 levels, the bias 1: at most
            // that many roundings of 2^-24 relative to the sum of magnitudes (+ 1 per product).
            const double num_roundings = double((in + 15) / 16) + 4.0 + 2.0;
            const double bound = num_roundings * std::ldexp(1.0, -24) * magnitude * 1.01 + 1e-30;
            const double error = std::abs(double(y[r * out + o]) - exact);
            BOOST_TEST(error <= bound, "rows " << rows << " in " << in << " out " << out << " (" << r << ", " << o
                                               << ") error " << error << " bound " << bound);
          }
        }
      }
    }
  }
}

// 83 values: a tail after the 16-lane body; 96 and 576: none (the lanes fold in registers).
BOOST_AUTO_TEST_CASE(every_element_equals_the_fixed_order_dot_product_plus_bias) {
  for (const std::int64_t in : {83, 96, 576}) {
    const std::int64_t rows = 7, out = 29;
    const Problem problem(in, out, 3);
    const std::vector<float> x = symmetric_floats(static_cast<std::size_t>(rows * in), 4);
    for (const cpu_ref::LinearKernel kernel : available_kernels()) {
      const std::vector<float> y = problem.run(x, rows, true, kernel);
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t o = 0; o < out; ++o) {
          const float expected = cpu_ref::dot(x.data() + r * in, problem.weight.data() + o * in, in) + problem.bias[o];
          BOOST_TEST(bit_equal(&y[r * out + o], &expected, 1), "in " << in << " row " << r << " output " << o);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_row_is_bit_identical_alone_and_at_every_position_of_batches_of_2_to_33) {
  const std::int64_t in = 576, out = 45;  // 45: a partial output tile for every tile shape
  const Problem problem(in, out, 21);
  constexpr std::int64_t kMaxRows = 33;
  const std::vector<float> x = symmetric_floats(static_cast<std::size_t>(kMaxRows * in), 22);
  for (const cpu_ref::LinearKernel kernel : available_kernels()) {
    // Each row alone.
    std::vector<std::vector<float>> alone;
    for (std::int64_t r = 0; r < kMaxRows; ++r) {
      const std::vector<float> row(x.begin() + r * in, x.begin() + (r + 1) * in);
      alone.push_back(problem.run(row, 1, true, kernel));
    }
    // Batches of every size, each starting at a different row, so that every row lands at
    // every position of some batch (in particular in every tile slot and in partial tiles).
    for (std::int64_t size = 2; size <= kMaxRows; ++size) {
      for (std::int64_t first = 0; first < kMaxRows; ++first) {
        std::vector<float> batch(static_cast<std::size_t>(size * in));
        for (std::int64_t i = 0; i < size; ++i) {
          const std::int64_t r = (first + i) % kMaxRows;
          std::copy(x.begin() + r * in, x.begin() + (r + 1) * in, batch.begin() + i * in);
        }
        const std::vector<float> y = problem.run(batch, size, true, kernel);
        for (std::int64_t i = 0; i < size; ++i) {
          const std::int64_t r = (first + i) % kMaxRows;
          BOOST_TEST_REQUIRE(bit_equal(y.data() + i * out, alone[r].data(), out),
                             cpu_ref::linear_kernel_name(kernel)
                                 << ": row " << r << " at position " << i << " of a batch of " << size);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(results_are_bit_identical_with_one_or_two_threads_and_across_kernels) {
  ThreadCount restore;
  const std::int64_t rows = 9, in = 200, out = 301;
  const Problem problem(in, out, 5);
  const std::vector<float> x = symmetric_floats(static_cast<std::size_t>(rows * in), 6);
  omp_set_num_threads(1);
  const std::vector<float> reference = problem.run(x, rows, true, cpu_ref::LinearKernel::generic);
  for (const int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    for (const cpu_ref::LinearKernel kernel : available_kernels()) {
      const std::vector<float> y = problem.run(x, rows, true, kernel);
      BOOST_TEST(bit_equal(y.data(), reference.data(), y.size()), cpu_ref::linear_kernel_name(kernel)
                                                                      << " with " << threads << " threads");
    }
  }
  if (!cpu_ref::cpu_has_avx2()) BOOST_TEST_MESSAGE("no AVX2 on this CPU: only the generic kernel ran");
  if (!cpu_ref::cpu_has_avx512()) BOOST_TEST_MESSAGE("no AVX-512F on this CPU: the AVX-512 kernel did not run");
}

BOOST_AUTO_TEST_CASE(zero_rows_or_outputs_write_nothing_and_zero_inputs_give_the_bias) {
  const Problem problem(0, 3, 1);
  const std::vector<float> x;
  const std::vector<float> y = problem.run(x, 2, true);
  for (std::int64_t r = 0; r < 2; ++r)
    for (std::int64_t o = 0; o < 3; ++o) BOOST_TEST(y[r * 3 + o] == problem.bias[o]);
  const std::vector<float> none = problem.run(x, 0, true);
  BOOST_TEST(none.empty());
}

// Throughput, not a check: run with
//   test_cpu_ref --run_test=linear/throughput --log_level=message
BOOST_AUTO_TEST_CASE(throughput, *boost::unit_test::disabled()) {
  const std::int64_t shapes[][3] = {{32, 576, 1536}, {1, 576, 49152}, {1, 576, 1536}, {8, 576, 1536}};
  for (const auto& shape : shapes) {
    const auto [rows, in, out] = std::tuple(shape[0], shape[1], shape[2]);
    const Problem problem(in, out, 1);
    const std::vector<float> x = symmetric_floats(static_cast<std::size_t>(rows * in), 2);
    std::vector<float> y(static_cast<std::size_t>(rows * out));
    for (const cpu_ref::LinearKernel kernel : available_kernels()) {
      cpu_ref::LinearArgs args{
          x.data(), cpu_ref::WeightMatrix::f32(problem.weight.data(), in), nullptr, y.data(), rows, in, out, kernel};
      cpu_ref::linear(args);  // warm up
      const double flops = 2.0 * double(rows) * double(in) * double(out);
      const int repeats = static_cast<int>(std::max(3.0, 2e9 / flops));
      double best = 1e30;
      for (int rep = 0; rep < repeats; ++rep) {
        const auto start = std::chrono::steady_clock::now();
        cpu_ref::linear(args);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::min(best, s);
      }
      BOOST_TEST_MESSAGE("[" << rows << " x " << in << "] x [" << out << " x " << in << "] "
                             << cpu_ref::linear_kernel_name(kernel) << " threads " << omp_get_max_threads() << ": "
                             << best * 1e3 << " ms, " << flops / best * 1e-9 << " GFLOP/s");
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
