// Chat templates of real models, as their tokenizer_config.json holds them, shared by the tests.
#pragma once

#include <string>

namespace pagedllm::chat::testing {

// Qwen2-Instruct's: ChatML with a default system prompt, "\n" written as Jinja escapes.
inline const std::string kQwen2Template =
    R"({% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %})"
    R"({{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %})"
    R"({{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}})"
    R"({% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %})";

}  // namespace pagedllm::chat::testing
