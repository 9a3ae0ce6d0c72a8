// ModelConfig from GGUF metadata, as llama.cpp's converter writes it.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <numbers>

#include "core/model/gguf_file.h"
#include "core/model/model_config.h"
#include "core/model/model_errors.h"

namespace pagedllm::model {
namespace {

std::string key_subject(const std::string& key) { return "key '" + key + "'"; }

std::int64_t to_int64(std::uint64_t value, const std::string& key, const GgufFile& file) {
  if (value > static_cast<std::uint64_t>(INT64_MAX)) {
    throw ModelFormatError(file.path(), key_subject(key), "value " + std::to_string(value) + " is too large");
  }
  return static_cast<std::int64_t>(value);
}

std::int64_t get_int(const GgufFile& file, const std::string& key) { return to_int64(file.get_u64(key), key, file); }

std::optional<std::int64_t> find_int(const GgufFile& file, const std::string& key) {
  const auto value = file.find_u64(key);
  if (!value) return std::nullopt;
  return to_int64(*value, key, file);
}

std::optional<std::int32_t> find_token_id(const GgufFile& file, const std::string& key) {
  const auto value = file.find_u64(key);
  if (!value) return std::nullopt;
  if (*value > static_cast<std::uint64_t>(INT32_MAX)) {
    throw ModelFormatError(file.path(), key_subject(key), "token id " + std::to_string(*value) + " is too large");
  }
  return static_cast<std::int32_t>(*value);
}

// Converters store config floats as f32 (1e-5 becomes 9.99999974738e-06); the shortest decimal
// that rounds to the same f32 is the value the config said, so recover that.
std::optional<double> find_real(const GgufFile& file, const std::string& key) {
  const GgufValue* value = file.find(key);
  if (value != nullptr && value->type == GgufValueType::f32) {
    const auto narrow = static_cast<float>(std::get<double>(value->value));
    char text[32];
    const auto written = std::to_chars(text, text + sizeof text, narrow);
    double shortest = 0.0;
    std::from_chars(text, written.ptr, shortest);
    return shortest;
  }
  return file.find_f64(key);
}

std::int64_t read_vocab_size(const GgufFile& file, const std::string& arch) {
  if (const auto size = find_int(file, arch + ".vocab_size")) return *size;
  const std::string key = "tokenizer.ggml.tokens";
  const GgufValue* tokens = file.find(key);
  if (tokens == nullptr) {
    throw ModelFormatError(file.path(), key_subject(arch + ".vocab_size"),
                           "missing, and no '" + key + "' to count either");
  }
  if (tokens->type != GgufValueType::array) {
    throw ModelFormatError(file.path(), key_subject(key), "expected an array of strings");
  }
  return static_cast<std::int64_t>(std::get<GgufArray>(tokens->value).items.size());
}

// Llama 3.1's scaling of frequency i (what convert_hf_to_gguf.py stores in rope_freqs.weight:
// the divisor applied to that frequency).
double llama3_rope_factor(const RopeScaling& scaling, double theta, std::int64_t head_dim, std::int64_t i) {
  const double frequency = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));
  const double wavelength = 2.0 * std::numbers::pi / frequency;
  const auto original = static_cast<double>(scaling.original_max_position_embeddings);
  const double low_freq_wavelength = original / scaling.low_freq_factor;
  const double high_freq_wavelength = original / scaling.high_freq_factor;
  if (wavelength < high_freq_wavelength) return 1.0;
  if (wavelength > low_freq_wavelength) return scaling.factor;
  const double smooth =
      (original / wavelength - scaling.low_freq_factor) / (scaling.high_freq_factor - scaling.low_freq_factor);
  return 1.0 / ((1.0 - smooth) / scaling.factor + smooth);
}

// llama.cpp keeps Llama 3.1 scaling as a tensor of per-frequency factors, not as keys. pagedllm
// recomputes the factors, so it recovers the parameters (factor = the largest divisor; low and
// high frequency factors and the original context as every Llama 3.x release has them) and
// checks that they reproduce the tensor.
RopeScaling read_rope_freqs(const GgufFile& file, const GgufTensorInfo& tensor, const ModelConfig& config,
                            const std::string& arch) {
  const std::string subject = "tensor '" + tensor.name + "'";
  const auto num_factors = static_cast<std::uint64_t>(config.head_dim / 2);
  if (tensor.type != GgmlType::f32 || tensor.num_elements != num_factors) {
    throw ModelFormatError(file.path(), subject, "expected " + std::to_string(num_factors) + " F32 rope factors");
  }
  const std::span<const std::byte> data = file.tensor_data(tensor);
  std::vector<float> factors(num_factors);
  std::memcpy(factors.data(), data.data(), factors.size() * sizeof(float));
  RopeScaling scaling;
  scaling.kind = RopeScaling::Kind::llama3;
  scaling.factor = 1.0;
  for (const float factor : factors) scaling.factor = std::max(scaling.factor, static_cast<double>(factor));
  scaling.original_max_position_embeddings =
      find_int(file, arch + ".rope.scaling.original_context_length").value_or(8192);
  for (std::size_t i = 0; i < factors.size(); ++i) {
    const double expected =
        llama3_rope_factor(scaling, config.rope_theta, config.head_dim, static_cast<std::int64_t>(i));
    if (std::abs(expected - factors[i]) > 1e-4 * expected) {
      throw ModelFormatError(file.path(), subject,
                             "factor " + std::to_string(i) + " is " + std::to_string(factors[i]) +
                                 ", Llama 3 scaling with factor " + std::to_string(scaling.factor) + " gives " +
                                 std::to_string(expected));
    }
  }
  return scaling;
}

