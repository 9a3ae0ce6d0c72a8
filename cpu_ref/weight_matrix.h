// A weight matrix as the model file stores it (F32, F16, BF16 or a ggml quantized type), as the
// cpu_ref kernels read it: whole rows of whole blocks, decoded to fp32 by the same dequantizer
// the load-time fp32 path uses (core/model/dequantize.h), so either path sees identical values.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/model/dequantize.h"
#include "core/model/ggml_type.h"

namespace pagedllm::cpu_ref {

struct WeightMatrix {
  model::GgmlType type = model::GgmlType::f32;
  const std::byte* data = nullptr;  // [rows][row_bytes], not owned; fp32 data aligned to 4 bytes
  std::int64_t row_bytes = 0;       // bytes of one row (its values are whole blocks)

  // A dense fp32 matrix with rows of `row_length` values.
  static WeightMatrix f32(const float* values, std::int64_t row_length) noexcept {
    return {model::GgmlType::f32, reinterpret_cast<const std::byte*>(values),
            row_length * static_cast<std::int64_t>(sizeof(float))};
  }

  bool is_f32() const noexcept { return type == model::GgmlType::f32; }
  const float* f32_data() const noexcept { return reinterpret_cast<const float*>(data); }
};

// Decodes rows [first_row, first_row + num_rows) of `weight`, each `row_length` values, into
// `out` ([num_rows][row_length] fp32). `dequantize` is blocks_dequantizer(weight.type) and
// `block_size` that type's values per block, looked up once by the caller.
inline void decode_rows(const WeightMatrix& weight, model::DequantizeBlocksFn dequantize, std::int64_t block_size,
                        std::int64_t first_row, std::int64_t num_rows, std::int64_t row_length, float* out) noexcept {
  for (std::int64_t r = 0; r < num_rows; ++r) {
    dequantize(weight.data + (first_row + r) * weight.row_bytes, out + r * row_length,
               static_cast<std::size_t>(row_length / block_size));
  }
}

}  // namespace pagedllm::cpu_ref
