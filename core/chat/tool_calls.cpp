#include "core/chat/tool_calls.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/chat/jinja/json_dumps.h"
#include "core/chat/jinja/value.h"

namespace pagedllm::chat {
namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kWhitespace = " \t\n\r";

bool is_space(char c) { return kWhitespace.find(c) != std::string_view::npos; }

size_t skip_space(std::string_view text, size_t at) {
  while (at < text.size() && is_space(text[at])) ++at;
  return at;
}

// The longest end of `text` that `marker` starts with (a marker that may still be arriving).
size_t partial_marker_at_end(std::string_view text, std::string_view marker) {
  for (size_t length = std::min(text.size(), marker.size() - 1); length > 0; --length) {
    if (marker.starts_with(text.substr(text.size() - length))) return length;
  }
  return 0;
}

// {"name": "...", <arguments_key or fallback_key>: any JSON} -> a call; nullopt when the text is
// not such an object. The arguments go out as Python's json.dumps writes them (vLLM's form).
std::optional<ToolCall> read_call(const nlohmann::ordered_json& call, std::string_view arguments_key,
                                  std::string_view fallback_key) {
  if (!call.is_object()) return std::nullopt;
  const auto name = call.find("name");
  if (name == call.end() || !name->is_string()) return std::nullopt;
  auto arguments = call.find(arguments_key);
  if (arguments == call.end() && !fallback_key.empty()) arguments = call.find(fallback_key);
  if (arguments == call.end()) return std::nullopt;
  return ToolCall{.id = "",
                  .name = name->get<std::string>(),
                  .arguments = jinja::python_json_dumps(jinja::Value::from_json(*arguments), jinja::JsonDumpOptions{})};
}

std::optional<ToolCall> read_call(std::string_view json_text, std::string_view arguments_key,
                                  std::string_view fallback_key) {
  const nlohmann::ordered_json call = nlohmann::ordered_json::parse(json_text, nullptr, false);
  if (call.is_discarded()) return std::nullopt;
  return read_call(call, arguments_key, fallback_key);
}

ParsedToolCalls no_calls(std::string_view text) { return ParsedToolCalls{std::string(text), {}}; }

ParsedToolCalls parse_hermes(std::string_view text) {
  const size_t first = text.find(kHermesOpen);
  if (first == std::string_view::npos) return no_calls(text);
  ParsedToolCalls parsed;
  for (size_t open = first; open != std::string_view::npos; open = text.find(kHermesOpen, open)) {
    const size_t body = open + kHermesOpen.size();
    const size_t close = text.find(kHermesClose, body);  // npos: the last block is unterminated
    std::optional<ToolCall> call = read_call(
        text.substr(body, close == std::string_view::npos ? std::string_view::npos : close - body), "arguments", "");
    if (!call) return no_calls(text);
    parsed.calls.push_back(std::move(*call));
    if (close == std::string_view::npos) break;
    open = close + kHermesClose.size();
  }
  if (first > 0) parsed.content = std::string(text.substr(0, first));
  return parsed;
}

ParsedToolCalls parse_llama3_json(std::string_view text) {
  size_t at = skip_space(text, 0);
  if (text.substr(at).starts_with(kPythonTag)) at += kPythonTag.size();
  at = skip_space(text, at);
  if (at == text.size() || text[at] != '{') return no_calls(text);
  ParsedToolCalls parsed;
  while (at < text.size()) {
    const size_t end = json_value_end(text, at);
    if (end == std::string_view::npos) return no_calls(text);
    std::optional<ToolCall> call = read_call(text.substr(at, end - at), "arguments", "parameters");
    if (!call) return no_calls(text);
    parsed.calls.push_back(std::move(*call));
    at = skip_space(text, end);
    if (at == text.size()) break;
    if (text[at] != ';') return no_calls(text);  // calls are separated by "; "
    at = skip_space(text, at + 1);
  }
  return parsed;
}

}  // namespace

std::string_view to_string(ToolCallFormat format) noexcept {
  switch (format) {
    case ToolCallFormat::hermes:
      return "hermes";
    case ToolCallFormat::llama3_json:
      return "llama3_json";
  }
  return "hermes";
}

ToolCallFormat tool_call_format_named(std::string_view name) {
  if (name == "hermes") return ToolCallFormat::hermes;
  if (name == "llama3_json") return ToolCallFormat::llama3_json;
  throw std::invalid_argument("unknown tool-call parser '" + std::string(name) + "' (known: hermes, llama3_json)");
}

std::optional<ToolCallFormat> detect_tool_call_format(std::string_view template_text) {
  if (template_text.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::hermes;
  const bool llama3_headers = template_text.find("<|start_header_id|>") != std::string_view::npos;
  if (template_text.find(kPythonTag) != std::string_view::npos ||
      (llama3_headers && template_text.find("ipython") != std::string_view::npos)) {
    return ToolCallFormat::llama3_json;
  }
  return std::nullopt;
}

ParsedToolCalls parse_tool_calls(ToolCallFormat format, std::string_view text) {
  return format == ToolCallFormat::hermes ? parse_hermes(text) : parse_llama3_json(text);
}

ParsedToolCalls parse_tool_call_array(std::string_view text) {
  const nlohmann::ordered_json calls = nlohmann::ordered_json::parse(text, nullptr, false);
  if (calls.is_discarded() || !calls.is_array() || calls.empty()) return no_calls(text);
  ParsedToolCalls parsed;
  for (const nlohmann::ordered_json& item : calls) {
    std::optional<ToolCall> call = read_call(item, "parameters", "");
    if (!call) return no_calls(text);
    parsed.calls.push_back(std::move(*call));
  }
  return parsed;
}

size_t tool_call_free_prefix(ToolCallFormat format, std::string_view text) {
  if (format == ToolCallFormat::hermes) {
    const size_t open = text.find(kHermesOpen);
    return open != std::string_view::npos ? open : text.size() - partial_marker_at_end(text, kHermesOpen);
  }
  // llama3_json: the output is calls only when it starts with one; until its first visible
  // bytes show which, nothing is content.
  const std::string_view start = text.substr(skip_space(text, 0));
  if (start.empty() || start.front() == '{' || start.starts_with(kPythonTag) || kPythonTag.starts_with(start)) {
    return 0;
  }
  return text.size();
}

size_t json_value_end(std::string_view text, size_t begin) {
  if (begin >= text.size()) return std::string_view::npos;
  const char first = text[begin];
  if (first != '{' && first != '[' && first != '"') {  // a number or a literal: up to a delimiter
    size_t end = begin;
    while (end < text.size() && !is_space(text[end]) &&
           std::string_view(",;]}").find(text[end]) == std::string_view::npos) {
      ++end;
    }
    return end;
  }
  int depth = 0;
  bool in_string = false;
  for (size_t at = begin; at < text.size(); ++at) {
    const char c = text[at];
    if (in_string) {
      if (c == '\\') {
        ++at;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
        if (depth == 0) return at + 1;  // a bare string value
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return at + 1;
    }
  }
  return std::string_view::npos;
}

}  // namespace pagedllm::chat
