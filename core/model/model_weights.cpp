#include "core/model/model_weights.h"

#include <algorithm>
#include <cstdio>
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

// A matrix kept as stored: `bytes` in place (inside `mapping`, which `weights` then keeps), or
// `reordered` when loading moved its rows. fp32 data must be aligned for the kernels' float
// loads; a misaligned F32 tensor (safetensors does not align) is copied.
HostTensor stored_tensor(ModelWeights& weights, const std::shared_ptr<const MappedFile>& mapping, GgmlType type,
                         std::span<const std::byte> bytes, std::vector<std::int64_t> shape,
                         std::vector<std::byte> reordered = {}) {
  HostTensor tensor;
  tensor.shape = std::move(shape);
  tensor.dtype = WeightDType::stored;
  tensor.stored_type = type;
  const bool misaligned = reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(float) != 0;
  if (reordered.empty() && type == GgmlType::f32 && misaligned) reordered.assign(bytes.begin(), bytes.end());
  if (!reordered.empty()) {
    tensor.reordered = std::make_shared<const std::vector<std::byte>>(std::move(reordered));
    tensor.stored = *tensor.reordered;
    return tensor;
  }
  tensor.stored = bytes;
  if (std::find(weights.mappings.begin(), weights.mappings.end(), mapping) == weights.mappings.end()) {
    weights.mappings.push_back(mapping);
  }
  return tensor;
}

GgmlType ggml_type_of(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::f32:
      return GgmlType::f32;
    case SafetensorsDtype::f16:
      return GgmlType::f16;
    case SafetensorsDtype::bf16:
      return GgmlType::bf16;
  }
  throw std::logic_error("ggml_type_of: unknown safetensors dtype");
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

std::uint64_t HostTensor::num_bytes() const noexcept {
  return f32.size() * sizeof(float) + bf16.size() * sizeof(std::uint16_t) + stored.size();
}

WeightMemory ModelWeights::memory() const noexcept {
  WeightMemory memory;
  for (const auto& [name, tensor] : tensors) {
    const bool in_place = tensor.dtype == WeightDType::stored && tensor.reordered == nullptr;
    (in_place ? memory.mapped_bytes : memory.copied_bytes) += tensor.num_bytes();
  }
  return memory;
}

std::string describe_weight_memory(const WeightMemory& memory) {
  constexpr double kMiB = 1024.0 * 1024.0;
  char text[160];
  std::snprintf(text, sizeof text, "the weights take %.1f MiB (%.1f MiB mapped from the file, %.1f MiB copied)",
                static_cast<double>(memory.mapped_bytes + memory.copied_bytes) / kMiB,
                static_cast<double>(memory.mapped_bytes) / kMiB, static_cast<double>(memory.copied_bytes) / kMiB);
  return text;
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
    const GgmlTypeTraits traits = dequantizable_traits(file, info);
    // Rows in llama.cpp's rotary order: heads of the projection (0: none).
    const std::int64_t rotary_heads = !interleaved_rotary                ? 0
                                      : name->ends_with("q_proj.weight") ? config.num_heads
                                      : name->ends_with("k_proj.weight") ? config.num_kv_heads
                                                                         : 0;
    if (options.dtype == WeightDType::stored && shape.size() == 2) {
      const std::span<const std::byte> bytes = file.tensor_data(info);
      std::vector<std::byte> reordered;
      if (rotary_heads != 0) {
        const auto row_bytes = static_cast<std::int64_t>(shape[1] / traits.block_size * traits.type_size);
        reordered = deinterleave_rotary_rows(bytes, rotary_heads, config.head_dim, row_bytes);
      }
      weights.tensors.emplace(
          *name, stored_tensor(weights, file.mapping(), info.type, bytes, std::move(shape), std::move(reordered)));
      continue;
    }
    std::vector<float> values = dequantize_tensor(file, info);
    if (rotary_heads != 0) deinterleave_rotary_rows(values, rotary_heads, config.head_dim, config.hidden_size);
    const WeightDType dtype = options.dtype == WeightDType::stored ? WeightDType::f32 : options.dtype;
    weights.tensors.emplace(*name, to_host_tensor(std::move(values), std::move(shape), dtype));
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
    if (options.dtype == WeightDType::stored && spec.shape.size() == 2) {
      weights.tensors.emplace(spec.name,
                              stored_tensor(weights, checkpoint.mapping(spec.name), ggml_type_of(tensor->dtype),
                                            checkpoint.tensor_data(spec.name), spec.shape));
      continue;
    }
    if (options.dtype == WeightDType::bf16) {
      // Straight to bf16 (bf16 copied as stored): the same values as through fp32, without a
      // 4-byte copy of every weight (a 1.6B bf16 checkpoint: 6.8-8.3 -> 1.7-2.7 s on the dev VM).
      HostTensor values;
      values.shape = spec.shape;
      values.dtype = WeightDType::bf16;
      values.bf16 = checkpoint.read_bf16(spec.name);
      weights.tensors.emplace(spec.name, std::move(values));
      continue;
    }
    const WeightDType dtype = options.dtype == WeightDType::stored ? WeightDType::f32 : options.dtype;
    weights.tensors.emplace(spec.name, to_host_tensor(checkpoint.read_f32(spec.name), spec.shape, dtype));
  }
  for (const std::string& name : checkpoint.tensor_names()) {
    if (expected.count(name) == 0) weights.ignored_tensors.push_back(name);
  }
  require_complete(weights, specs, checkpoint.source(), /*gguf_names=*/false);
  return weights;
}

}  // namespace pagedllm::model
