// ChatTemplate: the built-in formats and their rendering (a model's Jinja template:
// chat_template_jinja.cpp; recognising a family: chat_template_recognise.cpp; JSON formats:
// chat_template_file.cpp).
#include "core/chat/chat_template.h"

#include <ctime>
#include <span>

#include "core/chat/continue_final_message.h"
#include "core/chat/python_strip.h"

namespace pagedllm::chat {
namespace {

TurnFormat chatml_turn(const std::string& role) { return {"<|im_start|>" + role + "\n", "<|im_end|>\n", false, false}; }

TurnFormat llama3_turn(const std::string& role) {
  return {"<|start_header_id|>" + role + "<|end_header_id|>\n\n", "<|eot_id|>", true, false};
}

ChatFormat chatml_format() {
  ChatFormat format;
  format.name = "chatml";
  format.family = ChatFamily::chatml;
  format.system = chatml_turn("system");
  format.user = chatml_turn("user");
  format.assistant = chatml_turn("assistant");
  format.generation_prompt = "<|im_start|>assistant\n";
  return format;
}

// Llama 3.0: every message a header turn with trimmed content, BOS first.
ChatFormat llama3_format() {
  ChatFormat format;
  format.name = "llama3";
  format.family = ChatFamily::llama3;
  format.add_bos = true;
  format.system = llama3_turn("system");
  format.user = llama3_turn("user");
  format.assistant = llama3_turn("assistant");
  format.generation_prompt = "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return format;
}

// Llama 3.1 / 3.2: a system turn always, opening with the knowledge cutoff and the date.
ChatFormat llama31_format() {
  ChatFormat format = llama3_format();
  format.name = "llama3.1";
  format.default_system_prompt = "";
  format.system_preamble = "Cutting Knowledge Date: December 2023\nToday Date: {date}\n\n";
  format.default_date = "26 Jul 2024";
  return format;
}

// Mistral v0.3 (tokenizer v3): "[INST] user[/INST] answer</s>", the system prompt merged into
// the last user message.
ChatFormat mistral_format() {
  ChatFormat format;
  format.name = "mistral";
  format.family = ChatFamily::mistral;
  format.add_bos = true;
  format.system = {"", "", false, false};
  format.user = {"[INST] ", "[/INST]", false, false};
  format.assistant = {" ", "", true, true};
  format.system_placement = SystemPlacement::last_user;
  format.alternate_roles = true;
  return format;
}

// Mistral v0.1 (tokenizer v1): " [INST] user [/INST] answer</s>", the system prompt merged into
// the first user message.
ChatFormat mistral_v1_format() {
  ChatFormat format = mistral_format();
  format.name = "mistral-v1";
  format.user = {" [INST] ", " [/INST]", false, false};
  format.assistant = {" ", "", false, true};
  format.system_placement = SystemPlacement::first_user;
  return format;
}

std::string today(const std::string& strftime_format) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[128];
  const std::size_t length = std::strftime(text, sizeof text, strftime_format.c_str(), &local);
  return std::string(text, length);
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

class Renderer {
 public:
  Renderer(const ChatFormat& format, const RenderOptions& options) : format_(format), options_(options) {}

  void turn(const TurnFormat& turn, std::string_view content, std::string_view preamble = {}) {
    out_ += turn.prefix;
    out_ += preamble;
    out_ += turn.trim ? python_strip(content) : std::string(content);
    out_ += turn.suffix;
    if (turn.eos) out_ += options_.eos_token;
  }

  const TurnFormat& format_of(const std::string& role) const {
    if (role == "system") return format_.system;
    if (role == "user") return format_.user;
    return format_.assistant;
  }

  std::string preamble() const {
    if (format_.system_preamble.find("{date}") == std::string::npos) return format_.system_preamble;
    const std::string date = options_.date_string           ? *options_.date_string
                             : !format_.date_format.empty() ? today(format_.date_format)
                                                            : format_.default_date;
    return replace_all(format_.system_preamble, "{date}", date);
  }

