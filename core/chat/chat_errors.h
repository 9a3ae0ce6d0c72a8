// Errors of chat templating: a conversation the template cannot render (unknown role, roles
// that do not alternate where the template requires it), a bad template file, a Jinja template
// that does not parse or fails while it runs, and a template text that is no family pagedllm
// recognises (only asked for by --describe).
#pragma once

#include <stdexcept>
#include <string>

namespace pagedllm::chat {

class ChatTemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// recognise() found no known family in the template text; what() names the source and quotes the
// start of the text.
class UnknownChatTemplateError : public ChatTemplateError {
 public:
  using ChatTemplateError::ChatTemplateError;
};

// A Jinja template that does not parse (JinjaSyntaxError, thrown when it is loaded) or fails while
// it renders (JinjaRuntimeError): message() as jinja2 words it, line() in the template (1-based).
// what() is "<where>, line <n>: <message>".
class JinjaError : public ChatTemplateError {
 public:
  JinjaError(const std::string& where, int line, const std::string& message)
      : ChatTemplateError(where + ", line " + std::to_string(line) + ": " + message), line_(line), message_(message) {}
  int line() const noexcept { return line_; }
  const std::string& message() const noexcept { return message_; }

 private:
  int line_;
  std::string message_;
};

class JinjaSyntaxError : public JinjaError {
 public:
  using JinjaError::JinjaError;
};

class JinjaRuntimeError : public JinjaError {
 public:
  using JinjaError::JinjaError;
};

// The template called raise_exception(message): what() is the message, verbatim (Hugging Face
// templates use it to reject a conversation, e.g. "Conversation roles must alternate ...").
class TemplateRaisedError : public ChatTemplateError {
 public:
  TemplateRaisedError(const std::string& message, int line) : ChatTemplateError(message), line_(line) {}
  int line() const noexcept { return line_; }

 private:
  int line_;
};

}  // namespace pagedllm::chat
