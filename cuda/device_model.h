// The weights of a Llama-family model on the GPU, in 16-bit (bf16 or fp16), uploaded once.
//
// Everything lives in one device allocation. The projections that read the same input are placed
// back to back so that each is a single GEMM: q, k and v rows form one [q_dim + 2 kv_dim, hidden]
// matrix, gate and up rows one [2 intermediate, hidden] matrix (the layout silu_and_mul expects:
// [gate | up] per output row). Row-major [out][in] as the checkpoint stores them, so placing the
// tensors at consecutive offsets is the fusion: nothing is concatenated on the host.
//
// plan_device_weights() is the placement alone (host arithmetic, tested without a GPU);
// DeviceModel uploads into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model_config.h"
#include "core/model/model_weights.h"
#include "cuda/device_memory.h"
#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {

// Where one checkpoint tensor goes: `elements` 16-bit values at byte `offset`.
struct WeightPlacement {
  std::string name;  // internal name (core/model/tensor_names.h)
  std::size_t offset = 0;
  std::size_t elements = 0;
};

// Byte offsets of one layer's tensors (the fused ones by their first part).
struct LayerOffsets {
  std::size_t input_norm = 0;
  std::size_t qkv = 0;       // q_proj, then k_proj, then v_proj rows
  std::size_t qkv_bias = 0;  // q, k, v biases back to back (attention_bias only)
  std::size_t o_proj = 0;
  std::size_t post_norm = 0;
  std::size_t gate_up = 0;  // gate_proj rows, then up_proj rows
  std::size_t down = 0;
};

struct DeviceWeightLayout {
  std::vector<WeightPlacement> tensors;  // every checkpoint tensor, in upload order
  std::vector<LayerOffsets> layers;
  std::size_t embedding = 0;
  std::size_t final_norm = 0;
  std::size_t lm_head = 0;  // == embedding when the embeddings are tied
  std::size_t total_bytes = 0;
};

// Alignment of every tensor that starts a GEMM operand or a kernel's input.
inline constexpr std::size_t kWeightAlignment = 256;

DeviceWeightLayout plan_device_weights(const model::ModelConfig& config);

// One tensor's values as 16-bit `dtype` bit patterns (bf16 kept as is; fp32 rounded to nearest
// even; bf16 -> fp16 through fp32).
std::vector<std::uint16_t> to_device_bits(const model::HostTensor& tensor, DType dtype);

// A layer's tensors as device pointers into the model's allocation.
struct DeviceLayer {
  const void* input_norm = nullptr;  // [hidden]
  const void* qkv = nullptr;         // [q_dim + 2 kv_dim][hidden]
  const void* qkv_bias = nullptr;    // [q_dim + 2 kv_dim] or nullptr
  const void* o_proj = nullptr;      // [hidden][q_dim]
  const void* post_norm = nullptr;   // [hidden]
  const void* gate_up = nullptr;     // [2 intermediate][hidden]
  const void* down = nullptr;        // [hidden][intermediate]
};

// Weights drawn on the device (benchmarks): norm gains near 1, everything else uniform in
// [-scale, scale], so activations and logits stay finite.
struct RandomWeights {
  std::uint64_t seed = 0;
  float scale = 0.02f;
};

class DeviceModel {
 public:
  // Uploads every tensor of `weights` (fp32 or bf16 on the host) as `dtype`, and the rotary
  // inverse frequencies (fp32, core/model/rope_frequencies.h: the ones cpu_ref uses, bit for bit).
  // Uses the current CUDA device.
  DeviceModel(const model::ModelWeights& weights, DType dtype);
  // A model of `config`'s shape with random weights written on the device (nothing on the host).
  DeviceModel(const model::ModelConfig& config, DType dtype, const RandomWeights& random);

  const model::ModelConfig& config() const noexcept { return config_; }
  DType dtype() const noexcept { return dtype_; }
  const std::vector<DeviceLayer>& layers() const noexcept { return layers_; }
  const void* embedding() const noexcept { return embedding_; }             // [vocab][hidden]
  const void* final_norm() const noexcept { return final_norm_; }           // [hidden]
  const void* lm_head() const noexcept { return lm_head_; }                 // [vocab][hidden]
  const float* inv_freq() const noexcept { return inv_freq_.as<float>(); }  // [head_dim / 2]
  std::size_t weight_bytes() const noexcept { return storage_.bytes(); }

 private:
  // Points layers_ and the globals into storage_ and uploads inv_freq.
  void bind(const DeviceWeightLayout& layout);

  model::ModelConfig config_;
  DType dtype_;
  DeviceBuffer storage_;   // every weight (DeviceWeightLayout::total_bytes)
  DeviceBuffer inv_freq_;  // [head_dim / 2] fp32
  std::vector<DeviceLayer> layers_;
  const void* embedding_ = nullptr;
  const void* final_norm_ = nullptr;
  const void* lm_head_ = nullptr;
};

}  // namespace pagedllm::cuda
