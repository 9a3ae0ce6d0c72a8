// Everything about a model except its weights: where it is, its config, tokenizer, chat format
// and stop tokens. What `generate`, `replay` and the server open first; executors then load the
// weights in the precision they compute in.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/common/types.h"
#include "core/engine/engine_config.h"
#include "core/model/model_config.h"
#include "core/model/model_source.h"
#include "core/model/model_weights.h"
#include "core/tokenizer/tokenizer.h"

namespace pagedllm::frontend {

struct ModelBundle {
  model::ModelSource source;
  model::ModelConfig config;
  tokenizer::Tokenizer tokenizer;
  std::optional<chat::ChatTemplate> chat_template{};  // absent when the model ships none usable
  std::string chat_template_error{};                  // why it is absent
  std::vector<TokenId> eos_token_ids{};               // the config's, else the tokenizer's EOS
  std::string bos_text{};                             // BOS / EOS token text, for chat templates
  std::string eos_text{};
};

struct OpenModelOptions {
  // A named format ("chatml", "llama3", ...) or a file (Jinja or the JSON user format) that
  // replaces the model's own chat template; empty: the model's.
  std::string chat_template;
};

// Resolves and opens a model (a Hugging Face directory, a .gguf file, or a fetched model's name).
// Throws model::ModelFormatError (or a tokenizer / chat template error) naming what is wrong.
// A model without a usable chat template opens; rendering a chat then fails with the reason.
ModelBundle open_model(const std::string& argument, const OpenModelOptions& options = {});

// Loads and checks the weights of an opened model.
model::ModelWeights load_weights(const ModelBundle& bundle, const model::WeightLoadOptions& options = {});

// The model's context length (max_position_embeddings, capped at 2^20): the default max_model_len.
int32_t context_length(const ModelBundle& bundle);

// What an engine takes from the model itself: every EOS id (each ends a request), the
// vocabulary size (token ids in requests are checked against it) and the sliding attention
// window (the KV cache releases the blocks before it).
void apply_model_limits(const ModelBundle& bundle, engine::EngineConfig& config);

// Speculative decoding with a draft model: the draft must share the target's tokenizer (the same
// bytes for every token id, the same special tokens) and embedding rows, and reach max_model_len.
// Throws std::invalid_argument naming the draft's file and the first difference.
void check_draft_model(const ModelBundle& target, const ModelBundle& draft, int32_t max_model_len);

// Renders a conversation with the model's chat template and tokenizes it without adding BOS
// again. Throws chat::ChatTemplateError naming the problem.
std::vector<TokenId> encode_chat(const ModelBundle& bundle, const std::vector<chat::ChatMessage>& messages,
                                 const chat::ChatPromptOptions& options = {});

// Tokenizes a plain prompt (special tokens in the text are parsed; BOS as the tokenizer adds it).
std::vector<TokenId> encode_prompt(const ModelBundle& bundle, const std::string& text);

// vLLM's tokenization of bad_words: each word (leading whitespace dropped) as it would start the
// text, and with a leading space as it would follow another word, the latter only where it gives
// a different first token and as many tokens. No special tokens are added or parsed.
std::vector<std::vector<TokenId>> encode_bad_words(const ModelBundle& bundle, const std::vector<std::string>& words);

}  // namespace pagedllm::frontend
