#include "core/model/model_shape.h"

#include <stdexcept>
#include <utility>

#include "core/common/preset_lookup.h"
#include "core/model/model_config.h"

namespace pagedllm::model {
namespace {

// Figures from each model's config.json on the Hugging Face hub (hidden_size,
// num_hidden_layers, num_attention_heads, num_key_value_heads, intermediate_size, vocab_size,
// tie_word_embeddings, max_position_embeddings); head_dim = hidden_size / num_attention_heads throughout.
ModelShape llama_shape(std::string name, int64_t layers, int64_t hidden, int64_t heads, int64_t kv_heads,
                       int64_t intermediate, int64_t vocab, int64_t context, bool tied = false) {
  ModelShape shape;
  shape.name = std::move(name);
  shape.num_layers = layers;
  shape.hidden_size = hidden;
  shape.num_heads = heads;
  shape.num_kv_heads = kv_heads;
  shape.head_dim = hidden / heads;
  shape.intermediate_size = intermediate;
  shape.vocab_size = vocab;
  shape.tie_word_embeddings = tied;
  shape.max_position_embeddings = context;
  return shape;
}

ModelShape with_sliding_window(ModelShape shape, int64_t window) {
  shape.sliding_window = window;
  return shape;
}

std::vector<ModelShape> make_presets() {
  return {
      llama_shape("llama-2-7b", 32, 4096, 32, 32, 11008, 32000, 4096),   // meta-llama/Llama-2-7b-hf
      llama_shape("llama-2-13b", 40, 5120, 40, 40, 13824, 32000, 4096),  // meta-llama/Llama-2-13b-hf
      llama_shape("llama-2-70b", 80, 8192, 64, 8, 28672, 32000, 4096),   // meta-llama/Llama-2-70b-hf
      llama_shape("llama-3-8b", 32, 4096, 32, 8, 14336, 128256, 8192),   // meta-llama/Meta-Llama-3-8B
      llama_shape("llama-3-70b", 80, 8192, 64, 8, 28672, 128256, 8192),  // meta-llama/Meta-Llama-3-70B
      // meta-llama/Llama-3.2-1B: Llama 3's tokenizer, a draft model for the 8B and 70B
      llama_shape("llama-3.2-1b", 16, 2048, 32, 8, 8192, 128256, 131072, true),
      with_sliding_window(llama_shape("mistral-7b", 32, 4096, 32, 8, 14336, 32000, 32768),
                          4096),  // mistralai/Mistral-7B-v0.1 (config.json's sliding_window)
      llama_shape("smollm2-135m", 30, 576, 9, 3, 1536, 49152, 8192, true),  // HuggingFaceTB/SmolLM2-135M
  };
}

void require_positive(double value, const ModelShape& shape, const char* field) {
  if (!(value > 0.0)) {
    throw std::invalid_argument("model shape '" + shape.name + "': " + field + " must be positive, got " +
                                std::to_string(value));
  }
}

}  // namespace

int64_t ModelShape::num_matmul_params_per_layer() const {
  const int64_t attention = hidden_size * (q_dim() + 2 * kv_dim()) + q_dim() * hidden_size;
  const int64_t mlp = 3 * hidden_size * intermediate_size;
  return attention + mlp;
}

int64_t ModelShape::num_params_per_layer() const {
  const int64_t norms = 2 * hidden_size;
  const int64_t biases = attention_bias ? q_dim() + 2 * kv_dim() : 0;
  return num_matmul_params_per_layer() + norms + biases;
}

int64_t ModelShape::num_params() const {
  const int64_t embedding = vocab_size * hidden_size;
  const int64_t lm_head = tie_word_embeddings ? 0 : num_lm_head_params();
  return embedding + num_layers * num_params_per_layer() + hidden_size + lm_head;
}

double ModelShape::kv_bytes_per_token() const {
  return 2.0 * static_cast<double>(num_layers * kv_dim()) * kv_bytes_per_element;
}

void validate(const ModelShape& shape) {
  require_positive(static_cast<double>(shape.num_layers), shape, "num_layers");
  require_positive(static_cast<double>(shape.hidden_size), shape, "hidden_size");
  require_positive(static_cast<double>(shape.num_heads), shape, "num_heads");
  require_positive(static_cast<double>(shape.num_kv_heads), shape, "num_kv_heads");
  require_positive(static_cast<double>(shape.head_dim), shape, "head_dim");
  require_positive(static_cast<double>(shape.intermediate_size), shape, "intermediate_size");
  require_positive(static_cast<double>(shape.vocab_size), shape, "vocab_size");
  require_positive(shape.weight_bytes_per_param, shape, "weight_bytes_per_param");
  require_positive(shape.kv_bytes_per_element, shape, "kv_bytes_per_element");
  if (shape.sliding_window < 0) {
    throw std::invalid_argument("model shape '" + shape.name + "': sliding_window must be 0 (none) or positive, got " +
                                std::to_string(shape.sliding_window));
  }
  if (shape.num_heads % shape.num_kv_heads != 0) {
    throw std::invalid_argument("model shape '" + shape.name + "': num_heads (" + std::to_string(shape.num_heads) +
                                ") must be a multiple of num_kv_heads (" + std::to_string(shape.num_kv_heads) + ")");
  }
}

const std::vector<ModelShape>& model_shape_presets() {
  static const std::vector<ModelShape> presets = make_presets();
  return presets;
}

ModelShape find_model_shape(std::string_view name) {
  if (const auto* preset = find_preset(model_shape_presets(), name)) return *preset;
  throw std::invalid_argument("unknown model shape '" + std::string(name) + "'; valid names: " + model_shape_names());
}

std::string model_shape_names() { return preset_names(model_shape_presets()); }

ModelShape model_shape_from_config(const ModelConfig& config, std::string name) {
  ModelShape shape;
  shape.name = std::move(name);
  shape.num_layers = config.num_layers;
  shape.hidden_size = config.hidden_size;
  shape.num_heads = config.num_heads;
  shape.num_kv_heads = config.num_kv_heads;
  shape.head_dim = config.head_dim;
  shape.intermediate_size = config.intermediate_size;
  shape.vocab_size = config.vocab_size;
  shape.tie_word_embeddings = config.tie_word_embeddings;
  shape.attention_bias = config.attention_bias;
  shape.max_position_embeddings = config.max_position_embeddings;
  shape.sliding_window = config.sliding_window.value_or(0);
  validate(shape);
  return shape;
}

ModelConfig model_config_from_shape(const ModelShape& shape) {
  ModelConfig config;
  config.architecture = shape.attention_bias ? "qwen2" : "llama";
  config.hidden_size = shape.hidden_size;
  config.num_layers = shape.num_layers;
  config.num_heads = shape.num_heads;
  config.num_kv_heads = shape.num_kv_heads;
  config.head_dim = shape.head_dim;
  config.intermediate_size = shape.intermediate_size;
  config.vocab_size = shape.vocab_size;
  config.max_position_embeddings = shape.max_position_embeddings;
  config.tie_word_embeddings = shape.tie_word_embeddings;
  config.attention_bias = shape.attention_bias;
  if (shape.sliding_window > 0) {
    config.architecture = shape.attention_bias ? "qwen2" : "mistral";  // the families that carry a window
    config.sliding_window = shape.sliding_window;
  }
  return config;
}

}  // namespace pagedllm::model
