// Tool calling on /v1/chat/completions: the request's "tools", "tool_choice" and
// "parallel_tool_calls" read and checked, and the JSON schema that constrains the output when
// the choice forces a call.
// - "none": the model answers in text (the template still sees the tools, as vLLM passes them);
// - "auto" (the default when tools are given): the model decides; its output is read back with
//   the tool-call parser of its chat template's format (core/chat/tool_calls.h);
// - "required": the output is constrained to a JSON array of {"name", "parameters"} calls of the
//   listed tools (at most one when parallel_tool_calls is false), each one's parameters to its
//   function's schema;
// - {"type": "function", "function": {"name": N}}: the output is constrained to N's parameters,
//   and is N's arguments.
// As vLLM: finish_reason is "tool_calls" when auto or required called tools, and "stop" for a
// named function (as OpenAI answers a forced call).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/common/json_value.h"

namespace pagedllm::server {

enum class ToolChoice { none, auto_call, required, named };

struct ToolRequest {
  std::vector<std::string> names;  // the tools' function names, in the request's order
  std::optional<ToolChoice> choice;
  std::string named_function;  // ToolChoice::named: the function
  bool parallel_tool_calls = true;

  bool has_tools() const noexcept { return !names.empty(); }
  // The choice, or its default: auto with tools, none without.
  ToolChoice effective_choice() const noexcept {
    return choice.value_or(has_tools() ? ToolChoice::auto_call : ToolChoice::none);
  }
  // required and named constrain the output to a schema.
  bool forces_call() const noexcept {
    return effective_choice() == ToolChoice::required || effective_choice() == ToolChoice::named;
  }
};

// Each throws JsonError naming the field at fault ("tools[1].function.name").
void read_tools(const JsonValue& value, ToolRequest& out);
void read_tool_choice(const JsonValue& value, ToolRequest& out);
// The rules between fields, once every field is read: a choice other than "none" needs tools, a
// named function must be one of them, and a forced call excludes a structured-outputs
// constraint (`has_output_constraint`).
void check_tool_choice(const ToolRequest& request, bool has_output_constraint);

// The schema of the output when the choice forces a call, from `tools` as the body wrote them
// (nlohmann::ordered_json keeps the order of their properties): the named function's parameters,
// or required's array of calls (the server compiles it with json.dumps' layout). A function
// without parameters takes none: {}. Each function's
// own $defs stay reachable: required's schema holds each function's parameters under
// $defs/tool_<i> and prefixes the $refs inside with that path.
nlohmann::ordered_json forced_call_schema(const nlohmann::ordered_json& tools, const ToolRequest& request);

}  // namespace pagedllm::server
