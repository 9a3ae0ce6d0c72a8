// RMS normalization per row, as Hugging Face's LlamaRMSNorm in fp32:
//   y = weight * (x * (1 / sqrt(mean(x^2) + eps)))
// mean(x^2) is dot(x, x) / dim with cpu_ref/dot.h's fixed order, so a row's result does not
// depend on the other rows, its place in the batch or the thread count.
#pragma once

#include <cstdint>

namespace pagedllm::cpu_ref {

// Views only. y may be x itself (in place); otherwise they must not overlap.
struct RmsNormArgs {
  const float* x = nullptr;       // [num_rows, dim]
  const float* weight = nullptr;  // [dim]
  float* y = nullptr;             // [num_rows, dim], written
  std::int64_t num_rows = 0;
  std::int64_t dim = 0;
  float eps = 1e-6f;  // ModelConfig::rms_norm_eps rounded to fp32, as HF adds it
};

void rms_norm(const RmsNormArgs& args);

}  // namespace pagedllm::cpu_ref
