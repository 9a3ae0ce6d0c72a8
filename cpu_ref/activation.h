// SwiGLU, the gate of the Llama MLP: out = silu(gate) * up, silu(x) = x / (1 + exp(-x)), fp32.
// Elementwise, one std::exp per element (never a vectorized approximation, whose result could
// depend on whether an element falls in a vector body or a scalar tail).
#pragma once

#include <cmath>
#include <cstdint>

namespace pagedllm::cpu_ref {

inline float silu(float x) noexcept { return x / (1.0f + std::exp(-x)); }

// Views only: gate, up, out are [n]; out may be gate or up (in place).
struct SwigluArgs {
  const float* gate = nullptr;
  const float* up = nullptr;
  float* out = nullptr;
  std::int64_t n = 0;
};

void swiglu(const SwigluArgs& args);

}  // namespace pagedllm::cpu_ref
