// Tool calling on the chat route: tools / tool_choice / parallel_tool_calls and tool messages
// read into the request, the schema a forced call is constrained to, and how a choice's text
// becomes content and tool calls, whole and streamed (tool_call_output.h), in OpenAI's shapes.
#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "core/structured/output_constraint.h"
#include "tools/server/openai_request.h"
#include "tools/server/openai_response.h"
#include "tools/server/openai_tools.h"
#include "tools/server/tool_call_output.h"

namespace pagedllm::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

const char* const kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"$ref": "#/$defs/unit"}},
                   "required": ["city", "unit"], "$defs": {"unit": {"enum": ["C", "F"]}}}}},
  {"type": "function", "function": {"name": "get_time"}}
])";

ChatRequest parse(const std::string& extra) {
  return parse_chat_request(json::parse(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": )" +
                                        std::string(kTools) + extra + "}"),
                            {});
}

bool matches(const ordered_json& schema, const std::string& text) {
  structured::ConstraintSpec spec;
  spec.kind = structured::ConstraintKind::json_schema;
  spec.schema = schema;
  spec.layout.any_whitespace = false;
  return structured::compile_constraint(spec).matches(text);
}

// A counter for call ids, so that tests can name them.
std::function<std::string()> counting_ids() {
  return [n = 0]() mutable { return "call_" + std::to_string(n++); };
}

ChoiceDelta text_delta(std::string text, std::optional<std::string> finish = std::nullopt) {
  ChoiceDelta delta;
  delta.text = std::move(text);
  delta.finish_reason = std::move(finish);
  return delta;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(openai_tools)

BOOST_AUTO_TEST_CASE(tools_and_tool_choice_are_read) {
  const ChatRequest automatic = parse("");
  BOOST_TEST(automatic.tools.names == (std::vector<std::string>{"get_weather", "get_time"}),
             boost::test_tools::per_element());
  BOOST_TEST((automatic.tools.effective_choice() == ToolChoice::auto_call));  // the default with tools
  BOOST_TEST(automatic.tools.parallel_tool_calls);
  const ChatRequest named =
      parse(R"(, "tool_choice": {"type": "function", "function": {"name": "get_time"}}, "parallel_tool_calls": false)");
  BOOST_TEST((named.tools.effective_choice() == ToolChoice::named));
  BOOST_TEST(named.tools.named_function == "get_time");
  BOOST_TEST(!named.tools.parallel_tool_calls);
  BOOST_TEST(named.tools.forces_call());
  BOOST_TEST((parse(R"(, "tool_choice": "none")").tools.effective_choice() == ToolChoice::none));
  BOOST_TEST(parse(R"(, "tool_choice": "required")").tools.forces_call());
  // Without tools: none, and "none" is the only choice.
  const ChatRequest plain =
      parse_chat_request(json::parse(R"({"model": "m", "messages": [{"role": "user", "content": "x"}]})"), {});
  BOOST_TEST((plain.tools.effective_choice() == ToolChoice::none));
}

BOOST_AUTO_TEST_CASE(a_conversation_with_tool_calls_and_results_is_read) {
  const ChatRequest r = parse_chat_request(json::parse(R"({"model": "m", "messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "18 C"}]}]})"),
                                           {});
  BOOST_TEST_REQUIRE(r.messages.size() == 3u);
  BOOST_TEST(r.messages[1].content.empty());
  BOOST_TEST_REQUIRE(r.messages[1].tool_calls.size() == 1u);
  BOOST_TEST(r.messages[1].tool_calls[0].id == "call_1");
  BOOST_TEST(r.messages[1].tool_calls[0].name == "get_weather");
  BOOST_TEST(r.messages[1].tool_calls[0].arguments == "{\"city\": \"Paris\"}");
  BOOST_TEST(r.messages[2].role == "tool");
  BOOST_TEST(r.messages[2].tool_call_id == "call_1");
  BOOST_TEST(r.messages[2].content == "18 C");
}

