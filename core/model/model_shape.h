// The shape of a Llama-family model: sizes only, no weights. What cost models, benchmarks and
// memory sizing need, from a preset or from any config the model readers accept.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm::model {

struct ModelConfig;

struct ModelShape {
  std::string name;
  int64_t num_layers = 0;
  int64_t hidden_size = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
  bool tie_word_embeddings = false;     // the lm_head is the embedding matrix (no second copy)
  bool attention_bias = false;          // q/k/v projections carry biases (qwen2)
  int64_t max_position_embeddings = 0;  // the context length (0 = unknown)
  int64_t sliding_window = 0;           // keys a query attends (Mistral); 0 = all (no window)
  double weight_bytes_per_param = 2.0;  // 2 = bf16; 1 = fp8; 0.5 = 4-bit
  double kv_bytes_per_element = 2.0;    // 2 = bf16 KV cache; 1 = fp8

  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t kv_dim() const { return num_kv_heads * head_dim; }

  // q, k, v, o projections and the SwiGLU MLP (gate, up, down) of one layer.
  int64_t num_matmul_params_per_layer() const;
  // Everything one layer holds: its matmuls, two RMSNorm weights, attention biases.
  int64_t num_params_per_layer() const;
  int64_t num_lm_head_params() const { return vocab_size * hidden_size; }
  // Embeddings, layers, final norm, and the lm_head unless tied.
  int64_t num_params() const;
  double weight_bytes() const { return static_cast<double>(num_params()) * weight_bytes_per_param; }
  // K and V of one token in every layer.
  double kv_bytes_per_token() const;
};

// Throws std::invalid_argument naming the field when the shape is unusable.
void validate(const ModelShape& shape);

// The presets, from each model's Hugging Face config.json: llama-2-7b, llama-2-13b, llama-2-70b,
// llama-3-8b, llama-3-70b, mistral-7b (sliding window 4096), smollm2-135m.
const std::vector<ModelShape>& model_shape_presets();

// The preset of that name (case-insensitive). Throws std::invalid_argument listing the valid names.
ModelShape find_model_shape(std::string_view name);

std::string model_shape_names();

// Any config.json or GGUF the model readers accept (bf16 weights and KV assumed).
ModelShape model_shape_from_config(const ModelConfig& config, std::string name = "config");

// The inverse, for a model of random weights with a preset's shape (qwen2 where it has attention
// biases, llama otherwise; the other fields keep ModelConfig's defaults).
ModelConfig model_config_from_shape(const ModelShape& shape);

}  // namespace pagedllm::model
