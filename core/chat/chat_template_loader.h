// The chat template a model ships, found where Hugging Face and llama.cpp keep it, and parsed
// to be run (ChatTemplate::from_jinja).
#pragma once

#include <string>

#include "core/chat/chat_template.h"

namespace pagedllm::model {
class GgufFile;
}

namespace pagedllm::chat {

// GGUF: the "tokenizer.chat_template" key.
ChatTemplate load_chat_template(const model::GgufFile& file);

// A Hugging Face model directory: tokenizer_config.json's "chat_template" (a string, or a list
// of {"name", "template"} of which "default" is taken), else chat_template.jinja (where newer
// transformers save it).
ChatTemplate load_chat_template(const std::string& model_directory);

// Both throw ChatTemplateError naming the file when the model ships no template, and
// JinjaSyntaxError (naming the file and line) when its template does not parse.

}  // namespace pagedllm::chat
