// Chat templates: turning a conversation into the prompt text a model was trained on.
//
// Models ship a Jinja template (tokenizer_config.json "chat_template", GGUF
// "tokenizer.chat_template"). pagedllm runs it, as vLLM, SGLang and llama.cpp's --jinja do:
// core/chat/jinja is an interpreter for the part of Jinja that Hugging Face chat templates use,
// and ChatTemplate::from_jinja renders with the variables transformers' apply_chat_template
// passes (messages, tools, documents, add_generation_prompt, bos_token, eos_token, and
// date_string when given). The output equals Jinja2's under transformers' settings, byte for
// byte (tests/pypi/check_chat_template.py compares the two over the templates of 18 model
// families). A template that does not parse is refused when it is loaded; one that fails while
// rendering (raise_exception, an undefined attribute) throws a ChatTemplateError with the
// template's message, which the server answers with 400.
//
// Instead of the model's template, a user can name a built-in format (ChatML, Llama 3 / 3.1,
// Mistral v0.3 / v0.1) or give one as JSON; these are ChatFormats, rendered by pagedllm's own
// code. ChatTemplate::recognise still extracts a ChatFormat from a template of one of those
// families (for `pagedllm chat-template --describe`, to start a JSON format from a model's).
//
// User-supplied formats (ChatTemplate::from_file) are JSON; every key is optional except the
// three roles, unknown keys are refused:
//   {
//     "name": "my-format",
//     "bos": true,                     // prepend RenderOptions::bos_token
//     "system":    {"prefix": "<|im_start|>system\n", "suffix": "<|im_end|>\n", "trim": false},
//     "user":      {"prefix": "<|im_start|>user\n", "suffix": "<|im_end|>\n"},
//     "assistant": {"prefix": "<|im_start|>assistant\n", "suffix": "<|im_end|>\n", "eos": false},
//     "generation_prompt": "<|im_start|>assistant\n",
//     "default_system_prompt": "You are a helpful assistant.",   // when no system message leads
//     "system_placement": "turn",      // "turn" | "first_user" | "last_user" | "none"
//     "system_separator": "\n\n",      // between a merged system prompt and the user message
//     "alternate_roles": false,        // require user/assistant/user/... after the system message
//     "system_preamble": "",           // before the leading system content; "{date}" = the date:
//     "date_format": "%d %b %Y",       //   today's date in this strftime format when given,
//     "default_date": "26 Jul 2024"    //   else this (RenderOptions::date_string overrides both)
//   }
// "trim" strips the message content as Python's str.strip() does (Jinja's `trim`); "eos"
// appends RenderOptions::eos_token after the suffix.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/chat_errors.h"
#include "core/chat/tool_calls.h"

namespace pagedllm::chat {

namespace jinja {
class Template;
}

struct ChatMessage {
  std::string role;  // "system" | "user" | "assistant" | "tool" (a Jinja template's to judge)
  std::string content;
  // An assistant turn that called tools: its calls. A Jinja template sees them as OpenAI's
  // tool_calls list ({id, type: "function", function: {name, arguments}}) with the arguments as
  // JSON (parsed, as vLLM and transformers pass them), and sees no tool_calls key when empty.
  std::vector<ToolCall> tool_calls{};
  std::string tool_call_id{};  // a "tool" turn: the id of the call it answers ("" = none)
};

enum class ChatFamily { chatml, llama3, mistral, custom };

std::string_view to_string(ChatFamily family) noexcept;

struct TurnFormat {
  std::string prefix;
  std::string suffix;
  bool trim = false;  // strip the content's surrounding whitespace (Python str.strip)
  bool eos = false;   // append the EOS token after the suffix
};

// Where a system message goes. own_turn: a turn of its own (ChatML, Llama 3); first_user /
// last_user: merged into the first user message, or into the last message when that is a user
// message (Mistral; else it is dropped, as the templates do); unsupported: a system message is an
// error (Mistral v0.1).
enum class SystemPlacement { own_turn, first_user, last_user, unsupported };

struct ChatFormat {
  std::string name;
  ChatFamily family = ChatFamily::custom;
  bool add_bos = false;
  TurnFormat system;
  TurnFormat user;
  TurnFormat assistant;
  std::string generation_prompt;  // empty: the template has none (Mistral)
  std::optional<std::string> default_system_prompt;
  SystemPlacement system_placement = SystemPlacement::own_turn;
  std::string system_separator = "\n\n";
  bool alternate_roles = false;
  // Put between the leading system turn's prefix and its content; "{date}" is replaced by
  // RenderOptions::date_string, else today's date in `date_format` (strftime) when set, else
  // `default_date`.
  std::string system_preamble;
  std::string date_format;
  std::string default_date;
};

struct RenderOptions {
  bool add_generation_prompt = true;
  std::string bos_token;  // the text of the model's BOS token, e.g. "<|begin_of_text|>"
  std::string eos_token;
  std::optional<std::string> date_string;  // Llama 3.1's `date_string` template variable
  // End the text inside the final message, which must be the assistant's and not blank, so that
  // the model continues it (Hugging Face's and vLLM's continue_final_message, cut where Hugging
  // Face cuts); excludes add_generation_prompt.
  bool continue_final_message = false;
  // The tools the request offers (a list of OpenAI tool objects), passed to a Jinja template as
  // `tools`; absent: None. Formats (named, JSON) ignore them.
  std::optional<nlohmann::ordered_json> tools{};
};

// How a chat prompt ends, as a request chooses it (vLLM's chat fields of the same names), and the
// tools it offers; the model's BOS / EOS texts complete these into RenderOptions.
struct ChatPromptOptions {
  bool add_generation_prompt = true;              // open the assistant's turn
  bool continue_final_message = false;            // end inside the final assistant message instead
  std::optional<nlohmann::ordered_json> tools{};  // the request's tools, for a Jinja template
};

class ChatTemplate {
 public:
  // A format rendered by pagedllm's own code (built-in or JSON).
  explicit ChatTemplate(ChatFormat format);

