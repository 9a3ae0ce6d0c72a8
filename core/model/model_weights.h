// The weights of a Llama-family model in host memory, under the internal naming of
// tensor_names.h: as the file stores them (what the CPU engine computes from), in fp32 (its
// test oracle) or in bf16 (what the CUDA engine uploads).
//
// Loading checks the file against the config: every tensor the config implies must be there
// with its exact shape; tensors a Llama-family forward does not use are listed, not loaded.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/model/ggml_type.h"
#include "core/model/mapped_file.h"
#include "core/model/model_config.h"

namespace pagedllm::model {

class GgufFile;
class SafetensorsCheckpoint;

enum class WeightDType {
  f32,     // every tensor dequantized to fp32
  bf16,    // every tensor dequantized, then rounded to bf16
  stored,  // matrices in their stored type, read in place; vectors (norms, biases) in fp32
};

struct HostTensor {
  std::vector<std::int64_t> shape;  // row-major, outermost first
  WeightDType dtype = WeightDType::f32;
  std::vector<float> f32;           // the values when dtype == f32
  std::vector<std::uint16_t> bf16;  // the values when dtype == bf16 (bit patterns)
  // dtype == stored: a matrix [shape[0], shape[1]] in ggml type `stored_type`, row-major, each row
  // whole blocks. `stored` points into a mapping that ModelWeights::mappings keeps, or into
  // `reordered` when loading had to move rows (llama.cpp's rotary row order).
  GgmlType stored_type = GgmlType::f32;
  std::span<const std::byte> stored{};
  std::shared_ptr<const std::vector<std::byte>> reordered{};

  std::int64_t num_elements() const noexcept;
  std::uint64_t num_bytes() const noexcept;  // what the values take in memory
};

// What loaded weights take in host memory.
struct WeightMemory {
  std::uint64_t mapped_bytes = 0;  // read in place from the file (resident once touched)
  std::uint64_t copied_bytes = 0;  // dequantized or reordered copies
};

struct WeightLoadOptions {
  WeightDType dtype = WeightDType::stored;  // what the CPU engine computes from
};

class ModelWeights {
 public:
  ModelConfig config;
  std::map<std::string, HostTensor> tensors;
  std::vector<std::string> ignored_tensors;                 // in the file, not used by the forward pass
  std::string source;                                       // the file (or directory) they came from
  std::vector<std::shared_ptr<const MappedFile>> mappings;  // what stored tensors point into

  // Throws std::out_of_range naming the tensor when absent.
  const HostTensor& at(const std::string& name) const;
  std::uint64_t num_parameters() const noexcept;
  WeightMemory memory() const noexcept;
};

// "the weights take 84.1 MiB (84.0 MiB mapped from the file, 0.1 MiB copied)": startup lines.
std::string describe_weight_memory(const WeightMemory& memory);

// GGUF: every type the engine can dequantize, kept stored or dequantized as options.dtype asks;
// undoes llama.cpp's rotary row interleaving for "llama" files, and maps names to the internal
// ones. A tensor of a type that cannot be dequantized is a ModelFormatError naming it and its type.
ModelWeights load_weights(const GgufFile& file, const ModelConfig& config, const WeightLoadOptions& options = {});

// Hugging Face safetensors (single file or sharded), F32 / F16 / BF16.
ModelWeights load_weights(const SafetensorsCheckpoint& checkpoint, const ModelConfig& config,
                          const WeightLoadOptions& options = {});

}  // namespace pagedllm::model