BOOST_AUTO_TEST_CASE(a_named_function_constrains_the_output_to_its_parameters) {
  const ordered_json tools = ordered_json::parse(kTools);
  ToolRequest request = parse(R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})").tools;
  const ordered_json schema = forced_call_schema(tools, request);
  BOOST_TEST(schema == tools[0]["function"]["parameters"]);
  BOOST_TEST(matches(schema, R"({"city": "Paris", "unit": "C"})"));
  BOOST_TEST(!matches(schema, R"({"unit": "C", "city": "Paris"})"));  // the schema's order
  // No parameters: a function that takes none.
  request.named_function = "get_time";
  BOOST_TEST(matches(forced_call_schema(tools, request), "{}"));
  BOOST_TEST(!matches(forced_call_schema(tools, request), R"({"a": 1})"));
}

BOOST_AUTO_TEST_CASE(required_constrains_the_output_to_an_array_of_calls_of_the_tools) {
  const ordered_json tools = ordered_json::parse(kTools);
  const ordered_json schema = forced_call_schema(tools, parse(R"(, "tool_choice": "required")").tools);
  // The first tool's $defs moved with it, its $ref rewritten to follow.
  BOOST_TEST(schema["$defs"]["tool_0"]["properties"]["unit"]["$ref"] == "#/$defs/tool_0/$defs/unit");
  BOOST_TEST(matches(schema, R"([{"name": "get_weather", "parameters": {"city": "Oslo", "unit": "F"}}])"));
  BOOST_TEST(matches(schema, R"([{"name": "get_time", "parameters": {}}, {"name": "get_time", "parameters": {}}])"));
  BOOST_TEST(!matches(schema, "[]"));                                                         // at least one
  BOOST_TEST(!matches(schema, R"([{"name": "get_time", "parameters": {"city": "Oslo"}}])"));  // its own schema
  BOOST_TEST(!matches(schema, R"([{"name": "other", "parameters": {}}])"));
  // parallel_tool_calls false: one call.
  const ordered_json single =
      forced_call_schema(tools, parse(R"(, "tool_choice": "required", "parallel_tool_calls": false)").tools);
  BOOST_TEST(matches(single, R"([{"name": "get_time", "parameters": {}}])"));
  BOOST_TEST(!matches(single, R"([{"name": "get_time", "parameters": {}}, {"name": "get_time", "parameters": {}}])"));
}

BOOST_AUTO_TEST_CASE(auto_streams_content_until_a_call_may_start_and_the_calls_at_the_end) {
  ToolCallOutput output({.kind = ToolOutputMode::Kind::parsed, .format = chat::ToolCallFormat::hermes, .function = ""},
                        counting_ids());
  std::string content;
  std::vector<chat::ToolCall> calls;
  std::optional<std::string> finish;
  for (ChoiceDelta delta :
       {text_delta("Checking"), text_delta(" now <"), text_delta("tool_call>{\"name\": \"get_time\","),
        text_delta(" \"arguments\": {}}</tool_call>", "stop")}) {
    output.stream(delta);
    if (delta.finish_reason) finish = delta.finish_reason;
    if (!delta.finish_reason) BOOST_TEST(delta.tool_calls.empty());
    content += delta.text;
    calls.insert(calls.end(), delta.tool_calls.begin(), delta.tool_calls.end());
  }
  BOOST_TEST(content == "Checking now ");
  BOOST_TEST_REQUIRE(calls.size() == 1u);
  BOOST_TEST(calls[0].id == "call_0");
  BOOST_TEST(calls[0].name == "get_time");
  BOOST_TEST(calls[0].arguments == "{}");
  BOOST_TEST(finish.value_or("") == "tool_calls");
}

BOOST_AUTO_TEST_CASE(auto_without_calls_sends_everything_as_content) {
  ToolCallOutput output({.kind = ToolOutputMode::Kind::parsed, .format = chat::ToolCallFormat::hermes, .function = ""},
                        counting_ids());
  ChoiceDelta first = text_delta("a <tool_call>{broken");
  output.stream(first);
  BOOST_TEST(first.text == "a ");
  ChoiceDelta last = text_delta("", "length");
  output.stream(last);
  BOOST_TEST(last.text == "<tool_call>{broken");  // held back, then released as text
  BOOST_TEST(last.tool_calls.empty());
  BOOST_TEST(last.finish_reason.value_or("") == "length");
}

