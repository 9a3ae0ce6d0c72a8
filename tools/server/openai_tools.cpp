#include "tools/server/openai_tools.h"

#include <algorithm>
#include <string_view>

namespace pagedllm::server {
namespace {

constexpr size_t kMaxFunctionNameBytes = 64;  // OpenAI's rule for function names

// OpenAI's function names: ^[a-zA-Z0-9_-]{1,64}$ (they go into prompts and tool-call ids).
bool valid_function_name(const std::string& name) {
  return !name.empty() && name.size() <= kMaxFunctionNameBytes && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

void refuse_unknown_keys(const JsonValue& object, std::initializer_list<std::string_view> known) {
  for (const auto& [key, member] : object.json().items()) {
    if (member.is_null() || std::find(known.begin(), known.end(), key) != known.end()) continue;
    object.derived(member, object.path() + "." + key).fail("unknown field");
  }
}

const std::string& function_name_of(const JsonValue& function) {
  const std::optional<JsonValue> name = function.find("name");
  if (!name) throw JsonError(function.path() + ".name", "required");
  const std::string& text = name->string();
  if (!valid_function_name(text)) {
    name->fail("a function name is 1 to 64 characters of a-z, A-Z, 0-9, _ and -, got \"" +
               text.substr(0, kMaxFunctionNameBytes) + (text.size() > kMaxFunctionNameBytes ? "...\"" : "\""));
  }
  return text;
}

// The function's parameters as a schema; none given: a function that takes no arguments.
nlohmann::ordered_json parameters_of(const nlohmann::ordered_json& tool) {
  const nlohmann::ordered_json& function = tool.at("function");
  const auto parameters = function.find("parameters");
  if (parameters == function.end() || parameters->is_null()) {
    return nlohmann::ordered_json{{"type", "object"}, {"properties", nlohmann::ordered_json::object()}};
  }
  return *parameters;
}

// Every "$ref": "#..." inside a schema moved under `prefix` ("#/$defs/tool_0"), so that a
// function's parameters keep their own $defs where required's schema puts them. Values that are
// data, not schemas (enum, const, default, examples), are left as they are.
void prefix_refs(nlohmann::ordered_json& schema, const std::string& prefix) {
  if (schema.is_array()) {
    for (nlohmann::ordered_json& item : schema) prefix_refs(item, prefix);
    return;
  }
  if (!schema.is_object()) return;
  for (auto& [key, value] : schema.items()) {
    if (key == "enum" || key == "const" || key == "default" || key == "examples") continue;
    if (key == "$ref" && value.is_string() && value.get<std::string>().starts_with("#")) {
      value = prefix + value.get<std::string>().substr(1);
    } else {
      prefix_refs(value, prefix);
    }
  }
}

}  // namespace

void read_tools(const JsonValue& value, ToolRequest& out) {
  value.expect_array();
  for (size_t i = 0; i < value.size(); ++i) {
    const JsonValue tool = value.at(i);
    tool.expect_object();
    const std::optional<JsonValue> type = tool.find("type");
    if (!type) throw JsonError(tool.path() + ".type", "required");
    if (type->string() != "function")
      type->fail("only \"function\" tools are supported, got \"" + type->string() + "\"");
    refuse_unknown_keys(tool, {"type", "function"});
    const std::optional<JsonValue> function = tool.find("function");
    if (!function) throw JsonError(tool.path() + ".function", "required");
    function->expect_object();
    refuse_unknown_keys(*function, {"name", "description", "parameters", "strict"});
    const std::string& name = function_name_of(*function);
    if (const auto description = function->find("description")) description->string();
    if (const auto parameters = function->find("parameters")) parameters->expect_object();
    if (const auto strict = function->find("strict")) strict->boolean();  // schemas are always enforced
    if (std::find(out.names.begin(), out.names.end(), name) != out.names.end()) {
      function->at("name").fail("two tools are named \"" + name + "\"");
    }
    out.names.push_back(name);
  }
}

void read_tool_choice(const JsonValue& value, ToolRequest& out) {
  if (value.json().is_string()) {
    const std::string& choice = value.string();
    if (choice == "none") {
      out.choice = ToolChoice::none;
    } else if (choice == "auto") {
      out.choice = ToolChoice::auto_call;
    } else if (choice == "required") {
      out.choice = ToolChoice::required;
    } else {
      value.fail(
          "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}, got "
          "\"" +
          choice + "\"");
    }
    return;
  }
  if (!value.json().is_object()) value.fail_type("a string or an object naming a function");
  refuse_unknown_keys(value, {"type", "function"});
  const std::optional<JsonValue> type = value.find("type");
  if (!type) throw JsonError(value.path() + ".type", "required");
  if (type->string() != "function") type->fail("must be \"function\", got \"" + type->string() + "\"");
  const std::optional<JsonValue> function = value.find("function");
  if (!function) throw JsonError(value.path() + ".function", "required");
  function->expect_object();
  refuse_unknown_keys(*function, {"name"});
  out.choice = ToolChoice::named;
  out.named_function = function_name_of(*function);
}

void check_tool_choice(const ToolRequest& request, bool has_output_constraint) {
  const ToolChoice choice = request.effective_choice();
  if (choice != ToolChoice::none && !request.has_tools()) {
    throw JsonError("tool_choice", "needs tools: give the functions in \"tools\"");
  }
  if (choice == ToolChoice::named &&
      std::find(request.names.begin(), request.names.end(), request.named_function) == request.names.end()) {
    throw JsonError("tool_choice.function.name", "no tool is named \"" + request.named_function + "\"");
  }
  if (request.forces_call() && has_output_constraint) {
    throw JsonError("tool_choice",
                    "a forced tool call (\"required\" or a named function) constrains the output itself: it cannot "
                    "be combined with response_format, structured_outputs or guided_*");
  }
}

nlohmann::ordered_json forced_call_schema(const nlohmann::ordered_json& tools, const ToolRequest& request) {
  if (request.effective_choice() == ToolChoice::named) {
    for (const nlohmann::ordered_json& tool : tools) {
      if (tool.at("function").at("name") == request.named_function) return parameters_of(tool);
    }
    throw JsonError("tool_choice.function.name", "no tool is named \"" + request.named_function + "\"");
  }
  nlohmann::ordered_json calls = nlohmann::ordered_json::array();
  nlohmann::ordered_json definitions = nlohmann::ordered_json::object();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string definition = "tool_" + std::to_string(i);
    nlohmann::ordered_json parameters = parameters_of(tools[i]);
    prefix_refs(parameters, "#/$defs/" + definition);
    definitions[definition] = std::move(parameters);
    calls.push_back(
        {{"type", "object"},
         {"properties",
          {{"name",
            {{"type", "string"}, {"enum", nlohmann::ordered_json::array({tools[i].at("function").at("name")})}}},
           {"parameters", {{"$ref", "#/$defs/" + definition}}}}},
         {"required", nlohmann::ordered_json::array({"name", "parameters"})}});
  }
  nlohmann::ordered_json schema{{"type", "array"}, {"minItems", 1}};
  if (!request.parallel_tool_calls) schema["maxItems"] = 1;
  schema["items"] = {{"anyOf", std::move(calls)}};
  schema["$defs"] = std::move(definitions);
  return schema;
}

}  // namespace pagedllm::server
