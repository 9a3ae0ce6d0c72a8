#include "core/model/model_weights.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "core/model/dequantize.h"
#include "core/model/gguf_file.h"
#include "core/model/half.h"
#include "core/model/model_errors.h"
#include "core/model/safetensors_checkpoint.h"
#include "core/model/tensor_names.h"

namespace pagedllm::model {
namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

HostTensor to_host_tensor(std::vector<float> values, std::vector<std::int64_t> shape, WeightDType dtype) {
  HostTensor tensor;
  tensor.shape = std::move(shape);
  tensor.dtype = dtype;
  if (dtype == WeightDType::f32) {
    tensor.f32 = std::move(values);
  } else {
    tensor.bf16.resize(values.size());
    std::transform(values.begin(), values.end(), tensor.bf16.begin(), float_to_bf16);
  }
  return tensor;
}

// Checks that `loaded` holds every tensor `config` implies; throws naming the first one missing.
void require_complete(const ModelWeights& weights, const std::vector<TensorSpec>& specs, const std::string& file,
                      bool gguf_names) {
  for (const TensorSpec& spec : specs) {
    if (weights.tensors.count(spec.name) == 0) {
      const std::string name = gguf_names ? gguf_name_from_internal(spec.name) : spec.name;
      throw ModelFormatError(file, "tensor '" + name + "'",
                             "missing (the config implies it, with shape " + shape_text(spec.shape) + ")");
    }
  }
}

}  // namespace

std::int64_t HostTensor::num_elements() const noexcept {
  std::int64_t count = 1;
  for (std::int64_t dim : shape) count *= dim;
  return count;
}

const HostTensor& ModelWeights::at(const std::string& name) const {
  const auto it = tensors.find(name);
  if (it == tensors.end()) throw std::out_of_range("model weights: no tensor '" + name + "'");
  return it->second;
}

std::uint64_t ModelWeights::num_parameters() const noexcept {
  std::uint64_t count = 0;
  for (const auto& [name, tensor] : tensors) count += static_cast<std::uint64_t>(tensor.num_elements());
  return count;
}

ModelWeights load_weights(const GgufFile& file, const ModelConfig& config, const WeightLoadOptions& options) {
  const std::vector<TensorSpec> specs = expected_tensors(config);
  std::map<std::string, const TensorSpec*> spec_by_name;
  for (const TensorSpec& spec : specs) spec_by_name[spec.name] = &spec;
  // llama.cpp interleaves rotary pairs only for the "llama" architecture (Qwen2 uses NeoX order).
  const bool interleaved_rotary = file.find_string("general.architecture").value_or("") == "llama";

  ModelWeights weights;
  weights.config = config;
  weights.source = file.path();
  for (const GgufTensorInfo& info : file.tensors()) {
    const std::optional<std::string> name = internal_name_from_gguf(info.name);
    const auto spec = name ? spec_by_name.find(*name) : spec_by_name.end();
    if (spec == spec_by_name.end()) {
      weights.ignored_tensors.push_back(info.name);
      continue;
    }
    std::vector<std::int64_t> shape(info.dims.rbegin(), info.dims.rend());
    if (shape != spec->second->shape) {
      throw ModelFormatError(file.path(), "tensor '" + info.name + "'",
                             "expected shape " + shape_text(spec->second->shape) +
                                 " (outermost first) for this config, found " + shape_text(shape));
    }
    std::vector<float> values = dequantize_tensor(file, info);
    if (interleaved_rotary && name->ends_with("q_proj.weight")) {
      deinterleave_rotary_rows(values, config.num_heads, config.head_dim, config.hidden_size);
    } else if (interleaved_rotary && name->ends_with("k_proj.weight")) {
      deinterleave_rotary_rows(values, config.num_kv_heads, config.head_dim, config.hidden_size);
    }
    weights.tensors.emplace(*name, to_host_tensor(std::move(values), std::move(shape), options.dtype));
  }
  require_complete(weights, specs, file.path(), /*gguf_names=*/true);
  return weights;
}

ModelWeights load_weights(const SafetensorsCheckpoint& checkpoint, const ModelConfig& config,
                          const WeightLoadOptions& options) {
  const std::vector<TensorSpec> specs = expected_tensors(config);
  ModelWeights weights;
  weights.config = config;
  weights.source = checkpoint.source();
  std::set<std::string> expected;
  for (const TensorSpec& spec : specs) {
    expected.insert(spec.name);
    const SafetensorsTensorInfo* tensor = checkpoint.find_tensor(spec.name);
    if (tensor == nullptr) continue;  // reported by require_complete with the expected shape
    const std::vector<std::int64_t> shape(tensor->shape.begin(), tensor->shape.end());
    if (shape != spec.shape) {
      throw ModelFormatError(
          checkpoint.shard_path(spec.name), "tensor '" + spec.name + "'",
          "expected shape " + shape_text(spec.shape) + " for this config, found " + shape_text(shape));
    }
    weights.tensors.emplace(spec.name, to_host_tensor(checkpoint.read_f32(spec.name), spec.shape, options.dtype));
  }
  for (const std::string& name : checkpoint.tensor_names()) {
    if (expected.count(name) == 0) weights.ignored_tensors.push_back(name);
  }
  require_complete(weights, specs, checkpoint.source(), /*gguf_names=*/false);
  return weights;
}

}  // namespace pagedllm::model
