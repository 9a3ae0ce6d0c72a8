#include "cpu_ref/activation.h"

#include <Eigen/Core>
#include <algorithm>

#include "core/common/check.h"

namespace pagedllm::cpu_ref {

void swiglu(const SwigluArgs& args) {
  PAGEDLLM_ASSERT(args.n >= 0, "swiglu: negative size");
  if (args.n == 0) return;
  PAGEDLLM_ASSERT(args.gate != nullptr && args.up != nullptr && args.out != nullptr, "swiglu: null pointer");
  // Elementwise, so it splits over the threads without changing a value; about 3.4 ns an element
  // (one std::exp), so a step of 8 or more rows (12,288 elements per layer in SmolLM2) pays for
  // the region, where one row's 1,536 would not.
  constexpr std::int64_t kChunk = 2048;
  const std::int64_t num_chunks = (args.n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (num_chunks >= 4)
  for (std::int64_t chunk = 0; chunk < num_chunks; ++chunk) {
    const std::int64_t begin = chunk * kChunk;
    const std::int64_t size = std::min(kChunk, args.n - begin);
    const Eigen::Map<const Eigen::ArrayXf> gate(args.gate + begin, size);
    const Eigen::Map<const Eigen::ArrayXf> up(args.up + begin, size);
    Eigen::Map<Eigen::ArrayXf> out(args.out + begin, size);
    // unaryExpr with a scalar function has no packet path: silu runs per element as written.
    out = gate.unaryExpr([](float g) { return silu(g); }) * up;
  }
}

}  // namespace pagedllm::cpu_ref
