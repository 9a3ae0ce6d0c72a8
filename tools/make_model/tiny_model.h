// `pagedllm make-model`: a tiny Llama-family checkpoint written deterministically from a seed,
// in both formats users bring:
//   <dir>/config.json, model.safetensors, tokenizer.json, tokenizer_config.json  (Hugging Face)
//   <dir>/model.gguf                                                          (llama.cpp)
// The vocabulary is a real byte-level BPE trained on an embedded corpus; the weights are
// pseudo-random with the scales of a trained model (unit-RMS activations), so the forward pass
// exercises every path with non-degenerate numbers. Same spec, same bytes, on any machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/model/ggml_type.h"
#include "core/model/model_config.h"
#include "core/model/safetensors_file.h"

namespace pagedllm::make_model {

struct TinyModelSpec {
  std::uint64_t seed = 0;
  std::int32_t vocab_size = 1024;  // BPE target, special tokens included
  std::int64_t hidden_size = 64;
  std::int64_t num_layers = 2;
  std::int64_t num_heads = 4;
  std::int64_t num_kv_heads = 2;  // grouped-query attention, as in the real models
  std::int64_t head_dim = 16;
  std::int64_t intermediate_size = 192;
  std::int64_t max_position_embeddings = 2048;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-5;
  bool tie_word_embeddings = false;
  // Sliding-window attention: written as real models carry it, config.json's "sliding_window" of
  // architecture "mistral" (MistralForCausalLM, as Mistral-7B-v0.1) and GGUF's
  // "llama.attention.sliding_window" (llama.cpp's {arch}.attention.sliding_window key).
  std::optional<std::int64_t> sliding_window;
  model::SafetensorsDtype safetensors_dtype = model::SafetensorsDtype::f32;
  model::GgmlType gguf_type = model::GgmlType::f32;  // of the 2-D weights; norms stay F32
};

struct TinyModelFiles {
  std::string directory;
  std::string gguf;  // directory + "/model.gguf"
};

// The config the spec describes (architecture "llama", or "mistral" with a sliding window).
model::ModelConfig tiny_model_config(const TinyModelSpec& spec, std::int32_t vocab_size);

// Writes the model into `directory` (created if needed); throws naming what failed.
TinyModelFiles write_tiny_model(const TinyModelSpec& spec, const std::string& directory);

}  // namespace pagedllm::make_model