BOOST_AUTO_TEST_CASE(a_named_call_streams_its_arguments_as_they_come) {
  ToolCallOutput output({.kind = ToolOutputMode::Kind::named, .format = {}, .function = "get_weather"}, counting_ids());
  ChoiceDelta first = text_delta("{\"city\":");
  output.stream(first);
  BOOST_TEST(first.text.empty());
  BOOST_TEST_REQUIRE(first.tool_calls.size() == 1u);
  BOOST_TEST(first.tool_calls[0].id == "call_0");
  BOOST_TEST(first.tool_calls[0].name == "get_weather");
  BOOST_TEST(first.tool_calls[0].arguments == "{\"city\":");
  ChoiceDelta last = text_delta(" \"Paris\"}", "stop");
  output.stream(last);
  BOOST_TEST_REQUIRE(last.tool_calls.size() == 1u);
  BOOST_TEST(last.tool_calls[0].id.empty());  // a continuation
  BOOST_TEST(last.tool_calls[0].arguments == " \"Paris\"}");
  BOOST_TEST(last.finish_reason.value_or("") == "stop");  // as OpenAI answers a forced function
}

BOOST_AUTO_TEST_CASE(whole_responses_carry_calls_with_null_content_in_openai_shape) {
  ChoiceDelta required = text_delta(R"([{"name": "get_time", "parameters": {}}, {"name": "get_weather",
                                        "parameters": {"city": "Oslo", "unit": "C"}}])",
                                    "stop");
  ToolCallOutput({.kind = ToolOutputMode::Kind::required, .format = {}, .function = ""}, counting_ids())
      .complete(required);
  BOOST_TEST(required.finish_reason.value_or("") == "tool_calls");
  const json response = chat_response({.id = "chatcmpl-1", .created = 1, .model = "m"}, {required}, {}, false);
  const json& message = response["choices"][0]["message"];
  BOOST_TEST(message["content"].is_null());
  BOOST_TEST(message["tool_calls"] ==
             json::parse(R"([{"id": "call_0", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
                             {"id": "call_1", "type": "function", "function": {"name": "get_weather",
                              "arguments": "{\"city\": \"Oslo\", \"unit\": \"C\"}"}}])"));
  BOOST_TEST(response["choices"][0]["finish_reason"] == "tool_calls");

  // Cut short by max_tokens: not calls; the text as content, finish "length".
  ChoiceDelta cut = text_delta(R"([{"name": "get_ti)", "length");
  ToolCallOutput({.kind = ToolOutputMode::Kind::required, .format = {}, .function = ""}, counting_ids()).complete(cut);
  BOOST_TEST(cut.tool_calls.empty());
  const json cut_message = chat_response({.id = "c", .created = 1, .model = "m"}, {cut}, {}, false);
  BOOST_TEST(cut_message["choices"][0]["message"]["content"] == R"([{"name": "get_ti)");
  BOOST_TEST(!cut_message["choices"][0]["message"].contains("tool_calls"));
  BOOST_TEST(cut_message["choices"][0]["finish_reason"] == "length");
}

BOOST_AUTO_TEST_CASE(stream_chunks_carry_tool_call_deltas_with_their_index) {
  ChoiceDelta delta;
  delta.tool_calls = {{.id = "call_0", .name = "f", .arguments = "{"}, {.id = "", .name = "", .arguments = "}"}};
  const json chunk = chat_chunk({.id = "c", .created = 1, .model = "m"}, delta, false, false);
  BOOST_TEST(chunk["choices"][0]["delta"] ==
             json::parse(R"({"tool_calls": [{"index": 0, "id": "call_0", "type": "function",
                                             "function": {"name": "f", "arguments": "{"}},
                                            {"index": 1, "function": {"arguments": "}"}}]})"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::server