  std::string& out() { return out_; }

 private:
  const ChatFormat& format_;
  const RenderOptions& options_;
  std::string out_;
};

[[noreturn]] void fail(const ChatFormat& format, std::size_t index, const std::string& problem) {
  throw ChatTemplateError("chat template '" + format.name + "': message " + std::to_string(index) + ": " + problem);
}

// A message as a Jinja template sees it: what an OpenAI request carries, arguments parsed (a
// text that is not JSON stays a string, as the client sent it).
nlohmann::ordered_json to_template_json(const ChatMessage& message) {
  nlohmann::ordered_json json{{"role", message.role}, {"content", message.content}};
  if (!message.tool_calls.empty()) {
    nlohmann::ordered_json calls = nlohmann::ordered_json::array();
    for (const ToolCall& call : message.tool_calls) {
      nlohmann::ordered_json arguments = nlohmann::ordered_json::parse(call.arguments, nullptr, false);
      if (arguments.is_discarded()) arguments = call.arguments;
      calls.push_back({{"id", call.id},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", std::move(arguments)}}}});
    }
    json["tool_calls"] = std::move(calls);
  }
  if (!message.tool_call_id.empty()) json["tool_call_id"] = message.tool_call_id;
  return json;
}

}  // namespace

std::string_view to_string(ChatFamily family) noexcept {
  switch (family) {
    case ChatFamily::chatml:
      return "chatml";
    case ChatFamily::llama3:
      return "llama3";
    case ChatFamily::mistral:
      return "mistral";
    case ChatFamily::custom:
      return "custom";
  }
  return "?";
}

ChatTemplate::ChatTemplate(ChatFormat format) : format_(std::move(format)) {}

ChatTemplate ChatTemplate::named(std::string_view name) {
  if (name == "chatml") return ChatTemplate(chatml_format());
  if (name == "llama3") return ChatTemplate(llama3_format());
  if (name == "llama3.1") return ChatTemplate(llama31_format());
  if (name == "mistral") return ChatTemplate(mistral_format());
  if (name == "mistral-v1") return ChatTemplate(mistral_v1_format());
  throw ChatTemplateError("unknown chat template name '" + std::string(name) +
                          "' (known: chatml, llama3, llama3.1, mistral, mistral-v1)");
}

const ChatFormat& ChatTemplate::format() const {
  if (is_jinja()) throw ChatTemplateError(jinja_source_ + ": a Jinja template, run as it is, has no ChatFormat");
  return format_;
}

std::string ChatTemplate::description() const {
  if (is_jinja()) return "the model's Jinja template (" + jinja_source_ + ")";
  std::string text = format_.name.empty() ? std::string(to_string(format_.family)) : format_.name;
  if (format_.add_bos) text += ", BOS";
  if (format_.system_placement == SystemPlacement::first_user) text += ", system prompt in the first user message";
  if (format_.system_placement == SystemPlacement::last_user) text += ", system prompt in the last user message";
  if (format_.system_placement == SystemPlacement::unsupported) text += ", no system prompt";
  if (!format_.system_preamble.empty()) {
    text += ", dated system preamble (" +
            (format_.date_format.empty() ? format_.default_date : "today, " + format_.date_format) + ")";
  } else if (format_.default_system_prompt) {
    text += ", default system prompt \"" + *format_.default_system_prompt + "\"";
  }
  return text;
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, const RenderOptions& options) const {
  if (is_jinja()) {
    nlohmann::ordered_json conversation = nlohmann::ordered_json::array();
    for (const ChatMessage& message : messages) conversation.push_back(to_template_json(message));
    return render_jinja(conversation, options);
  }
  if (messages.empty()) {
    throw ChatTemplateError("chat template '" + format_.name + "': the conversation is empty");
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant") {
      fail(format_, i, "unknown role '" + role + "' (supported: system, user, assistant)");
    }
    if (!messages[i].tool_calls.empty()) {
      fail(format_, i, "tool calls cannot be written in this format (use the model's Jinja template)");
    }
  }
  if (options.continue_final_message) {
    if (options.add_generation_prompt) {
      throw ChatTemplateError("chat template '" + format_.name +
                              "': continue_final_message and add_generation_prompt cannot both be set");
    }
    if (messages.back().role != "assistant") {
      fail(format_, messages.size() - 1,
           "continue_final_message needs a final assistant message to continue, found '" + messages.back().role + "'");
    }
    if (python_strip(messages.back().content).empty()) {
      fail(format_, messages.size() - 1, "continue_final_message needs a final message with content to continue");
    }
  }
  const bool leading_system = messages.front().role == "system";
  const std::optional<std::string> system =
      leading_system ? std::optional<std::string>(messages.front().content) : format_.default_system_prompt;
  const std::span<const ChatMessage> rest(messages.data() + (leading_system ? 1 : 0),
                                          messages.size() - (leading_system ? 1 : 0));
  const std::size_t first_index = leading_system ? 1 : 0;  // of rest[0], for error messages

  Renderer renderer(format_, options);
  if (format_.system_placement == SystemPlacement::unsupported && leading_system) {
    fail(format_, 0, "this template takes no system message");
  }
  if (format_.alternate_roles) {
    for (std::size_t k = 0; k < rest.size(); ++k) {
      const char* expected = k % 2 == 0 ? "user" : "assistant";
      if (rest[k].role != expected) {
        fail(format_, first_index + k,
             "roles must alternate user/assistant/user/... after an optional leading system "
             "message: expected '" +
                 std::string(expected) + "', found '" + rest[k].role + "'");
      }
    }
  }
  if (format_.add_bos) renderer.out() += options.bos_token;
  const bool own_turn = format_.system_placement == SystemPlacement::own_turn;
  if (own_turn && system) renderer.turn(format_.system, *system, renderer.preamble());
  for (std::size_t k = 0; k < rest.size(); ++k) {
    const ChatMessage& message = rest[k];
    const TurnFormat& turn = renderer.format_of(message.role);
    const bool merge = !own_turn && system && message.role == "user" &&
                       ((format_.system_placement == SystemPlacement::first_user && k == 0) ||
                        (format_.system_placement == SystemPlacement::last_user && k + 1 == rest.size()));
    if (merge) {
      const std::string content = turn.trim ? python_strip(message.content) : message.content;
      TurnFormat untrimmed = turn;
      untrimmed.trim = false;
      renderer.turn(untrimmed, *system + format_.system_separator + content);
    } else {
      renderer.turn(turn, message.content);
    }
  }
  if (options.add_generation_prompt) renderer.out() += format_.generation_prompt;
  if (options.continue_final_message) cut_after_final_message(renderer.out(), messages.back().content);
  return std::move(renderer.out());
}

std::string ChatTemplate::render_json(const nlohmann::ordered_json& messages, const RenderOptions& options) const {
  if (is_jinja()) return render_jinja(messages, options);
  if (!messages.is_array()) throw ChatTemplateError("the conversation must be a list of messages");
  std::vector<ChatMessage> plain;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const nlohmann::ordered_json& message = messages[i];
    const auto role = message.is_object() ? message.find("role") : message.end();
    const auto content = message.is_object() ? message.find("content") : message.end();
    if (!message.is_object() || role == message.end() || !role->is_string() ||
        (content != message.end() && !content->is_string() && !content->is_null())) {
      fail(format_, i, "chat format '" + format_.name + "' takes messages with a string role and string content");
    }
    plain.push_back({role->get<std::string>(),
                     content == message.end() || content->is_null() ? std::string() : content->get<std::string>()});
  }
  return render(plain, options);
}

}  // namespace pagedllm::chat
