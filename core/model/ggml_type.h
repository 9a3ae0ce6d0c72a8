// The ggml tensor types that GGUF files carry, with their block geometry.
//
// Quantized types store blocks of `block_size` values in `type_size` bytes; the numeric values of
// the enumerators are the on-disk codes of the GGUF format (ggml's `ggml_type`).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string_view>

namespace pagedllm::model {

enum class GgmlType : std::uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  bf16 = 30,
};

struct GgmlTypeTraits {
  std::string_view name;     // as llama.cpp prints it: "Q4_1", "F32", ...
  std::uint32_t block_size;  // values per block (1 for unquantized types)
  std::uint32_t type_size;   // bytes per block
  bool dequantizable;        // pagedllm can turn it into fp32
};

// Traits of a known type; nullopt for a code pagedllm does not know (the caller names it).
std::optional<GgmlTypeTraits> ggml_type_traits(std::uint32_t code) noexcept;

// Prints the type's name ("Q4_1"), or "ggml type <code>" for an unknown code (test messages, logs).
std::ostream& operator<<(std::ostream& out, GgmlType type);

}  // namespace pagedllm::model
