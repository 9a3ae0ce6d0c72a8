// libFuzzer target: the GGUF header parser must reject any byte string with ModelFormatError
// and never read out of bounds, overflow, or allocate without bound. Run by tools/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/model/gguf_file.h"
#include "core/model/model_errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const pagedllm::model::GgufHeader header = pagedllm::model::parse_gguf_header(bytes, "fuzz.gguf");
    // Whatever parses must describe tensors that lie inside the input.
    for (const auto& tensor : header.tensors) {
      if (header.data_offset + tensor.offset + tensor.num_bytes > size) __builtin_trap();
    }
  } catch (const pagedllm::model::ModelFormatError&) {
  }
  return 0;
}
