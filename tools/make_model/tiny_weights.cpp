#include "tools/make_model/tiny_weights.h"

#include <cmath>

#include "core/common/mix.h"

namespace pagedllm::make_model {
namespace {

std::uint64_t name_hash(const std::string& name) {
  std::uint64_t hash = 0x9e3779b97f4a7c15ULL;
  for (unsigned char c : name) hash = mix64(hash ^ c);
  return hash;
}

// Uniform in [-1, 1), from the top 24 bits (exactly representable in fp32).
float unit_uniform(std::uint64_t bits) { return static_cast<float>(bits >> 40) / static_cast<float>(1 << 23) - 1.0f; }

}  // namespace

std::vector<float> tiny_tensor_values(std::uint64_t seed, const model::TensorSpec& spec) {
  std::int64_t count = 1;
  for (std::int64_t dim : spec.shape) count *= dim;
  const bool is_norm = spec.name.ends_with("norm.weight");
  const bool is_bias = spec.name.ends_with(".bias");
  const bool is_embedding = spec.name == "model.embed_tokens.weight";
  // A uniform variable on [-a, a) has standard deviation a / sqrt(3).
  float amplitude = 0.02f;
  if (is_embedding) {
    amplitude = std::sqrt(3.0f);
  } else if (!is_norm && !is_bias) {
    amplitude = std::sqrt(3.0f / static_cast<float>(spec.shape.back()));
  } else if (is_norm) {
    amplitude = 0.1f;
  }
  const std::uint64_t stream = mix64(seed ^ name_hash(spec.name));
  std::vector<float> values(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float u = unit_uniform(mix64(stream + i));
    values[i] = is_norm ? 1.0f + amplitude * u : amplitude * u;
  }
  return values;
}

}  // namespace pagedllm::make_model
