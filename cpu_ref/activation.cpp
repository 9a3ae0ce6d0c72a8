#include "cpu_ref/activation.h"

#include <Eigen/Core>

#include "core/common/check.h"

namespace pagedllm::cpu_ref {

void swiglu(const SwigluArgs& args) {
  PAGEDLLM_ASSERT(args.n >= 0, "swiglu: negative size");
  if (args.n == 0) return;
  PAGEDLLM_ASSERT(args.gate != nullptr && args.up != nullptr && args.out != nullptr, "swiglu: null pointer");
  const Eigen::Map<const Eigen::ArrayXf> gate(args.gate, args.n);
  const Eigen::Map<const Eigen::ArrayXf> up(args.up, args.n);
  Eigen::Map<Eigen::ArrayXf> out(args.out, args.n);
  // unaryExpr with a scalar function has no packet path: silu runs per element as written.
  out = gate.unaryExpr([](float g) { return silu(g); }) * up;
}

}  // namespace pagedllm::cpu_ref
