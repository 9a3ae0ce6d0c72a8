#include "cpu_ref/rotary.h"

#include <algorithm>
#include <cmath>

#include "core/common/check.h"
#include "core/model/rope_frequencies.h"

namespace pagedllm::cpu_ref {

RotaryConfig rotary_config(const model::ModelConfig& config, std::int32_t max_cached_positions) {
  RotaryConfig rotary;
  rotary.head_dim = static_cast<std::int32_t>(config.head_dim);
  rotary.rope_theta = config.rope_theta;
  rotary.scaling = config.rope_scaling;
  rotary.num_cached_positions =
      static_cast<std::int32_t>(std::clamp<std::int64_t>(config.max_position_embeddings, 0, max_cached_positions));
  return rotary;
}

RotaryEmbedding::RotaryEmbedding(const RotaryConfig& config)
    : head_dim_(config.head_dim), num_cached_positions_(config.num_cached_positions) {
  PAGEDLLM_ASSERT(head_dim_ > 0 && head_dim_ % 2 == 0, "rotary: head_dim must be positive and even");
  PAGEDLLM_ASSERT(num_cached_positions_ >= 0, "rotary: negative cache size");
  PAGEDLLM_ASSERT(config.rope_theta > 0.0, "rotary: rope_theta must be positive");
  inv_freq_ = model::rope_inv_freq(head_dim_, config.rope_theta, config.scaling);
  const std::size_t half = static_cast<std::size_t>(head_dim_ / 2);
  cos_.resize(static_cast<std::size_t>(num_cached_positions_) * half);
  sin_.resize(cos_.size());
  for (std::int32_t p = 0; p < num_cached_positions_; ++p) {
    compute_cos_sin(p, cos_.data() + p * half, sin_.data() + p * half);
  }
}

void RotaryEmbedding::compute_cos_sin(std::int32_t position, float* cos, float* sin) const {
  const float pos = static_cast<float>(position);
  for (std::size_t j = 0; j < inv_freq_.size(); ++j) {
    const float freq = inv_freq_[j] * pos;  // HF: inv_freq @ position_ids, one product
    cos[j] = std::cos(freq);
    sin[j] = std::sin(freq);
  }
}

void RotaryEmbedding::cos_sin(std::int32_t position, float* cos, float* sin) const {
  PAGEDLLM_ASSERT(position >= 0, "rotary: negative position");
  if (position < num_cached_positions_) {
    const std::size_t half = inv_freq_.size();
    std::copy_n(cos_.data() + static_cast<std::size_t>(position) * half, half, cos);
    std::copy_n(sin_.data() + static_cast<std::size_t>(position) * half, half, sin);
  } else {
    compute_cos_sin(position, cos, sin);
  }
}

void RotaryEmbedding::apply(float* heads, std::int32_t num_heads, std::int32_t position) const {
  PAGEDLLM_ASSERT(head_dim_ > 0, "rotary: default-constructed RotaryEmbedding");
  PAGEDLLM_ASSERT(position >= 0, "rotary: negative position");
  const std::int32_t half = head_dim_ / 2;
  const float* cos = nullptr;
  const float* sin = nullptr;
  std::vector<float> computed;  // only for positions past the cache
  if (position < num_cached_positions_) {
    cos = cos_.data() + static_cast<std::size_t>(position) * half;
    sin = sin_.data() + static_cast<std::size_t>(position) * half;
  } else {
    computed.resize(2 * static_cast<std::size_t>(half));
    compute_cos_sin(position, computed.data(), computed.data() + half);
    cos = computed.data();
    sin = computed.data() + half;
  }
  for (std::int32_t h = 0; h < num_heads; ++h) {
    float* x = heads + static_cast<std::size_t>(h) * head_dim_;
    for (std::int32_t j = 0; j < half; ++j) {
      const float x1 = x[j];
      const float x2 = x[j + half];
      x[j] = x1 * cos[j] - x2 * sin[j];         // q * cos + (-x2) * sin
      x[j + half] = x2 * cos[j] + x1 * sin[j];  // q * cos + x1 * sin
    }
  }
}

}  // namespace pagedllm::cpu_ref
