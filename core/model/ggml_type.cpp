#include "core/model/ggml_type.h"

#include <ostream>

namespace pagedllm::model {

// Block geometry as ggml defines it (ggml-common.h): the K-quants use super-blocks of 256 values.
std::optional<GgmlTypeTraits> ggml_type_traits(std::uint32_t code) noexcept {
  switch (static_cast<GgmlType>(code)) {
    case GgmlType::f32:
      return GgmlTypeTraits{"F32", 1, 4, true};
    case GgmlType::f16:
      return GgmlTypeTraits{"F16", 1, 2, true};
    case GgmlType::bf16:
      return GgmlTypeTraits{"BF16", 1, 2, true};
    case GgmlType::q4_0:
      return GgmlTypeTraits{"Q4_0", 32, 2 + 16, true};
    case GgmlType::q4_1:
      return GgmlTypeTraits{"Q4_1", 32, 2 + 2 + 16, true};
    case GgmlType::q5_0:
      return GgmlTypeTraits{"Q5_0", 32, 2 + 4 + 16, true};
    case GgmlType::q5_1:
      return GgmlTypeTraits{"Q5_1", 32, 2 + 2 + 4 + 16, true};
    case GgmlType::q8_0:
      return GgmlTypeTraits{"Q8_0", 32, 2 + 32, true};
    // Q8_1 is ggml's activation format for dot products; no model stores weights in it.
    case GgmlType::q8_1:
      return GgmlTypeTraits{"Q8_1", 32, 4 + 4 + 32, false};
    case GgmlType::q2_k:
      return GgmlTypeTraits{"Q2_K", 256, 256 / 16 + 256 / 4 + 2 + 2, true};
    case GgmlType::q3_k:
      return GgmlTypeTraits{"Q3_K", 256, 256 / 8 + 256 / 4 + 12 + 2, true};
    case GgmlType::q4_k:
      return GgmlTypeTraits{"Q4_K", 256, 2 + 2 + 12 + 256 / 2, true};
    case GgmlType::q5_k:
      return GgmlTypeTraits{"Q5_K", 256, 2 + 2 + 12 + 256 / 8 + 256 / 2, true};
    case GgmlType::q6_k:
      return GgmlTypeTraits{"Q6_K", 256, 256 / 2 + 256 / 4 + 256 / 16 + 2, true};
    case GgmlType::q8_k:
      return GgmlTypeTraits{"Q8_K", 256, 4 + 256 + 256 / 16 * 2, true};
  }
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& out, GgmlType type) {
  const auto code = static_cast<std::uint32_t>(type);
  if (const std::optional<GgmlTypeTraits> traits = ggml_type_traits(code)) return out << traits->name;
  return out << "ggml type " << code;
}

}  // namespace pagedllm::model
