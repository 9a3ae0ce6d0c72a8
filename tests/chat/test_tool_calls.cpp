// Tool calls read out of generated text (core/chat/tool_calls.h): Hermes and Llama 3 JSON, the
// array a forced "required" choice writes, what streaming may show before the end, and tool-call
// messages as a Jinja template sees them.
#include <boost/test/unit_test.hpp>
#include <string>

#include "core/chat/chat_template.h"
#include "core/chat/tool_calls.h"

namespace pagedllm::chat {

BOOST_AUTO_TEST_SUITE(tool_calls)

BOOST_AUTO_TEST_CASE(hermes_reads_every_call_and_the_text_before_the_first) {
  const ParsedToolCalls parsed = parse_tool_calls(
      ToolCallFormat::hermes,
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\",\"days\":2}}\n"
      "</tool_call>\n<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>");
  BOOST_TEST_REQUIRE(parsed.calls.size() == 2u);
  BOOST_TEST(parsed.calls[0].name == "get_weather");
  BOOST_TEST(parsed.calls[0].arguments == "{\"city\": \"Paris\", \"days\": 2}");  // json.dumps' separators
  BOOST_TEST(parsed.calls[0].id.empty());
  BOOST_TEST(parsed.calls[1].name == "get_time");
  BOOST_TEST(parsed.calls[1].arguments == "{}");
  BOOST_TEST(parsed.content.value_or("<none>") == "Let me check.\n");
}

BOOST_AUTO_TEST_CASE(hermes_takes_an_unterminated_last_call_and_keeps_unicode) {
  const ParsedToolCalls parsed = parse_tool_calls(
      ToolCallFormat::hermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"q\": \"caf\\u00e9 ☕\"}}");
  BOOST_TEST_REQUIRE(parsed.calls.size() == 1u);
  BOOST_TEST(parsed.calls[0].arguments == "{\"q\": \"café ☕\"}");
  BOOST_TEST(!parsed.content.has_value());  // nothing came before the call
}

BOOST_AUTO_TEST_CASE(a_text_that_does_not_parse_as_calls_is_all_content) {
  for (const std::string text : {"no calls here", "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": ",
                                 "<tool_call>{\"arguments\": {}}</tool_call>",               // no name
                                 "<tool_call>{\"name\": 3, \"arguments\": {}}</tool_call>",  // not a string
                                 "<tool_call>{\"name\": \"f\"}</tool_call>",                 // no arguments
                                 "<tool_call>[1]</tool_call>"}) {
    BOOST_TEST_CONTEXT(text) {
      const ParsedToolCalls parsed = parse_tool_calls(ToolCallFormat::hermes, text);
      BOOST_TEST(parsed.calls.empty());
      BOOST_TEST(parsed.content.value_or("<none>") == text);
    }
  }
  // One good call and one bad: none is taken (no half-parsed output).
  const std::string mixed =
      "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"g\"}</tool_call>";
  BOOST_TEST(parse_tool_calls(ToolCallFormat::hermes, mixed).calls.empty());
}

BOOST_AUTO_TEST_CASE(llama3_json_reads_calls_separated_by_semicolons) {
  const ParsedToolCalls parsed =
      parse_tool_calls(ToolCallFormat::llama3_json,
                       "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; "
                       "{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}");
  BOOST_TEST_REQUIRE(parsed.calls.size() == 2u);
  BOOST_TEST(parsed.calls[0].name == "get_weather");
  BOOST_TEST(parsed.calls[0].arguments == "{\"city\": \"Paris\"}");
  BOOST_TEST(parsed.calls[1].arguments == "{\"tz\": \"CET\"}");
  BOOST_TEST(!parsed.content.has_value());
  // Text first, trailing garbage, or a call cut short: all content.
  for (const std::string text :
       {"The weather is {\"name\": \"f\", \"parameters\": {}}", "{\"name\": \"f\", \"parameters\": {}} and more",
        "{\"name\": \"f\", \"parameters\": {\"a\": 1"}) {
    BOOST_TEST_CONTEXT(text) {
      const ParsedToolCalls none = parse_tool_calls(ToolCallFormat::llama3_json, text);
      BOOST_TEST(none.calls.empty());
      BOOST_TEST(none.content.value_or("<none>") == text);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_required_array_is_read_with_its_parameters) {
  const ParsedToolCalls parsed = parse_tool_call_array(
      "[{\"name\": \"a\", \"parameters\": {\"x\": [1, 2.5, null, true]}}, {\"name\": \"b\", \"parameters\": {}}]");
  BOOST_TEST_REQUIRE(parsed.calls.size() == 2u);
  BOOST_TEST(parsed.calls[0].arguments == "{\"x\": [1, 2.5, null, true]}");
  BOOST_TEST(parsed.calls[1].name == "b");
  BOOST_TEST(!parsed.content.has_value());
  BOOST_TEST(parse_tool_call_array("[{\"name\": \"a\", \"parameters\": {\"x\"").calls.empty());  // cut by max_tokens
  BOOST_TEST(parse_tool_call_array("[]").calls.empty());
  BOOST_TEST(parse_tool_call_array("[{\"name\": \"a\"}]").content.value_or("") == "[{\"name\": \"a\"}]");
}

BOOST_AUTO_TEST_CASE(streaming_holds_back_only_what_may_be_a_call) {
  const ToolCallFormat hermes = ToolCallFormat::hermes;
  BOOST_TEST(tool_call_free_prefix(hermes, "Hello there") == 11u);
  BOOST_TEST(tool_call_free_prefix(hermes, "Hello <") == 6u);  // "<" may start "<tool_call>"
  BOOST_TEST(tool_call_free_prefix(hermes, "Hello <tool_c") == 6u);
  BOOST_TEST(tool_call_free_prefix(hermes, "Hello <b>") == 9u);
  BOOST_TEST(tool_call_free_prefix(hermes, "Hi <tool_call>{\"name\"") == 3u);
  const ToolCallFormat llama = ToolCallFormat::llama3_json;
  BOOST_TEST(tool_call_free_prefix(llama, "  ") == 0u);  // undecided
  BOOST_TEST(tool_call_free_prefix(llama, " {\"name\": ") == 0u);
  BOOST_TEST(tool_call_free_prefix(llama, "<|python") == 0u);
  BOOST_TEST(tool_call_free_prefix(llama, " It is sunny") == 12u);
}

BOOST_AUTO_TEST_CASE(json_values_end_where_their_brackets_close) {
  BOOST_TEST(json_value_end(R"({"a": "}", "b": [1, {"c": "\"]"}]} tail)", 0) == 34u);
  BOOST_TEST(json_value_end(R"(x "str\"ing" y)", 2) == 12u);
  BOOST_TEST(json_value_end("[1, 2", 0) == std::string_view::npos);
  BOOST_TEST(json_value_end("12.5; next", 0) == 4u);
}

BOOST_AUTO_TEST_CASE(formats_are_named_and_detected_from_templates) {
  BOOST_TEST(to_string(tool_call_format_named("llama3_json")) == "llama3_json");
  BOOST_CHECK_THROW(tool_call_format_named("mistral"), std::invalid_argument);
  BOOST_TEST((detect_tool_call_format("... within <tool_call></tool_call> XML tags ...") == ToolCallFormat::hermes));
  BOOST_TEST((detect_tool_call_format("<|start_header_id|>ipython<|end_header_id|>") == ToolCallFormat::llama3_json));
  BOOST_TEST(!detect_tool_call_format("{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}").has_value());
}

BOOST_AUTO_TEST_CASE(tool_call_messages_reach_a_jinja_template_as_openai_shapes_them) {
  const ChatTemplate chat = ChatTemplate::from_jinja(
      "{% for m in messages %}[{{ m.role }}:{{ m.content }}"
      "{% if 'tool_calls' in m %}{% for c in m.tool_calls %}{{ c.id }}/{{ c.type }}/{{ c.function.name }}"
      "({{ c.function.arguments | tojson }}){% endfor %}{% endif %}"
      "{% if m.tool_call_id is defined %}#{{ m.tool_call_id }}{% endif %}]{% endfor %}",
      "tool_messages.jinja");
  std::vector<ChatMessage> messages = {{.role = "user", .content = "Weather?"},
                                       {.role = "assistant", .content = ""},
                                       {.role = "tool", .content = "sunny"}};
  messages[1].tool_calls = {{.id = "c1", .name = "get_weather", .arguments = "{\"city\": \"Paris\"}"},
                            {.id = "c2", .name = "raw", .arguments = "not json"}};
  messages[2].tool_call_id = "c1";
  RenderOptions options;
  options.add_generation_prompt = false;
  BOOST_TEST(chat.render(messages, options) ==
             "[user:Weather?][assistant:c1/function/get_weather({\"city\": \"Paris\"})c2/function/raw(\"not json\")]"
             "[tool:sunny#c1]");
  // A format has no way to write calls: refused, naming the message.
  BOOST_CHECK_THROW(ChatTemplate::named("chatml").render(messages), ChatTemplateError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::chat
