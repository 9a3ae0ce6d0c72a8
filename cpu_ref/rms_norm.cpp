#include "cpu_ref/rms_norm.h"

#include <Eigen/Core>
#include <cmath>

#include "core/common/check.h"
#include "cpu_ref/dot.h"

namespace pagedllm::cpu_ref {

void rms_norm(const RmsNormArgs& args) {
  PAGEDLLM_ASSERT(args.num_rows >= 0 && args.dim > 0, "rms_norm: bad shape");
  PAGEDLLM_ASSERT(args.x != nullptr && args.weight != nullptr && args.y != nullptr, "rms_norm: null pointer");
  using ConstRow = Eigen::Map<const Eigen::ArrayXf>;
  const ConstRow weight(args.weight, args.dim);
  for (std::int64_t r = 0; r < args.num_rows; ++r) {
    const float* x = args.x + r * args.dim;
    // The only reduction: fixed order (dot.h). Not Eigen's sum, whose order follows alignment.
    const float variance = dot(x, x, args.dim) / static_cast<float>(args.dim);
    const float inv_rms = 1.0f / std::sqrt(variance + args.eps);
    // Elementwise from here: each element is (x * inv_rms) * weight, whatever Eigen vectorizes.
    Eigen::Map<Eigen::ArrayXf> y(args.y + r * args.dim, args.dim);
    y = (ConstRow(x, args.dim) * inv_rms) * weight;
  }
}

}  // namespace pagedllm::cpu_ref
