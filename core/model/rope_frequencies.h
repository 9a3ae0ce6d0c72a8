// Rotary position embedding's inverse frequencies [head_dim / 2], in fp32 exactly as transformers
// computes them (modeling_rope_utils.py), so that every executor rotates by the same angles:
//   default: inv_freq[j] = 1 / theta^(float(2j) / head_dim)
//   linear:  inv_freq[j] / factor
//   llama3:  _compute_llama3_parameters: wavelengths 2 pi / inv_freq shorter than
//            original_max_position_embeddings / high_freq_factor keep their frequency, longer
//            than original / low_freq_factor are divided by factor, those between are blended.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/model_config.h"

namespace pagedllm::model {

std::vector<float> rope_inv_freq(std::int32_t head_dim, double rope_theta, const RopeScaling& scaling);
inline std::vector<float> rope_inv_freq(const ModelConfig& config) {
  return rope_inv_freq(static_cast<std::int32_t>(config.head_dim), config.rope_theta, config.rope_scaling);
}

}  // namespace pagedllm::model
