#include "tools/make_model/tiny_model.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/model/gguf_writer.h"
#include "core/model/quantize.h"
#include "core/model/safetensors_writer.h"
#include "core/model/tensor_names.h"
#include "core/tokenizer/bpe_trainer.h"
#include "core/tokenizer/tokenizer.h"
#include "tools/make_model/embedded_corpus.h"
#include "tools/make_model/tiny_chat_template.h"
#include "tools/make_model/tiny_gguf_tokenizer.h"
#include "tools/make_model/tiny_weights.h"

namespace pagedllm::make_model {
namespace {

// SmolLM2's layout of special tokens: ids 0..2, so that the chat format matches the real model.
constexpr const char* kEndOfText = "<|endoftext|>";
constexpr const char* kImStart = "<|im_start|>";
constexpr const char* kImEnd = "<|im_end|>";

void write_json(const std::string& path, const nlohmann::json& json) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << json.dump(2) << '\n';
  if (!out) throw std::runtime_error("make-model: cannot write " + path);
}

tokenizer::TokenizerSpec train_vocabulary(const TinyModelSpec& spec) {
  tokenizer::BpeTrainerConfig config;
  config.vocab_size = spec.vocab_size;
  config.special_tokens = {kEndOfText, kImStart, kImEnd};
  config.individual_digits = true;  // SmolLM2's pre-tokenizer (GGUF name "smollm")
  config.eos_token = kImEnd;
  return tokenizer::train_bpe(embedded_corpus(), config);
}

// ggml's general.file_type code of a model whose 2-D weights are `type` (llama_ftype).
std::uint32_t gguf_file_type(model::GgmlType type) {
  switch (type) {
    case model::GgmlType::f32:
      return 0;
    case model::GgmlType::f16:
      return 1;
    case model::GgmlType::q4_0:
      return 2;
    case model::GgmlType::q4_1:
      return 3;
    case model::GgmlType::q8_0:
      return 7;
    case model::GgmlType::q5_0:
      return 8;
    case model::GgmlType::q5_1:
      return 9;
    case model::GgmlType::bf16:
      return 32;
    default:
      throw std::invalid_argument("make-model: cannot write GGUF weights of this type");
  }
}

void add_gguf_config(model::GgufWriter& gguf, const model::ModelConfig& config, const TinyModelSpec& spec) {
  gguf.add_string("general.architecture", "llama");
  gguf.add_string("general.name", "pagedllm-tiny-seed" + std::to_string(spec.seed));
  gguf.add_u32("general.file_type", gguf_file_type(spec.gguf_type));
  gguf.add_u32("llama.block_count", static_cast<std::uint32_t>(config.num_layers));
  gguf.add_u32("llama.context_length", static_cast<std::uint32_t>(config.max_position_embeddings));
  gguf.add_u32("llama.embedding_length", static_cast<std::uint32_t>(config.hidden_size));
  gguf.add_u32("llama.feed_forward_length", static_cast<std::uint32_t>(config.intermediate_size));
  gguf.add_u32("llama.attention.head_count", static_cast<std::uint32_t>(config.num_heads));
  gguf.add_u32("llama.attention.head_count_kv", static_cast<std::uint32_t>(config.num_kv_heads));
  gguf.add_u32("llama.rope.dimension_count", static_cast<std::uint32_t>(config.head_dim));
  gguf.add_f32("llama.rope.freq_base", static_cast<float>(config.rope_theta));
  gguf.add_f32("llama.attention.layer_norm_rms_epsilon", static_cast<float>(config.rms_norm_eps));
  gguf.add_u32("llama.vocab_size", static_cast<std::uint32_t>(config.vocab_size));
  if (config.sliding_window) {
    gguf.add_u32("llama.attention.sliding_window", static_cast<std::uint32_t>(*config.sliding_window));
  }
}

// One tensor in GGUF form: llama.cpp's names, dims innermost first, rotary rows interleaved,
// 2-D weights in the requested type (norms and biases stay F32, as llama.cpp keeps them).
void add_gguf_tensor(model::GgufWriter& gguf, const model::TensorSpec& tensor, std::vector<float> values,
                     const model::ModelConfig& config, model::GgmlType weight_type) {
  if (tensor.name.ends_with("q_proj.weight")) {
    model::interleave_rotary_rows(values, config.num_heads, config.head_dim, config.hidden_size);
  } else if (tensor.name.ends_with("k_proj.weight")) {
    model::interleave_rotary_rows(values, config.num_kv_heads, config.head_dim, config.hidden_size);
  }
  std::vector<std::uint64_t> dims(tensor.shape.rbegin(), tensor.shape.rend());
  const model::GgmlType type = tensor.shape.size() == 2 ? weight_type : model::GgmlType::f32;
  gguf.add_tensor(model::gguf_name_from_internal(tensor.name), std::move(dims), type, model::quantize(type, values));
}

}  // namespace

