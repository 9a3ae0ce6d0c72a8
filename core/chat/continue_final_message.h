// continue_final_message as Hugging Face's apply_chat_template does it, shared by formats and
// Jinja templates, so that prompts match vLLM's token for token.
#pragma once

#include <string>

namespace pagedllm::chat {

// Cuts the closed render right after the last occurrence of the final message's stripped
// content, keeping the content's trailing whitespace only where the text there equals the
// content as given (no leading whitespace, not trimmed by the template). Throws
// ChatTemplateError when the content does not appear in the render.
void cut_after_final_message(std::string& rendered, const std::string& final_content);

}  // namespace pagedllm::chat
