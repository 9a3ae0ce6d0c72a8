#include "cuda/device_model.h"

#include <stdexcept>

#include "core/model/half.h"
#include "core/model/rope_frequencies.h"
#include "core/model/tensor_names.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/fill_random.h"

namespace pagedllm::cuda {

namespace {

std::size_t align_up(std::size_t value, std::size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Tensors that continue the fused matrix (or bias vector) begun by the tensor before them.
bool continues_previous(const std::string& name) {
  return ends_with(name, "self_attn.k_proj.weight") || ends_with(name, "self_attn.v_proj.weight") ||
         ends_with(name, "self_attn.k_proj.bias") || ends_with(name, "self_attn.v_proj.bias") ||
         ends_with(name, "mlp.up_proj.weight");
}

}  // namespace

DeviceWeightLayout plan_device_weights(const model::ModelConfig& config) {
  DeviceWeightLayout layout;
  layout.layers.resize(static_cast<std::size_t>(config.num_layers));
  std::size_t cursor = 0;
  for (const model::TensorSpec& spec : model::expected_tensors(config)) {
    std::size_t elements = 1;
    for (const std::int64_t extent : spec.shape) elements *= static_cast<std::size_t>(extent);
    const std::size_t offset = continues_previous(spec.name) ? cursor : align_up(cursor, kWeightAlignment);
    layout.tensors.push_back({spec.name, offset, elements});
    cursor = offset + elements * kDTypeBytes;

    const std::string& name = spec.name;
    if (name == "model.embed_tokens.weight") {
      layout.embedding = offset;
    } else if (name == "model.norm.weight") {
      layout.final_norm = offset;
    } else if (name == "lm_head.weight") {
      layout.lm_head = offset;
    } else {
      // "model.layers.{i}.<part>"
      const std::size_t first = std::string("model.layers.").size();
      const std::size_t dot = name.find('.', first);
      LayerOffsets& layer = layout.layers.at(std::stoul(name.substr(first, dot - first)));
      const std::string part = name.substr(dot + 1);
      if (part == "input_layernorm.weight") layer.input_norm = offset;
      if (part == "self_attn.q_proj.weight") layer.qkv = offset;
      if (part == "self_attn.q_proj.bias") layer.qkv_bias = offset;
      if (part == "self_attn.o_proj.weight") layer.o_proj = offset;
      if (part == "post_attention_layernorm.weight") layer.post_norm = offset;
      if (part == "mlp.gate_proj.weight") layer.gate_up = offset;
      if (part == "mlp.down_proj.weight") layer.down = offset;
    }
  }
  if (config.tie_word_embeddings) layout.lm_head = layout.embedding;
  layout.total_bytes = align_up(cursor, kWeightAlignment);
  return layout;
}

std::vector<std::uint16_t> to_device_bits(const model::HostTensor& tensor, DType dtype) {
  const auto count = static_cast<std::size_t>(tensor.num_elements());
  std::vector<std::uint16_t> bits(count);
  if (tensor.dtype == model::WeightDType::bf16) {
    if (tensor.bf16.size() != count) throw std::invalid_argument("to_device_bits: bf16 tensor of the wrong size");
    if (dtype == DType::bf16) return tensor.bf16;
    for (std::size_t i = 0; i < count; ++i) bits[i] = model::float_to_fp16(model::bf16_to_float(tensor.bf16[i]));
    return bits;
  }
  if (tensor.f32.size() != count) throw std::invalid_argument("to_device_bits: fp32 tensor of the wrong size");
  for (std::size_t i = 0; i < count; ++i) {
    bits[i] = dtype == DType::bf16 ? model::float_to_bf16(tensor.f32[i]) : model::float_to_fp16(tensor.f32[i]);
  }
  return bits;
}

DeviceModel::DeviceModel(const model::ModelWeights& weights, DType dtype) : config_(weights.config), dtype_(dtype) {
  const DeviceWeightLayout layout = plan_device_weights(config_);
  storage_ = DeviceBuffer(layout.total_bytes);
  auto* base = static_cast<char*>(storage_.get());
  for (const WeightPlacement& placement : layout.tensors) {
    const model::HostTensor& tensor = weights.at(placement.name);
    if (static_cast<std::size_t>(tensor.num_elements()) != placement.elements) {
      throw std::invalid_argument("DeviceModel: " + placement.name + " has " + std::to_string(tensor.num_elements()) +
                                  " elements, the config implies " + std::to_string(placement.elements));
    }
    const std::vector<std::uint16_t> bits = to_device_bits(tensor, dtype);
    // Host -> device: elements * 2 bytes, once per tensor at load.
    PAGEDLLM_CUDA_CHECK(
        cudaMemcpy(base + placement.offset, bits.data(), bits.size() * sizeof(std::uint16_t), cudaMemcpyHostToDevice));
  }
  bind(layout);
}

DeviceModel::DeviceModel(const model::ModelConfig& config, DType dtype, const RandomWeights& random)
    : config_(config), dtype_(dtype) {
  const DeviceWeightLayout layout = plan_device_weights(config_);
  storage_ = DeviceBuffer(layout.total_bytes);
  auto* base = static_cast<char*>(storage_.get());
  std::uint64_t stream = 0;
  for (const WeightPlacement& placement : layout.tensors) {
    const bool norm = placement.name.find("norm") != std::string::npos;
    fill_random(FillRandomParams{.dtype = dtype,
                                 .num_elements = static_cast<int64_t>(placement.elements),
                                 .out = base + placement.offset,
                                 .seed = random.seed * 1000003u + stream++,
                                 .offset = norm ? 1.0f : 0.0f,
                                 .scale = norm ? 0.1f : random.scale},
                nullptr);
  }
  PAGEDLLM_CUDA_CHECK(cudaDeviceSynchronize());
  bind(layout);
}

void DeviceModel::bind(const DeviceWeightLayout& layout) {
  auto* base = static_cast<char*>(storage_.get());
  for (const LayerOffsets& offsets : layout.layers) {
    layers_.push_back(DeviceLayer{
        .input_norm = base + offsets.input_norm,
        .qkv = base + offsets.qkv,
        .qkv_bias = config_.attention_bias ? base + offsets.qkv_bias : nullptr,
        .o_proj = base + offsets.o_proj,
        .post_norm = base + offsets.post_norm,
        .gate_up = base + offsets.gate_up,
        .down = base + offsets.down,
    });
  }
  embedding_ = base + layout.embedding;
  final_norm_ = base + layout.final_norm;
  lm_head_ = base + layout.lm_head;

  const std::vector<float> inv_freq = model::rope_inv_freq(config_);
  const size_t inv_freq_bytes = inv_freq.size() * sizeof(float);
  inv_freq_ = DeviceBuffer(inv_freq_bytes);
  PAGEDLLM_CUDA_CHECK(cudaMemcpy(inv_freq_.get(), inv_freq.data(), inv_freq_bytes, cudaMemcpyHostToDevice));
}

}  // namespace pagedllm::cuda
