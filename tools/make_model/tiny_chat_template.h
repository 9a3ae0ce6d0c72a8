// The tiny model's chat template: ChatML, the format of SmolLM2 and Qwen2, as Jinja text in
// tokenizer_config.json and GGUF metadata, so that template detection runs on it.
#pragma once

#include <string_view>

namespace pagedllm::make_model {

std::string_view tiny_chat_template();

}  // namespace pagedllm::make_model
