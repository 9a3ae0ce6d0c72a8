// Deterministic pseudo-random weights for the tiny model (see tiny_model.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/tensor_names.h"

namespace pagedllm::make_model {

// The values of one tensor, row-major, a function of (seed, tensor name, index) only.
// Matrices: uniform with standard deviation 1/sqrt(fan in); norm weights: 1 +- 0.1 uniform;
// biases: +- 0.02 uniform; embeddings: standard deviation 1 (RMSNorm follows).
std::vector<float> tiny_tensor_values(std::uint64_t seed, const model::TensorSpec& spec);

}  // namespace pagedllm::make_model