  // The model's Jinja template, parsed now and run by render(). `source` names where it came
  // from (a file, "tokenizer.chat_template of X.gguf") in errors. Throws JinjaSyntaxError naming
  // the source and line.
  static ChatTemplate from_jinja(std::string_view template_text, std::string source);
  // The format of a template of a family pagedllm knows (ChatML, Llama 3 / 3.1, Mistral v0.1 /
  // v0.3), extracted from its text: for --describe. Throws UnknownChatTemplateError naming the
  // source and quoting the start of the text for any other template.
  static ChatTemplate recognise(std::string_view template_text, std::string_view source);
  // "chatml", "llama3" (3.0), "llama3.1", "mistral" (v0.3: [INST] ... [/INST], system prompt in
  // the last user message), "mistral-v1" (" [INST] ", system prompt in the first user message).
  // Throws ChatTemplateError listing the names for another name.
  static ChatTemplate named(std::string_view name);
  // A format in the JSON described above. Throws ChatTemplateError naming the file and the key.
  static ChatTemplate from_file(const std::string& path);

  bool is_jinja() const noexcept { return jinja_ != nullptr; }
  // The Jinja text (empty for a format).
  const std::string& jinja_text() const noexcept { return jinja_text_; }
  // The format; throws ChatTemplateError for a Jinja template, which has none.
  const ChatFormat& format() const;
  ChatFamily family() const { return format().family; }
  // One line for people: `the model's Jinja template (SOURCE)`, or a format's name and what
  // was recognised, e.g. `chatml, default system prompt "You are a helpful assistant."`.
  std::string description() const;

  // Renders `messages` (role and content). Throws ChatTemplateError naming the problem: for a
  // format, an empty conversation, a role other than system / user / assistant, roles that do
  // not alternate where the format requires it; for a Jinja template, what the template raised
  // or where it failed (JinjaRuntimeError, TemplateRaisedError); for both, a final message to
  // continue that is not the assistant's.
  std::string render(const std::vector<ChatMessage>& messages, const RenderOptions& options = {}) const;
  // The same over messages as JSON objects, as an OpenAI request gives them: a Jinja template
  // sees every field (role, content, tool_calls, tool_call_id, name, ...); a format needs role
  // and string content.
  std::string render_json(const nlohmann::ordered_json& messages, const RenderOptions& options = {}) const;

 private:
  std::string render_jinja(const nlohmann::ordered_json& messages, const RenderOptions& options) const;

  ChatFormat format_;
  std::shared_ptr<const jinja::Template> jinja_;  // set: the model's template, run
  std::string jinja_text_;
  std::string jinja_source_;
};

// A format as from_file's JSON (from_file reads it back to the same format, family aside): to
// show what recognise() found, or to start a custom format from it.
nlohmann::json to_format_json(const ChatFormat& format);

}  // namespace pagedllm::chat
