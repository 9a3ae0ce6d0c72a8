// libFuzzer target: the safetensors header parser must reject any byte string with
// ModelFormatError (any other exception or a crash is a finding) and never read out of bounds.
// What parses must be self-consistent: tensors inside the data section, sizes matching shapes,
// no two tensors sharing a byte.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/model/model_errors.h"
#include "core/model/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace model = pagedllm::model;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const model::SafetensorsHeader header = model::parse_safetensors_header(bytes, "fuzz.safetensors");
    if (header.data_offset + header.data_size != size) __builtin_trap();
    std::vector<const model::SafetensorsTensorInfo*> occupied;
    for (const model::SafetensorsTensorInfo& tensor : header.tensors) {
      if (tensor.begin > tensor.end || tensor.end > header.data_size) __builtin_trap();
      if (tensor.num_bytes() != tensor.num_elements * model::dtype_size(tensor.dtype)) __builtin_trap();
      if (header.find(tensor.name) != &tensor) __builtin_trap();
      if (tensor.num_bytes() != 0) occupied.push_back(&tensor);
      // Converting touches every byte of the tensor: ASan sees any out-of-range span.
      if (tensor.num_elements <= (1u << 16)) {
        const auto values =
            model::tensor_to_f32(tensor, bytes.subspan(header.data_offset + tensor.begin, tensor.num_bytes()));
        if (values.size() != tensor.num_elements) __builtin_trap();
      }
    }
    std::sort(occupied.begin(), occupied.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
    for (std::size_t i = 1; i < occupied.size(); ++i) {
      if (occupied[i]->begin < occupied[i - 1]->end) __builtin_trap();
    }
  } catch (const model::ModelFormatError&) {
  }
  return 0;
}
