#include "tools/make_model/tiny_chat_template.h"

namespace pagedllm::make_model {

std::string_view tiny_chat_template() {
  return "{% for message in messages %}"
         "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
         "{% endfor %}"
         "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
}

}  // namespace pagedllm::make_model
