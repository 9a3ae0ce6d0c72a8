#include "sim/gemm_cost.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace pagedllm::sim {

void validate(const GemmCostConstants& constants) {
  const auto fraction = [](double value, const char* name) {
    if (!(value > 0.0 && value <= 1.0)) {
      throw std::invalid_argument(std::string("gemm cost: ") + name + " must be in (0, 1], got " +
                                  std::to_string(value));
    }
  };
  fraction(constants.compute_efficiency, "compute_efficiency");
  fraction(constants.memory_efficiency, "memory_efficiency");
  if (!(constants.overlap_exponent >= 1.0)) {
    throw std::invalid_argument("gemm cost: overlap_exponent must be at least 1, got " +
                                std::to_string(constants.overlap_exponent));
  }
  if (!(constants.kernel_latency_seconds >= 0.0)) {
    throw std::invalid_argument("gemm cost: kernel_latency_seconds must not be negative, got " +
                                std::to_string(constants.kernel_latency_seconds));
  }
}

std::array<GemmShape, 4> layer_gemm_shapes(int64_t tokens, const LayerDims& layer, int64_t tensor_parallel) {
  const int64_t q = layer.num_heads / tensor_parallel * layer.head_dim;
  const int64_t kv = std::max<int64_t>(1, layer.num_kv_heads / tensor_parallel) * layer.head_dim;
  const int64_t mlp = layer.intermediate_size / tensor_parallel;
  return {{{tokens, q + 2 * kv, layer.hidden_size},
           {tokens, layer.hidden_size, q},
           {tokens, (layer.gated_mlp ? 2 : 1) * mlp, layer.hidden_size},
           {tokens, layer.hidden_size, mlp}}};
}

GemmCost gemm_cost(const GemmShape& shape, const HardwareSpec& hardware, const GemmCostConstants& constants,
                   double weight_bytes_per_element, double activation_bytes_per_element) {
  GemmCost cost;
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0) return cost;
  const auto m = static_cast<double>(shape.m);
  const auto n = static_cast<double>(shape.n);
  const auto k = static_cast<double>(shape.k);
  cost.flops = 2.0 * m * n * k;
  cost.weight_bytes = n * k * weight_bytes_per_element;
  const double activation_bytes = (m * k + m * n) * activation_bytes_per_element;
  cost.compute_seconds = cost.flops / (hardware.peak_flops * constants.compute_efficiency);
  cost.memory_seconds =
      (cost.weight_bytes + activation_bytes) / (hardware.memory_bandwidth * constants.memory_efficiency);
  const double p = constants.overlap_exponent;
  // Scaled by the larger side, so that a large p neither overflows nor loses the smaller side.
  const double larger = std::max(cost.compute_seconds, cost.memory_seconds);
  const double overlapped =
      larger *
      std::pow(std::pow(cost.compute_seconds / larger, p) + std::pow(cost.memory_seconds / larger, p), 1.0 / p);
  cost.seconds = constants.kernel_latency_seconds + overlapped;
  return cost;
}

}  // namespace pagedllm::sim
