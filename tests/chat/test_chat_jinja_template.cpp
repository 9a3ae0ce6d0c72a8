// ChatTemplate over a model's Jinja template: the variables transformers passes (messages as
// given, tools, documents, add_generation_prompt, bos_token, eos_token, date_string), and
// continue_final_message cut where Hugging Face cuts it.
#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "core/chat/chat_template.h"

namespace pagedllm::chat {
namespace {

const char* const kToolTemplate =
    "{{ bos_token }}{% if tools %}[{{ tools | map(attribute='function.name') | join(',') }}]{% endif %}"
    "{% for m in messages %}<{{ m.role }}>{{ m.content if m.content is string else '' }}"
    "{% for call in m.tool_calls or [] %}{{ call.function.name }}({{ call.function.arguments | tojson }})"
    "{% endfor %}{% if m.tool_call_id is defined %}#{{ m.tool_call_id }}{% endif %}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}";

RenderOptions options_with(bool generation_prompt) {
  RenderOptions options;
  options.add_generation_prompt = generation_prompt;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  return options;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(chat_jinja_template)

BOOST_AUTO_TEST_CASE(messages_and_tools_reach_the_template_as_given) {
  const ChatTemplate chat = ChatTemplate::from_jinja(kToolTemplate, "tools.jinja");
  const auto messages = nlohmann::ordered_json::parse(R"([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": null,
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "a": 1}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
  ])");
  RenderOptions options = options_with(true);
  options.tools = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather"}},
                                                    {"type": "function", "function": {"name": "search"}}])");
  BOOST_TEST(chat.render_json(messages, options) ==
             "<s>[get_weather,search]<user>Weather?</s><assistant>get_weather({\"city\": \"Paris\", \"a\": 1})</s>"
             "<tool>sunny#c1</s><assistant>");
  options.tools.reset();  // no tools: `tools` is None
  BOOST_TEST(chat.render_json(messages, options).rfind("<s><user>", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(documents_is_none_and_date_string_is_passed_when_given) {
  const ChatTemplate chat = ChatTemplate::from_jinja(
      "{{ documents is none }} {{ date_string | default('unset') }} {{ add_generation_prompt }}", "vars.jinja");
  RenderOptions options = options_with(false);
  BOOST_TEST(chat.render({{"user", "Q"}}, options) == "True unset False");
  options.date_string = "01 Jan 2025";
  BOOST_TEST(chat.render({{"user", "Q"}}, options) == "True 01 Jan 2025 False");
}

BOOST_AUTO_TEST_CASE(continue_final_message_cuts_after_the_final_content) {
  const ChatTemplate chat = ChatTemplate::from_jinja(
      "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</{{ m.role }}>{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}",
      "trim.jinja");
  RenderOptions options = options_with(false);
  options.continue_final_message = true;
  // Trimmed by the template: the cut keeps the stripped content.
  BOOST_TEST(chat.render({{"user", "Q"}, {"assistant", " The answer is \n"}}, options) ==
             "<user>Q</user><assistant>The answer is");
  BOOST_CHECK_THROW(chat.render({{"user", "Q"}}, options), ChatTemplateError);  // not the assistant's
  BOOST_CHECK_THROW(chat.render({{"user", "Q"}, {"assistant", "  "}}, options), ChatTemplateError);
  options.add_generation_prompt = true;
  BOOST_CHECK_THROW(chat.render({{"user", "Q"}, {"assistant", "A"}}, options), ChatTemplateError);
}

BOOST_AUTO_TEST_CASE(formats_render_json_messages_with_string_content) {
  const ChatTemplate chatml = ChatTemplate::named("chatml");
  RenderOptions options = options_with(true);
  BOOST_TEST(chatml.render_json(nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Hi"}])"), options) ==
             "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  BOOST_CHECK_THROW(chatml.render_json(
                        nlohmann::ordered_json::parse(R"([{"role": "user", "content": [{"type": "text"}]}])"), options),
                    ChatTemplateError);
  BOOST_CHECK_THROW(ChatTemplate::from_jinja("{{ messages }}", "t").format(), ChatTemplateError);
  BOOST_TEST(ChatTemplate::from_jinja("{{ messages }}", "t.jinja").description() ==
             "the model's Jinja template (t.jinja)");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::chat
