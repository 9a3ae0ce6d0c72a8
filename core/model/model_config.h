// The shape of a Llama-family model (Llama, Mistral, Qwen2; SmolLM2 is Llama), read from a
// Hugging Face config.json or from GGUF metadata, and written back as config.json.
#pragma once

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pagedllm::model {

class GgufFile;

// Rotary frequency scaling. llama3: Llama 3.1's piecewise scaling of long wavelengths (factor,
// low/high frequency factors, original context); linear: positions divided by `factor`.
struct RopeScaling {
  enum class Kind { none, linear, llama3 };
  Kind kind = Kind::none;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  std::int64_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  std::string architecture;  // "llama" | "mistral" | "qwen2"
  std::int64_t hidden_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t vocab_size = 0;
  std::int64_t max_position_embeddings = 0;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections carry biases (qwen2)
  std::optional<std::int32_t> bos_token_id;
  std::vector<std::int32_t> eos_token_ids;  // config.json may give one id or a list
  // Sliding-window attention (Mistral; Qwen2 with use_sliding_window): a query attends only the
  // `sliding_window` most recent positions, itself included (kv/attention_window.h has the
  // convention). Applied to every layer by cpu_ref, the CUDA kernels and the sim's cost model,
  // and the block manager releases blocks that no query can read again. Per-layer patterns are
  // not modelled: Qwen2 gets a window only when every layer slides (max_window_layers 0), none
  // when none does, and a mix is refused by the config reader.
  std::optional<std::int64_t> sliding_window;

  // The window as the attention code takes it: kv::kNoSlidingWindow (0) when there is none; a
  // window past any int32 position is clamped (it then covers every position anyway).
  std::int32_t attention_window() const noexcept {
    if (!sliding_window) return 0;
    return static_cast<std::int32_t>(std::min<std::int64_t>(*sliding_window, INT32_MAX));
  }

  std::int64_t num_query_groups() const noexcept { return num_heads / num_kv_heads; }
  std::int64_t q_dim() const noexcept { return num_heads * head_dim; }
  std::int64_t kv_dim() const noexcept { return num_kv_heads * head_dim; }
};

// The architectures pagedllm runs, as config.json's "architectures" names them.
inline constexpr const char* kSupportedArchitectures = "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM";

// Reads a Hugging Face config.json: the architecture from "architectures" (or "model_type");
// head_dim defaults to hidden_size / num_attention_heads, num_key_value_heads to
// num_attention_heads; rope_scaling {"rope_type" | "type": "llama3" | "linear", ...}. Throws
// ModelFormatError naming the file and the field (an unknown architecture is named together
// with the supported ones), then validates.
ModelConfig read_hf_config(const std::string& config_json_path);
// The same from parsed JSON; `file` names the source in errors.
ModelConfig parse_hf_config(const nlohmann::json& config, const std::string& file);

// Reads GGUF metadata: general.architecture "llama" (Mistral GGUFs say llama too) or "qwen2",
// and the <arch>.* keys llama.cpp writes. tie_word_embeddings when there is no output.weight
// tensor; qwen2 has attention biases. Throws ModelFormatError naming the file and key.
ModelConfig read_gguf_config(const GgufFile& file);

// A config.json that read_hf_config reads back to the same ModelConfig (used by make-model).
nlohmann::json to_hf_config_json(const ModelConfig& config);

// Positive sizes, heads that divide the hidden size (when head_dim is implied), kv heads that
// divide heads, known architecture, sane rope and norm parameters. Throws ModelFormatError
// naming `file` and the field at fault.
void validate(const ModelConfig& config, const std::string& file);

}  // namespace pagedllm::model
