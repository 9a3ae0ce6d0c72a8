// Recognising a model's Jinja chat template (for --describe): the family, and what varies inside
// it; and the recognised format renders what the template itself renders when it is run.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "core/chat/chat_template.h"
#include "tests/chat/known_templates.h"

namespace pagedllm::chat {
namespace {

// SmolLM2-135M-Instruct's template, as its GGUF stores it (the newlines inside the Jinja string
// literals are real newline characters).
const std::string kSmolLm2Template =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}";

// Qwen2-Instruct's (the same structure, "\n" written as Jinja escapes): known_templates.h.
using testing::kQwen2Template;

const std::string kLlama3Template =
    R"({% set loop_messages = messages %}{% for message in loop_messages %}{% set content = )"
    R"('<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim )"
    R"(+ '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %})"
    R"({{ content }}{% endfor %}{% if add_generation_prompt %})"
    R"({{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %})";

// The parts of Llama 3.1's template that matter without tools.
const std::string kLlama31Template = R"({{- bos_token }}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- for message in messages %}
    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
)";

const std::string kMistralV01Template = R"({%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.first and system_message is defined %}
            {{- ' [INST] ' + system_message + '\n\n' + message['content'] + ' [/INST]' }}
        {%- else %}
            {{- ' [INST] ' + message['content'] + ' [/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'] + eos_token}}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') }}
    {%- endif %}
{%- endfor %}
)";

const std::string kMistralNoSystemTemplate =
    R"({{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != )"
    R"((loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate )"
    R"(user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %})"
    R"({{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %})"
    R"({{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant )"
    R"(roles are supported!') }}{% endif %}{% endfor %})";

