// Tool calls in a model's own words: the formats chat models are trained to call functions in,
// read back out of the generated text. Used for tool_choice "auto", where the model decides
// whether to call a tool and says so in its family's format:
// - hermes (Hermes 2 Pro, Qwen 2.5 / 3, many fine-tunes): zero or more
//   `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks after optional text; the
//   last block may be unterminated (generation stopped at the end-of-turn token);
// - llama3_json (Llama 3.1 / 3.2 / 3.3 with JSON tool calling): the whole output is
//   `<|python_tag|>`? `{"name": ..., "parameters": {...}}`, several separated by "; ".
// The rules are vLLM's parsers' of the same names (their non-streaming results): a text that
// does not parse as calls is returned whole as content, never half-parsed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm::chat {

// One call, as OpenAI's tool_calls list carries it.
struct ToolCall {
  std::string id;         // "chatcmpl-tool-..."; empty until the server names it
  std::string name;       // the function's name
  std::string arguments;  // a JSON object's text (json.dumps style: ", " and ": ", UTF-8 kept)
};

enum class ToolCallFormat { hermes, llama3_json };

std::string_view to_string(ToolCallFormat format) noexcept;
// "hermes" or "llama3_json"; throws std::invalid_argument listing the names for another.
ToolCallFormat tool_call_format_named(std::string_view name);
// The format a chat template teaches its model, from the markers in its text (`<tool_call>`:
// hermes; `<|python_tag|>` or Llama 3's ipython environment: llama3_json); nullopt for none.
std::optional<ToolCallFormat> detect_tool_call_format(std::string_view template_text);

struct ParsedToolCalls {
  // The text that is not a call, always a prefix of the text (what came before the first call);
  // nullopt when there is none.
  std::optional<std::string> content;
  std::vector<ToolCall> calls;  // ids left empty
};

// The calls in a whole generated text. No calls (the text has none, or they do not parse as
// JSON objects with a string "name" and the arguments): content is the whole text.
ParsedToolCalls parse_tool_calls(ToolCallFormat format, std::string_view text);

// The output of a forced "required" tool choice: a JSON array of {"name", "parameters"} objects
// (server/openai_tools.h writes its schema). Anything else: no calls, the text as content.
ParsedToolCalls parse_tool_call_array(std::string_view text);

// Streaming: how many leading bytes of the text so far are content whatever comes next. The
// rest may be, or start, a call: it is held back until the output ends.
size_t tool_call_free_prefix(ToolCallFormat format, std::string_view text);

// The end of the JSON value that starts at `begin` (an object, array or string: brackets matched,
// strings skipped), or npos when the text ends first. Does not validate the value.
size_t json_value_end(std::string_view text, size_t begin);

}  // namespace pagedllm::chat
