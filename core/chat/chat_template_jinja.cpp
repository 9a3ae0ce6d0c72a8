// ChatTemplate over a model's own Jinja template: parsed once, run per conversation with the
// variables transformers' apply_chat_template passes.
#include <string>

#include "core/chat/chat_template.h"
#include "core/chat/continue_final_message.h"
#include "core/chat/jinja/template.h"
#include "core/chat/python_strip.h"

namespace pagedllm::chat {
namespace {

// The text continue_final_message continues: the content, or (content parts) the last part
// with text, as transformers takes it.
std::string final_text(const nlohmann::ordered_json& message, std::size_t index) {
  const auto fail = [&](const std::string& problem) {
    throw ChatTemplateError("chat template: message " + std::to_string(index) + ": " + problem);
  };
  if (!message.is_object()) fail("expected a message object");
  const auto role = message.find("role");
  const std::string role_text = role != message.end() && role->is_string() ? role->get<std::string>() : "";
  if (role_text != "assistant") {
    fail("continue_final_message needs a final assistant message to continue, found '" + role_text + "'");
  }
  std::string text;
  const auto content = message.find("content");
  if (content != message.end() && content->is_string()) {
    text = content->get<std::string>();
  } else if (content != message.end() && content->is_array()) {
    for (auto part = content->rbegin(); part != content->rend(); ++part) {
      if (part->is_object() && part->contains("text") && (*part)["text"].is_string()) {
        text = (*part)["text"].get<std::string>();
        break;
      }
    }
  }
  if (python_strip(text).empty()) fail("continue_final_message needs a final message with content to continue");
  return text;
}

}  // namespace

ChatTemplate ChatTemplate::from_jinja(std::string_view template_text, std::string source) {
  ChatTemplate chat_template(ChatFormat{});
  chat_template.jinja_ = std::make_shared<const jinja::Template>(jinja::Template::parse(template_text, source));
  chat_template.jinja_text_ = std::string(template_text);
  chat_template.jinja_source_ = std::move(source);
  return chat_template;
}

std::string ChatTemplate::render_jinja(const nlohmann::ordered_json& messages, const RenderOptions& options) const {
  if (!messages.is_array()) throw ChatTemplateError("chat template: the conversation must be a list of messages");
  if (messages.empty()) throw ChatTemplateError("chat template: the conversation is empty");
  std::string final_content;
  if (options.continue_final_message) {
    if (options.add_generation_prompt) {
      throw ChatTemplateError("chat template: continue_final_message and add_generation_prompt cannot both be set");
    }
    final_content = final_text(messages.back(), messages.size() - 1);
  }
  jinja::ValueDict variables;
  variables.emplace_back("messages", jinja::Value::from_json(messages));
  variables.emplace_back("tools",
                         options.tools ? jinja::Value::from_json(*options.tools) : jinja::Value(jinja::None{}));
  variables.emplace_back("documents", jinja::Value(jinja::None{}));
  variables.emplace_back("add_generation_prompt", jinja::Value(options.add_generation_prompt));
  variables.emplace_back("bos_token", jinja::Value(options.bos_token));
  variables.emplace_back("eos_token", jinja::Value(options.eos_token));
  if (options.date_string) variables.emplace_back("date_string", jinja::Value(*options.date_string));
  std::string rendered = jinja_->render(variables);
  if (options.continue_final_message) cut_after_final_message(rendered, final_content);
  return rendered;
}

}  // namespace pagedllm::chat
