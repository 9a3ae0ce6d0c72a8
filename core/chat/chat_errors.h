// Errors of chat templating: a conversation the template cannot render (unknown role, roles
// that do not alternate where the template requires it), a bad template file, and a template
// text that is no family pagedllm knows.
#pragma once

#include <stdexcept>
#include <string>

namespace pagedllm::chat {

class ChatTemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// detect() found no known family in the template text; what() names the source and quotes the
// start of the text.
class UnknownChatTemplateError : public ChatTemplateError {
 public:
  using ChatTemplateError::ChatTemplateError;
};

}  // namespace pagedllm::chat
