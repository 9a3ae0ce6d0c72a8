#include "core/frontend/model_bundle.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/chat/chat_errors.h"
#include "core/chat/chat_template_loader.h"
#include "core/model/gguf_file.h"
#include "core/model/safetensors_checkpoint.h"

namespace pagedllm::frontend {
namespace {

chat::ChatTemplate chat_template_from_option(const std::string& option) {
  if (!std::filesystem::exists(option)) return chat::ChatTemplate::named(option);
  if (option.ends_with(".json")) return chat::ChatTemplate::from_file(option);
  std::ifstream in(option, std::ios::binary);
  if (!std::filesystem::is_regular_file(option) || !in) {
    throw chat::ChatTemplateError(option + ": cannot read the chat template file");
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw chat::ChatTemplateError(option + ": reading the chat template file failed");
  return chat::ChatTemplate::from_jinja(text, option);
}

std::string token_text_or_empty(const tokenizer::Tokenizer& tokenizer, std::optional<TokenId> id) {
  return id ? tokenizer.token_text(*id) : std::string();
}

}  // namespace

ModelBundle open_model(const std::string& argument, const OpenModelOptions& options) {
  const model::ModelSource source = model::resolve_model_source(argument);
  std::unique_ptr<model::GgufFile> gguf;
  if (source.format == model::ModelFormat::gguf) gguf = std::make_unique<model::GgufFile>(source.path);
  ModelBundle bundle{
      .source = source,
      .config = gguf ? model::read_gguf_config(*gguf) : model::read_hf_config(source.file("config.json")),
      .tokenizer = gguf ? tokenizer::Tokenizer::from_gguf(*gguf) : tokenizer::Tokenizer::from_path(source.path),
  };
  try {
    if (!options.chat_template.empty()) {
      bundle.chat_template = chat_template_from_option(options.chat_template);
    } else {
      bundle.chat_template = gguf ? chat::load_chat_template(*gguf) : chat::load_chat_template(source.path);
    }
  } catch (const chat::ChatTemplateError& error) {
    if (!options.chat_template.empty()) throw;  // the user asked for this one
    bundle.chat_template_error = error.what();
  }
  for (const int32_t id : bundle.config.eos_token_ids) bundle.eos_token_ids.push_back(id);
  if (bundle.eos_token_ids.empty() && bundle.tokenizer.special_ids().eos) {
    bundle.eos_token_ids.push_back(*bundle.tokenizer.special_ids().eos);
  }
  bundle.bos_text = token_text_or_empty(bundle.tokenizer, bundle.tokenizer.special_ids().bos);
  bundle.eos_text = token_text_or_empty(bundle.tokenizer, bundle.tokenizer.special_ids().eos);
  return bundle;
}

model::ModelWeights load_weights(const ModelBundle& bundle, const model::WeightLoadOptions& options) {
  if (bundle.source.format == model::ModelFormat::gguf) {
    return model::load_weights(model::GgufFile(bundle.source.path), bundle.config, options);
  }
  return model::load_weights(model::SafetensorsCheckpoint(bundle.source.path), bundle.config, options);
}

std::vector<TokenId> encode_chat(const ModelBundle& bundle, const std::vector<chat::ChatMessage>& messages,
                                 const chat::ChatPromptOptions& options) {
  if (!bundle.chat_template) {
    throw chat::ChatTemplateError("cannot render a chat: " + bundle.chat_template_error +
                                  " (give a chat format explicitly: a named one or a template file)");
  }
  chat::RenderOptions render;
  render.add_generation_prompt = options.add_generation_prompt;
  render.continue_final_message = options.continue_final_message;
  render.tools = options.tools;
  render.bos_token = bundle.bos_text;
  render.eos_token = bundle.eos_text;
  const std::string text = bundle.chat_template->render(messages, render);
  tokenizer::EncodeOptions encode;
  encode.add_special_tokens = false;  // the template already wrote BOS where the model wants it
  return bundle.tokenizer.encode(text, encode);
}

std::vector<TokenId> encode_prompt(const ModelBundle& bundle, const std::string& text) {
  return bundle.tokenizer.encode(text);
}

std::vector<std::vector<TokenId>> encode_bad_words(const ModelBundle& bundle, const std::vector<std::string>& words) {
  tokenizer::EncodeOptions plain;
  plain.add_special_tokens = false;
  plain.parse_special = false;
  std::vector<std::vector<TokenId>> out;
  for (const std::string& word : words) {
    const std::string bare = word.substr(std::min(word.find_first_not_of(" \t\n\r\f\v"), word.size()));
    std::vector<TokenId> first = bundle.tokenizer.encode(bare, plain);
    if (first.empty()) continue;  // nothing to ban (a blank word)
    std::vector<TokenId> spaced = bundle.tokenizer.encode(" " + bare, plain);
    const bool distinct = !spaced.empty() && spaced.front() != first.front() && spaced.size() == first.size();
    out.push_back(std::move(first));
    if (distinct) out.push_back(std::move(spaced));
  }
  return out;
}

int32_t context_length(const ModelBundle& bundle) {
  return static_cast<int32_t>(std::min<int64_t>(bundle.config.max_position_embeddings, int64_t{1} << 20));
}

void apply_model_limits(const ModelBundle& bundle, engine::EngineConfig& config) {
  config.eos_token_ids = bundle.eos_token_ids;
  config.vocab_size = static_cast<int32_t>(bundle.config.vocab_size);
  config.cache.sliding_window = bundle.config.attention_window();  // blocks past the window are released
}

void check_draft_model(const ModelBundle& target, const ModelBundle& draft, int32_t max_model_len) {
  const auto refuse = [&](const std::string& problem) {
    throw std::invalid_argument("--speculative-config: model: " + draft.source.path + ": " + problem);
  };
  const std::string same_tokenizer = "; a draft model must share the target's tokenizer (" + target.source.path + ")";
  if (draft.config.vocab_size != target.config.vocab_size) {
    refuse("its vocabulary has " + std::to_string(draft.config.vocab_size) + " tokens, the target's " +
           std::to_string(target.config.vocab_size) + same_tokenizer);
  }
  if (draft.tokenizer.num_tokens() != target.tokenizer.num_tokens()) {
    refuse("its tokenizer has " + std::to_string(draft.tokenizer.num_tokens()) + " tokens, the target's " +
           std::to_string(target.tokenizer.num_tokens()) + same_tokenizer);
  }
  for (TokenId id = 0; id < target.tokenizer.num_tokens(); ++id) {
    if (draft.tokenizer.token_bytes(id) != target.tokenizer.token_bytes(id) ||
        draft.tokenizer.is_special(id) != target.tokenizer.is_special(id)) {
      refuse("token " + std::to_string(id) + " is '" + draft.tokenizer.token_text(id) + "', the target's '" +
             target.tokenizer.token_text(id) + "'" + same_tokenizer);
    }
  }
  if (context_length(draft) < max_model_len) {
    refuse("its context length is " + std::to_string(context_length(draft)) + ", below max_model_len " +
           std::to_string(max_model_len) + " (lower --max-model-len)");
  }
}

}  // namespace pagedllm::frontend