std::string unknown_error(const std::string& text, const std::string& source) {
  try {
    ChatTemplate::recognise(text, source);
  } catch (const UnknownChatTemplateError& error) {
    return error.what();
  }
  return "(recognised)";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(chat_recognise)

BOOST_AUTO_TEST_CASE(smollm2_template_is_chatml_with_its_default_system_prompt) {
  const ChatTemplate chat = ChatTemplate::recognise(kSmolLm2Template, "SmolLM2.gguf");
  BOOST_TEST(to_string(chat.family()) == "chatml");
  BOOST_TEST(chat.format().default_system_prompt.value_or("(none)") ==
             "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  BOOST_TEST(!chat.format().add_bos);
  BOOST_TEST(!chat.format().user.trim);
  BOOST_TEST(chat.render({{"user", "Hi"}}) ==
             "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
             "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

BOOST_AUTO_TEST_CASE(qwen2_template_decodes_jinja_escapes_in_the_default_prompt) {
  const ChatTemplate chat = ChatTemplate::recognise(kQwen2Template, "tokenizer_config.json");
  BOOST_TEST(to_string(chat.family()) == "chatml");
  BOOST_TEST(chat.format().default_system_prompt.value_or("(none)") == "You are a helpful assistant.");
  BOOST_TEST(chat.render({{"system", "S"}, {"user", "Q"}}, {false, "", "", {}}) ==
             "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n");
}

BOOST_AUTO_TEST_CASE(llama3_template_has_bos_and_trims) {
  const ChatTemplate chat = ChatTemplate::recognise(kLlama3Template, "llama3");
  BOOST_TEST(to_string(chat.family()) == "llama3");
  BOOST_TEST(chat.format().add_bos);
  BOOST_TEST(chat.format().user.trim);
  BOOST_TEST(!chat.format().default_system_prompt.has_value());
  BOOST_TEST(chat.format().system_preamble.empty());
}

BOOST_AUTO_TEST_CASE(llama31_template_yields_the_dated_preamble) {
  const ChatTemplate chat = ChatTemplate::recognise(kLlama31Template, "llama3.1");
  BOOST_TEST(to_string(chat.family()) == "llama3");
  BOOST_TEST(chat.format().system_preamble == "Cutting Knowledge Date: December 2023\nToday Date: {date}\n\n");
  BOOST_TEST(chat.format().default_date == "26 Jul 2024");
  BOOST_TEST(chat.format().date_format.empty());
  BOOST_TEST(chat.format().default_system_prompt.value_or("(none)").empty());
  RenderOptions options;
  options.bos_token = "<|begin_of_text|>";
  BOOST_TEST(chat.render({{"system", " Terse. "}, {"user", "Hi"}}, options) ==
             "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: "
             "December 2023\nToday Date: 26 Jul 2024\n\nTerse.<|eot_id|><|start_header_id|>user"
             "<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  // Llama 3.2 asks the renderer for today's date.
  std::string llama32 = kLlama31Template;
  llama32.replace(llama32.find("{%- set date_string = \"26 Jul 2024\" %}"), 39,
                  "{%- if strftime_now is defined %}{%- set date_string = strftime_now(\"%d %b %Y\") %}"
                  "{%- else %}{%- set date_string = \"26 Jul 2024\" %}{%- endif %}");
  BOOST_TEST(ChatTemplate::recognise(llama32, "llama3.2").format().date_format == "%d %b %Y");
}

BOOST_AUTO_TEST_CASE(mistral_v01_template_yields_its_spacing_and_system_placement) {
  const ChatTemplate chat = ChatTemplate::recognise(kMistralV01Template, "mistral");
  const ChatFormat& format = chat.format();
  BOOST_TEST(to_string(chat.family()) == "mistral");
  BOOST_TEST(format.user.prefix == " [INST] ");
  BOOST_TEST(format.user.suffix == " [/INST]");
  BOOST_TEST(format.assistant.prefix == " ");
  BOOST_TEST(format.assistant.eos);
  BOOST_TEST(!format.assistant.trim);
  BOOST_TEST(format.add_bos);
  BOOST_TEST((format.system_placement == SystemPlacement::first_user));
  BOOST_TEST(format.system_separator == "\n\n");
  RenderOptions options{true, "<s>", "</s>", {}};
  BOOST_TEST(chat.render({{"system", "S"}, {"user", "Q"}, {"assistant", "A"}, {"user", "R"}}, options) ==
             "<s> [INST] S\n\nQ [/INST] A</s> [INST] R [/INST]");
}

BOOST_AUTO_TEST_CASE(mistral_template_without_system_support_refuses_system_messages) {
  const ChatTemplate chat = ChatTemplate::recognise(kMistralNoSystemTemplate, "mistral-v0.1");
  BOOST_TEST((chat.format().system_placement == SystemPlacement::unsupported));
  BOOST_TEST(chat.format().assistant.prefix.empty());
  BOOST_TEST(chat.format().user.prefix == "[INST] ");
  BOOST_CHECK_THROW(chat.render({{"system", "S"}, {"user", "Q"}}), ChatTemplateError);
  BOOST_TEST(chat.render({{"user", "Q"}, {"assistant", "A"}}, {true, "<s>", "</s>", {}}) == "<s>[INST] Q [/INST]A</s>");
}

BOOST_AUTO_TEST_CASE(recognised_formats_render_what_the_templates_render_when_run) {
  const std::vector<std::vector<ChatMessage>> conversations = {
      {{"user", "Hi"}},
      {{"system", "S"}, {"user", " Q "}, {"assistant", "A\n"}, {"user", "R"}},
      {{"user", "Q"}, {"assistant", "A"}},
  };
  for (const std::string* text :
       {&kSmolLm2Template, &kQwen2Template, &kLlama3Template, &kLlama31Template, &kMistralV01Template}) {
    const ChatTemplate recognised = ChatTemplate::recognise(*text, "template");
    const ChatTemplate run = ChatTemplate::from_jinja(*text, "template");
    for (const std::vector<ChatMessage>& messages : conversations) {
      for (const bool generation_prompt : {true, false}) {
        const RenderOptions options{generation_prompt, "<s>", "</s>", {}};
        BOOST_TEST(run.render(messages, options) == recognised.render(messages, options), recognised.description());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(unknown_template_error_names_the_source_and_quotes_the_start) {
  const std::string text =
      "{% for m in messages %}### {{ m['role'] }}:\n{{ m['content'] }}\n{% endfor %}### Assistant:";
  const std::string message = unknown_error(text, "model/tokenizer_config.json");
  BOOST_TEST(message.find("model/tokenizer_config.json") == 0u, message);
  BOOST_TEST(message.find("unrecognised chat template") != std::string::npos, message);
  // The first 60 characters, newlines shown as \n, then "...".
  BOOST_TEST(message.find("\"{% for m in messages %}### {{ m['role'] }}:\\n{{ m['content'] ...\"") != std::string::npos,
             message);
  BOOST_TEST(message.find("only ChatML, Llama 3 and Mistral templates") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(known_markers_with_unsupported_structure_are_refused) {
  const std::string think = unknown_error(
      "{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{{ '<|im_start|>assistant\\n<think>' }}",
      "qwen3");
  BOOST_TEST(think.find("<think>") != std::string::npos, think);
  const std::string v7 = unknown_error("{{ '[SYSTEM_PROMPT]' + s + '[/SYSTEM_PROMPT][INST]' }}", "mistral-small");
  BOOST_TEST(v7.find("[SYSTEM_PROMPT]") != std::string::npos, v7);
  BOOST_CHECK_THROW(ChatTemplate::recognise("", "empty"), UnknownChatTemplateError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::chat
