#include "core/chat/continue_final_message.h"

#include "core/chat/chat_errors.h"
#include "core/chat/python_strip.h"

namespace pagedllm::chat {

void cut_after_final_message(std::string& rendered, const std::string& final_content) {
  const std::string core = python_strip(final_content);
  const std::size_t at = rendered.rfind(core);
  if (at == std::string::npos) {
    throw ChatTemplateError("continue_final_message: the final message does not appear in the rendered chat");
  }
  const std::size_t leading = final_content.find(core);     // core starts at the first non-space character
  const std::size_t kept = final_content.size() - leading;  // len(final.lstrip())
  rendered.resize(rendered.compare(at, kept, final_content) == 0 ? at + kept : at + core.size());
}

}  // namespace pagedllm::chat