RopeScaling read_rope_scaling(const GgufFile& file, const ModelConfig& config, const std::string& arch) {
  const std::string type_key = arch + ".rope.scaling.type";
  const std::string type = file.find_string(type_key).value_or("none");
  if (type == "linear") {
    const std::string factor_key = arch + ".rope.scaling.factor";
    const auto factor = find_real(file, factor_key);
    if (!factor) throw ModelFormatError(file.path(), key_subject(factor_key), "missing (required for linear scaling)");
    RopeScaling scaling;
    scaling.kind = RopeScaling::Kind::linear;
    scaling.factor = *factor;
    return scaling;
  }
  if (type != "none") {
    throw ModelFormatError(file.path(), key_subject(type_key),
                           "unsupported rope scaling '" + type + "' (supported: none, linear)");
  }
  if (const GgufTensorInfo* freqs = file.find_tensor("rope_freqs.weight")) {
    return read_rope_freqs(file, *freqs, config, arch);
  }
  return {};
}

}  // namespace

ModelConfig read_gguf_config(const GgufFile& file) {
  const std::string arch_key = "general.architecture";
  const std::string arch = file.get_string(arch_key);
  if (arch != "llama" && arch != "qwen2") {
    throw ModelFormatError(file.path(), key_subject(arch_key),
                           "unsupported architecture '" + arch + "' (supported: llama, qwen2)");
  }
  ModelConfig config;
  config.architecture = arch;
  config.num_layers = get_int(file, arch + ".block_count");
  config.hidden_size = get_int(file, arch + ".embedding_length");
  config.intermediate_size = get_int(file, arch + ".feed_forward_length");
  config.num_heads = get_int(file, arch + ".attention.head_count");
  config.num_kv_heads = find_int(file, arch + ".attention.head_count_kv").value_or(config.num_heads);
  config.max_position_embeddings = get_int(file, arch + ".context_length");
  config.rope_theta = find_real(file, arch + ".rope.freq_base").value_or(10000.0);
  const std::string eps_key = arch + ".attention.layer_norm_rms_epsilon";
  const auto eps = find_real(file, eps_key);
  if (!eps) throw ModelFormatError(file.path(), key_subject(eps_key), "missing (required)");
  config.rms_norm_eps = *eps;
  config.vocab_size = read_vocab_size(file, arch);

  // Head size: key_length when given, else the rotary dimension, else hidden / heads. pagedllm
  // rotates whole heads, so a rotary dimension other than the head size is refused.
  const std::string rope_dim_key = arch + ".rope.dimension_count";
  const auto key_length = find_int(file, arch + ".attention.key_length");
  const auto rope_dim = find_int(file, rope_dim_key);
  if (key_length) {
    config.head_dim = *key_length;
  } else if (rope_dim) {
    config.head_dim = *rope_dim;
  } else {
    if (config.num_heads <= 0 || config.hidden_size % config.num_heads != 0) {
      throw ModelFormatError(
          file.path(), key_subject(arch + ".attention.head_count"),
          std::to_string(config.num_heads) + " does not divide embedding_length " + std::to_string(config.hidden_size));
    }
    config.head_dim = config.hidden_size / config.num_heads;
  }
  if (rope_dim && *rope_dim != config.head_dim) {
    throw ModelFormatError(file.path(), key_subject(rope_dim_key),
                           "partial rotary embeddings are not supported: expected the head size " +
                               std::to_string(config.head_dim) + ", found " + std::to_string(*rope_dim));
  }
  const std::string value_length_key = arch + ".attention.value_length";
  if (const auto value_length = find_int(file, value_length_key); value_length && *value_length != config.head_dim) {
    throw ModelFormatError(
        file.path(), key_subject(value_length_key),
        "expected the key size " + std::to_string(config.head_dim) + ", found " + std::to_string(*value_length));
  }
  config.sliding_window = find_int(file, arch + ".attention.sliding_window");
  config.tie_word_embeddings = file.find_tensor("output.weight") == nullptr;
  config.attention_bias = arch == "qwen2";
  config.bos_token_id = find_token_id(file, "tokenizer.ggml.bos_token_id");
  // llama.cpp stops at end-of-turn as well as end-of-sequence (Llama 3 instruct's <|eot_id|>).
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"}) {
    if (const auto id = find_token_id(file, key)) {
      if (std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), *id) == config.eos_token_ids.end()) {
        config.eos_token_ids.push_back(*id);
      }
    }
  }
  validate(config, file.path());
  // Read last: recovering Llama 3 scaling needs a validated head size and theta.
  config.rope_scaling = read_rope_scaling(file, config, arch);
  validate(config, file.path());
  return config;
}

}  // namespace pagedllm::model
