// The weights of a Llama-family model in host memory, under the internal naming of
// tensor_names.h, in fp32 (the CPU engine) or bf16 (what the CUDA engine uploads).
//
// Loading checks the file against the config: every tensor the config implies must be there
// with its exact shape; tensors a Llama-family forward does not use are listed, not loaded.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model/model_config.h"

namespace pagedllm::model {

class GgufFile;
class SafetensorsCheckpoint;

enum class WeightDType { f32, bf16 };

struct HostTensor {
  std::vector<std::int64_t> shape;  // row-major, outermost first
  WeightDType dtype = WeightDType::f32;
  std::vector<float> f32;           // the values when dtype == f32
  std::vector<std::uint16_t> bf16;  // the values when dtype == bf16 (bit patterns)

  std::int64_t num_elements() const noexcept;
};

struct WeightLoadOptions {
  WeightDType dtype = WeightDType::f32;
};

class ModelWeights {
 public:
  ModelConfig config;
  std::map<std::string, HostTensor> tensors;
  std::vector<std::string> ignored_tensors;  // in the file, not used by the forward pass
  std::string source;                        // the file (or directory) they came from

  // Throws std::out_of_range naming the tensor when absent.
  const HostTensor& at(const std::string& name) const;
  std::uint64_t num_parameters() const noexcept;
};

// GGUF: dequantizes every type to fp32 (then rounds to bf16 when asked), undoes llama.cpp's
// rotary row interleaving for "llama" files, and maps names to the internal ones.
ModelWeights load_weights(const GgufFile& file, const ModelConfig& config, const WeightLoadOptions& options = {});

// Hugging Face safetensors (single file or sharded), F32 / F16 / BF16.
ModelWeights load_weights(const SafetensorsCheckpoint& checkpoint, const ModelConfig& config,
                          const WeightLoadOptions& options = {});

}  // namespace pagedllm::model
