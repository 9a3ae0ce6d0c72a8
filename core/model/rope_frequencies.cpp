#include "core/model/rope_frequencies.h"

#include <cmath>
#include <numbers>

namespace pagedllm::model {
namespace {

// transformers' _compute_default_rope_parameters:
//   1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
// All in fp32: the exponent float(2j) / float(dim), the power with base rounded to fp32, the
// reciprocal.
std::vector<float> default_inv_freq(std::int32_t head_dim, double rope_theta) {
  const std::int32_t half = head_dim / 2;
  const float base = static_cast<float>(rope_theta);
  std::vector<float> inv_freq(static_cast<std::size_t>(half));
  for (std::int32_t j = 0; j < half; ++j) {
    const float exponent = static_cast<float>(2 * j) / static_cast<float>(head_dim);
    inv_freq[j] = 1.0f / std::pow(base, exponent);
  }
  return inv_freq;
}

// transformers' _compute_llama3_parameters, in the same fp32 operations (Python scalars are
// rounded to fp32 when they meet the fp32 tensor):
//   wavelen = 2 * math.pi / inv_freq
//   inv_freq_llama = where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
//   smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
//   smoothed = (1 - smooth) * inv_freq_llama / factor + smooth * inv_freq_llama
//   medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen)
//   inv_freq_llama = where(medium, smoothed, inv_freq_llama)
void apply_llama3_scaling(const RopeScaling& s, std::vector<float>& inv_freq) {
  const double old_context_len = static_cast<double>(s.original_max_position_embeddings);
  const float low_freq_wavelen = static_cast<float>(old_context_len / s.low_freq_factor);
  const float high_freq_wavelen = static_cast<float>(old_context_len / s.high_freq_factor);
  const float two_pi = static_cast<float>(2.0 * std::numbers::pi);
  const float factor = static_cast<float>(s.factor);
  const float old_len = static_cast<float>(old_context_len);
  const float low = static_cast<float>(s.low_freq_factor);
  const float high_minus_low = static_cast<float>(s.high_freq_factor - s.low_freq_factor);
  for (float& f : inv_freq) {
    const float wavelen = two_pi / f;
    float scaled = wavelen > low_freq_wavelen ? f / factor : f;
    const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    if (medium) {
      const float smooth = (old_len / wavelen - low) / high_minus_low;
      scaled = (1.0f - smooth) * scaled / factor + smooth * scaled;
    }
    f = scaled;
  }
}

}  // namespace

std::vector<float> rope_inv_freq(std::int32_t head_dim, double rope_theta, const RopeScaling& scaling) {
  std::vector<float> inv_freq = default_inv_freq(head_dim, rope_theta);
  switch (scaling.kind) {
    case RopeScaling::Kind::none:
      break;
    case RopeScaling::Kind::linear: {
      // transformers' _compute_linear_scaling_rope_parameters: inv_freq /= factor (fp32).
      const float factor = static_cast<float>(scaling.factor);
      for (float& f : inv_freq) f = f / factor;
      break;
    }
    case RopeScaling::Kind::llama3:
      apply_llama3_scaling(scaling, inv_freq);
      break;
  }
  return inv_freq;
}

}  // namespace pagedllm::model