model::ModelConfig tiny_model_config(const TinyModelSpec& spec, std::int32_t vocab_size) {
  model::ModelConfig config;
  config.architecture = "llama";
  config.hidden_size = spec.hidden_size;
  config.num_layers = spec.num_layers;
  config.num_heads = spec.num_heads;
  config.num_kv_heads = spec.num_kv_heads;
  config.head_dim = spec.head_dim;
  config.intermediate_size = spec.intermediate_size;
  config.vocab_size = vocab_size;
  config.max_position_embeddings = spec.max_position_embeddings;
  config.rope_theta = spec.rope_theta;
  config.rms_norm_eps = spec.rms_norm_eps;
  config.tie_word_embeddings = spec.tie_word_embeddings;
  config.bos_token_id = 1;        // <|im_start|>, as SmolLM2
  config.eos_token_ids = {2, 0};  // <|im_end|>, <|endoftext|>
  if (spec.sliding_window) {
    config.architecture = "mistral";  // the Llama-family architecture whose config.json carries a window
    config.sliding_window = spec.sliding_window;
  }
  return config;
}

TinyModelFiles write_tiny_model(const TinyModelSpec& spec, const std::string& directory) {
  std::filesystem::create_directories(directory);
  const tokenizer::TokenizerSpec vocabulary = train_vocabulary(spec);
  const auto vocab_size = static_cast<std::int32_t>(vocabulary.model.vocab.size());
  const model::ModelConfig config = tiny_model_config(spec, vocab_size);
  model::validate(config, directory);

  // Hugging Face files.
  write_json(directory + "/config.json", model::to_hf_config_json(config));
  const tokenizer::Tokenizer tokenizer(vocabulary);
  write_json(directory + "/tokenizer.json", tokenizer.to_tokenizer_json());
  write_json(directory + "/tokenizer_config.json", {{"bos_token", kImStart},
                                                    {"eos_token", kImEnd},
                                                    {"unk_token", kEndOfText},
                                                    {"add_bos_token", false},
                                                    {"model_max_length", spec.max_position_embeddings},
                                                    {"chat_template", std::string(tiny_chat_template())}});

  model::SafetensorsWriter safetensors;
  safetensors.set_metadata("format", "pt");
  model::GgufWriter gguf;
  add_gguf_config(gguf, config, spec);
  add_gguf_tokenizer(gguf, vocabulary, config);
  gguf.add_string("tokenizer.chat_template", std::string(tiny_chat_template()));
  for (const model::TensorSpec& tensor : model::expected_tensors(config)) {
    std::vector<float> values = tiny_tensor_values(spec.seed, tensor);
    safetensors.add_f32(tensor.name, {tensor.shape.begin(), tensor.shape.end()}, values, spec.safetensors_dtype);
    add_gguf_tensor(gguf, tensor, std::move(values), config, spec.gguf_type);
  }
  safetensors.write(directory + "/model.safetensors");
  TinyModelFiles files{directory, directory + "/model.gguf"};
  gguf.write(files.gguf);
  return files;
}

}  // namespace pagedllm::make_model
