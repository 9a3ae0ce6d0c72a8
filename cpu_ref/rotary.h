// Rotary position embedding in Hugging Face's "rotate half" convention: element j of a head is
// paired with j + head_dim / 2 and rotated by the angle position * inv_freq[j]:
//   out[j]     = x[j] * cos - x[j + half] * sin
//   out[j + h] = x[j + half] * cos + x[j] * sin
// (HF: q * cos + rotate_half(q) * sin, rotate_half(x) = cat(-x2, x1); the same fp32 operations.)
//
// Frequencies come from core/model/rope_frequencies.h (fp32, as transformers computes them), and
// the angles as LlamaRotaryEmbedding.forward: freqs = float(position) * inv_freq[j] in
// fp32, then cos and sin in fp32 (attention scaling is 1 for these kinds).
//
// cos/sin tables are precomputed for positions [0, num_cached_positions); later positions are
// computed on the fly by the same function, so results are identical either way. Immutable
// after construction: apply() may be called from any number of threads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/model/model_config.h"

namespace pagedllm::cpu_ref {

struct RotaryConfig {
  std::int32_t head_dim = 0;  // even
  double rope_theta = 10000.0;
  model::RopeScaling scaling;
  std::int32_t num_cached_positions = 0;
};

// The rotary config of a model; caches min(max_position_embeddings, max_cached_positions).
RotaryConfig rotary_config(const model::ModelConfig& config, std::int32_t max_cached_positions = 32768);

class RotaryEmbedding {
 public:
  RotaryEmbedding() = default;  // head_dim 0: apply() must not be called
  explicit RotaryEmbedding(const RotaryConfig& config);

  std::int32_t head_dim() const noexcept { return head_dim_; }
  std::int32_t num_cached_positions() const noexcept { return num_cached_positions_; }
  // [head_dim / 2], after scaling.
  std::span<const float> inv_freq() const noexcept { return inv_freq_; }

  // cos and sin of position * inv_freq[j], j < head_dim / 2 (outputs [head_dim / 2] each).
  void cos_sin(std::int32_t position, float* cos, float* sin) const;

  // Rotates num_heads head vectors [num_heads][head_dim] of one token in place.
  void apply(float* heads, std::int32_t num_heads, std::int32_t position) const;

 private:
  void compute_cos_sin(std::int32_t position, float* cos, float* sin) const;

  std::int32_t head_dim_ = 0;
  std::int32_t num_cached_positions_ = 0;
  std::vector<float> inv_freq_;  // [head_dim / 2]
  std::vector<float> cos_;       // [num_cached_positions][head_dim / 2]
  std::vector<float> sin_;       // [num_cached_positions][head_dim / 2]
};

}  // namespace pagedllm::cpu_ref
