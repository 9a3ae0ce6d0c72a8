#include "tools/server/tool_call_output.h"

#include <utility>

namespace pagedllm::server {
namespace {

using Kind = ToolOutputMode::Kind;

// Calls found end the choice with "tool_calls", unless it was aborted.
void mark_tool_calls(ChoiceDelta& choice) {
  if (!choice.tool_calls.empty() && choice.finish_reason && *choice.finish_reason != "abort") {
    choice.finish_reason = "tool_calls";
  }
}

}  // namespace

ToolCallOutput::ToolCallOutput(ToolOutputMode mode, std::function<std::string()> make_call_id)
    : mode_(std::move(mode)), make_call_id_(std::move(make_call_id)) {}

chat::ParsedToolCalls ToolCallOutput::parse(const std::string& text) const {
  return mode_.kind == Kind::parsed ? chat::parse_tool_calls(mode_.format, text) : chat::parse_tool_call_array(text);
}

std::vector<chat::ToolCall> ToolCallOutput::with_ids(std::vector<chat::ToolCall> calls) {
  for (chat::ToolCall& call : calls) call.id = make_call_id_();
  return calls;
}

void ToolCallOutput::stream(ChoiceDelta& delta) {
  if (mode_.kind == Kind::text) return;
  const bool finished = delta.finish_reason.has_value();
  if (mode_.kind == Kind::named) {
    // The arguments as they come; the first delta names the call.
    std::string arguments = std::exchange(delta.text, "");
    if (!call_started_ && (!arguments.empty() || finished)) {
      delta.tool_calls.push_back({.id = make_call_id_(), .name = mode_.function, .arguments = std::move(arguments)});
      call_started_ = true;
    } else if (!arguments.empty()) {
      delta.tool_calls.push_back({.id = "", .name = "", .arguments = std::move(arguments)});
    }
    return;
  }
  text_ += std::exchange(delta.text, "");
  if (!finished) {
    // parsed: the content that no call can be part of; required: nothing until the end.
    const size_t free = mode_.kind == Kind::parsed ? chat::tool_call_free_prefix(mode_.format, text_) : 0;
    if (free > content_sent_) delta.text = text_.substr(content_sent_, free - content_sent_);
    content_sent_ = std::max(content_sent_, free);
    return;
  }
  chat::ParsedToolCalls parsed = parse(text_);
  if (parsed.calls.empty()) {
    delta.text = text_.substr(content_sent_);
    return;
  }
  const size_t content_end = parsed.content ? parsed.content->size() : 0;  // a prefix of text_
  if (content_end > content_sent_) delta.text = text_.substr(content_sent_, content_end - content_sent_);
  delta.tool_calls = with_ids(std::move(parsed.calls));
  mark_tool_calls(delta);
}

void ToolCallOutput::complete(ChoiceDelta& choice) {
  switch (mode_.kind) {
    case Kind::text:
      return;
    case Kind::named:
      choice.tool_calls = with_ids({{.id = "", .name = mode_.function, .arguments = std::move(choice.text)}});
      choice.text.clear();
      return;
    case Kind::parsed:
    case Kind::required:
      break;
  }
  chat::ParsedToolCalls parsed = parse(choice.text);
  if (parsed.calls.empty()) return;
  choice.text = parsed.content.value_or("");
  choice.tool_calls = with_ids(std::move(parsed.calls));
  mark_tool_calls(choice);
}

}  // namespace pagedllm::server
