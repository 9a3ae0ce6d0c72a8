// The per-GEMM price (sim/gemm_cost.h) by hand on round figures, its limits (the larger bound far
// from the ridge, between the larger bound and the sum near it, the latency alone for a tiny
// matrix), and the roofline's per-gemm linear model built from it.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <stdexcept>
#include <string>

#include "sim/gemm_cost.h"
#include "sim/roofline_cost_model.h"
#include "tests/sim/plan_builder.h"
#include "tests/sim/roofline_fixture.h"

namespace pagedllm::test {
namespace {

namespace tt = boost::test_tools;

sim::GemmCostConstants unit_constants(double p, double latency) {
  return {
      .compute_efficiency = 1.0, .memory_efficiency = 1.0, .overlap_exponent = p, .kernel_latency_seconds = latency};
}

BOOST_AUTO_TEST_SUITE(gemm_cost)

BOOST_AUTO_TEST_CASE(a_gemm_costs_its_latency_and_the_p_norm_of_its_two_bounds) {
  // 4 x 8 x 16: 1,024 FLOPs (1.024 s); weights 8 x 16 x 2 = 256 bytes, activations (4 x 16 + 4 x 8)
  // x 2 = 192 bytes: 4.48 s.
  const sim::GemmCost cost =
      sim::gemm_cost({.m = 4, .n = 8, .k = 16}, round_hardware(), unit_constants(2.0, 0.5), 2.0, 2.0);
  BOOST_TEST(cost.flops == 1024.0);
  BOOST_TEST(cost.weight_bytes == 256.0);
  BOOST_TEST(cost.compute_seconds == 1.024, tt::tolerance(1e-12));
  BOOST_TEST(cost.memory_seconds == 4.48, tt::tolerance(1e-12));
  BOOST_TEST(cost.seconds == 0.5 + std::sqrt(1.024 * 1.024 + 4.48 * 4.48), tt::tolerance(1e-12));
  // p = 1 adds the sides; a large p takes the larger.
  BOOST_TEST(sim::gemm_cost({4, 8, 16}, round_hardware(), unit_constants(1.0, 0.0), 2.0, 2.0).seconds == 5.504,
             tt::tolerance(1e-12));
  BOOST_TEST(sim::gemm_cost({4, 8, 16}, round_hardware(), unit_constants(200.0, 0.0), 2.0, 2.0).seconds == 4.48,
             tt::tolerance(1e-3));
  // Quantized weights read fewer bytes: 4-bit, 64 bytes of weights.
  BOOST_TEST(sim::gemm_cost({4, 8, 16}, round_hardware(), unit_constants(2.0, 0.0), 0.5, 2.0).memory_seconds == 2.56,
             tt::tolerance(1e-12));
  BOOST_TEST(sim::gemm_cost({0, 8, 16}, round_hardware(), unit_constants(2.0, 0.5), 2.0, 2.0).seconds == 0.0);
}

BOOST_AUTO_TEST_CASE(on_an_h100_a_decode_streams_the_weights_and_a_long_prefill_is_compute_bound) {
  // Llama-2-7B's MLP up projection (gate and up): 4096 x 22016 weights, 180 MB.
  const sim::HardwareSpec h100 = sim::find_hardware("h100-sxm");
  const sim::GemmCostConstants constants;
  const sim::GemmCost decode = sim::gemm_cost({1, 22016, 4096}, h100, constants, 2.0, 2.0);
  const sim::GemmCost prefill = sim::gemm_cost({4096, 22016, 4096}, h100, constants, 2.0, 2.0);
  const sim::GemmCost ridge = sim::gemm_cost({256, 22016, 4096}, h100, constants, 2.0, 2.0);
  BOOST_TEST(decode.memory_seconds > 100.0 * decode.compute_seconds);
  BOOST_TEST(decode.seconds == constants.kernel_latency_seconds + decode.memory_seconds, tt::tolerance(1e-3));
  BOOST_TEST(prefill.compute_seconds > 5.0 * prefill.memory_seconds);
  BOOST_TEST(prefill.seconds == constants.kernel_latency_seconds + prefill.compute_seconds, tt::tolerance(0.05));
  // Near the ridge neither bound alone: above the larger, below the sum.
  const double larger = std::max(ridge.compute_seconds, ridge.memory_seconds);
  const double overlapped = ridge.seconds - constants.kernel_latency_seconds;
  BOOST_TEST(overlapped > 1.2 * larger);
  BOOST_TEST(overlapped < ridge.compute_seconds + ridge.memory_seconds);
}

BOOST_AUTO_TEST_CASE(bad_constants_are_refused_naming_them) {
  const auto message = [](const sim::GemmCostConstants& constants) {
    try {
      sim::validate(constants);
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  BOOST_TEST(message({}).empty());
  BOOST_TEST(message({.compute_efficiency = 1.5}).find("compute_efficiency") != std::string::npos);
  BOOST_TEST(message({.memory_efficiency = 0.0}).find("memory_efficiency") != std::string::npos);
  BOOST_TEST(message({.overlap_exponent = 0.5}).find("overlap_exponent") != std::string::npos);
  BOOST_TEST(message({.kernel_latency_seconds = -1.0}).find("kernel_latency_seconds") != std::string::npos);
  BOOST_TEST(std::string(sim::to_string(sim::parse_linear_model("per-gemm"))) == "per-gemm");
  BOOST_CHECK_THROW(sim::parse_linear_model("tiles"), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(the_roofline_per_gemm_prices_a_layers_four_gemms_and_the_sampled_rows_lm_head) {
  sim::RooflineConfig config;
  config.hardware = sim::find_hardware("h100-sxm");
  config.model = model::find_model_shape("llama-3-8b");  // 32 q heads, 8 KV heads of 128, MLP 14336
  config.tensor_parallel = 2;
  config.linear_model = sim::LinearModel::per_gemm;
  const sim::RooflineCostModel per_gemm(config);
  const sim::RooflineCostModel roofline([&] {
    sim::RooflineConfig aggregate = config;
    aggregate.linear_model = sim::LinearModel::roofline;
    return aggregate;
  }());
  // 300 prompt tokens and 20 decodes: 320 rows, 21 of them sample.
  PlanBuilder builder(config.block_size);
  builder.add({.start = 0, .end = 300, .sample = true});
  for (int i = 0; i < 20; ++i) builder.add({.start = 500, .end = 501, .sample = true});
  const sim::StepCost cost = per_gemm.step_cost(builder.plan());
  const auto price = [&](int64_t m, int64_t n, int64_t k) {
    return sim::gemm_cost({m, n, k}, config.hardware, config.gemm, 2.0, 2.0);
  };
  // Per GPU: q 2048 + k, v 2 x 512 columns; o 2048 rows; gate and up 2 x 7168; down 7168 rows.
  const sim::GemmCost layer[] = {price(320, 3072, 4096), price(320, 4096, 2048), price(320, 14336, 4096),
                                 price(320, 4096, 7168)};
  const sim::GemmCost lm_head = price(21, 128256 / 2, 4096);
  double seconds = 0.0;
  double flops = 0.0;
  for (const sim::GemmCost& gemm : layer) {
    seconds += 32.0 * gemm.seconds;
    flops += 32.0 * gemm.flops;
  }
  BOOST_TEST(cost.linear_seconds == seconds + lm_head.seconds, tt::tolerance(1e-12));
  // The same FLOPs as the step-wide roofline counts; the transition makes it slower at 320 rows.
  const sim::StepCost aggregate = roofline.step_cost(builder.plan());
  BOOST_TEST(cost.flops - cost.attention_flops == flops + lm_head.flops, tt::tolerance(1e-12));
  BOOST_TEST(aggregate.flops - aggregate.attention_flops == flops + lm_head.flops, tt::tolerance(1e-12));
  BOOST_TEST(cost.linear_seconds > 1.2 * aggregate.linear_seconds);
  // Everything but the linear term is the roofline's.
  BOOST_TEST(cost.attention_seconds == aggregate.attention_seconds);
  BOOST_TEST(cost.all_reduce_seconds == aggregate.all_reduce_seconds);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm::test
