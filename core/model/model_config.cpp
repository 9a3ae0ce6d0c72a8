// ModelConfig validation and its config.json form (readers: model_config_hf.cpp,
// model_config_gguf.cpp).
#include "core/model/model_config.h"

#include <cmath>

#include "core/model/model_errors.h"

namespace pagedllm::model {
namespace {

std::string field(const char* name) { return std::string("field '") + name + "'"; }

void require_positive(std::int64_t value, const char* name, const std::string& file) {
  if (value <= 0) {
    throw ModelFormatError(file, field(name), "expected a positive value, found " + std::to_string(value));
  }
}

void require_positive(double value, const char* name, const std::string& file) {
  if (!(value > 0.0) || !std::isfinite(value)) {
    throw ModelFormatError(file, field(name), "expected a positive finite value, found " + std::to_string(value));
  }
}

void require_divides(std::int64_t divisor, const char* divisor_name, std::int64_t value, const char* value_name,
                     const std::string& file) {
  if (value % divisor != 0) {
    throw ModelFormatError(file, field(divisor_name),
                           std::to_string(divisor) + " does not divide " + value_name + " " + std::to_string(value));
  }
}

void require_token(std::int32_t id, const char* name, std::int64_t vocab_size, const std::string& file) {
  if (id < 0 || id >= vocab_size) {
    throw ModelFormatError(
        file, field(name),
        "token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
  }
}

const char* hf_class_name(const std::string& architecture) {
  if (architecture == "mistral") return "MistralForCausalLM";
  if (architecture == "qwen2") return "Qwen2ForCausalLM";
  return "LlamaForCausalLM";
}

}  // namespace

void validate(const ModelConfig& config, const std::string& file) {
  if (config.architecture != "llama" && config.architecture != "mistral" && config.architecture != "qwen2") {
    throw ModelFormatError(file, field("architecture"),
                           "unsupported architecture '" + config.architecture + "' (supported: llama, mistral, qwen2)");
  }
  require_positive(config.hidden_size, "hidden_size", file);
  require_positive(config.num_layers, "num_layers", file);
  require_positive(config.num_heads, "num_heads", file);
  require_positive(config.num_kv_heads, "num_kv_heads", file);
  require_positive(config.head_dim, "head_dim", file);
  require_positive(config.intermediate_size, "intermediate_size", file);
  require_positive(config.vocab_size, "vocab_size", file);
  require_positive(config.max_position_embeddings, "max_position_embeddings", file);
  require_divides(config.num_heads, "num_heads", config.hidden_size, "hidden_size", file);
  require_divides(config.num_kv_heads, "num_kv_heads", config.num_heads, "num_heads", file);
  if (config.head_dim % 2 != 0) {
    throw ModelFormatError(
        file, field("head_dim"),
        "rotary embeddings rotate pairs: expected an even size, found " + std::to_string(config.head_dim));
  }
  require_positive(config.rope_theta, "rope_theta", file);
  require_positive(config.rms_norm_eps, "rms_norm_eps", file);
  const RopeScaling& scaling = config.rope_scaling;
  if (scaling.kind != RopeScaling::Kind::none) {
    require_positive(scaling.factor, "rope_scaling.factor", file);
  }
  if (scaling.kind == RopeScaling::Kind::llama3) {
    require_positive(scaling.low_freq_factor, "rope_scaling.low_freq_factor", file);
    require_positive(scaling.original_max_position_embeddings, "rope_scaling.original_max_position_embeddings", file);
    if (!(scaling.high_freq_factor > scaling.low_freq_factor)) {
      throw ModelFormatError(file, field("rope_scaling.high_freq_factor"),
                             "expected more than low_freq_factor " + std::to_string(scaling.low_freq_factor) +
                                 ", found " + std::to_string(scaling.high_freq_factor));
    }
  }
  if (config.bos_token_id) require_token(*config.bos_token_id, "bos_token_id", config.vocab_size, file);
  for (const std::int32_t eos : config.eos_token_ids) {
    require_token(eos, "eos_token_id", config.vocab_size, file);
  }
  if (config.sliding_window) require_positive(*config.sliding_window, "sliding_window", file);
}

nlohmann::json to_hf_config_json(const ModelConfig& config) {
  nlohmann::json json;
  json["architectures"] = {hf_class_name(config.architecture)};
  json["model_type"] = config.architecture;
  json["hidden_size"] = config.hidden_size;
  json["intermediate_size"] = config.intermediate_size;
  json["num_hidden_layers"] = config.num_layers;
  json["num_attention_heads"] = config.num_heads;
  json["num_key_value_heads"] = config.num_kv_heads;
  json["head_dim"] = config.head_dim;
  json["vocab_size"] = config.vocab_size;
  json["max_position_embeddings"] = config.max_position_embeddings;
  json["rope_theta"] = config.rope_theta;
  json["rms_norm_eps"] = config.rms_norm_eps;
  json["tie_word_embeddings"] = config.tie_word_embeddings;
  json["hidden_act"] = "silu";
  if (config.architecture != "qwen2") json["attention_bias"] = config.attention_bias;
  json["bos_token_id"] = config.bos_token_id ? nlohmann::json(*config.bos_token_id) : nullptr;
  if (config.eos_token_ids.empty()) {
    json["eos_token_id"] = nullptr;
  } else if (config.eos_token_ids.size() == 1) {
    json["eos_token_id"] = config.eos_token_ids.front();
  } else {
    json["eos_token_id"] = config.eos_token_ids;
  }
  const RopeScaling& scaling = config.rope_scaling;
  switch (scaling.kind) {
    case RopeScaling::Kind::none:
      json["rope_scaling"] = nullptr;
      break;
    case RopeScaling::Kind::linear:
      json["rope_scaling"] = {{"rope_type", "linear"}, {"factor", scaling.factor}};
      break;
    case RopeScaling::Kind::llama3:
      json["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", scaling.factor},
                              {"low_freq_factor", scaling.low_freq_factor},
                              {"high_freq_factor", scaling.high_freq_factor},
                              {"original_max_position_embeddings", scaling.original_max_position_embeddings}};
      break;
  }
  if (config.architecture == "qwen2") {
    json["use_sliding_window"] = config.sliding_window.has_value();
    if (config.sliding_window) {
      json["sliding_window"] = *config.sliding_window;
      json["max_window_layers"] = 0;  // every layer slides (transformers slides layers from this one on)
    }
  } else if (config.architecture == "mistral") {
    json["sliding_window"] = config.sliding_window ? nlohmann::json(*config.sliding_window) : nlohmann::json(nullptr);
  }
  return json;
}

}  // namespace pagedllm::model
