// One chat choice's output as the request's tool_choice shapes it: the generated text becomes
// the message's content, its tool calls, or both, whole (a response) or as it streams (chunks).
// - text: no tools in play; the text is the content;
// - parsed (tool_choice auto): the text is read with the model's tool-call format; while
//   streaming, content goes out until a call may be starting, and the calls go out at the end;
// - named: the text is the named function's arguments; streamed as they come (the first chunk
//   names the function and carries the call's id);
// - required: the text is a JSON array of {"name", "parameters"}; the calls go out at the end.
// Calls found by parsed or required end the choice with finish_reason "tool_calls"; a text
// that does not parse (cut short by max_tokens, or a model that wrote something else) goes out
// as content with the engine's finish reason, as vLLM answers.
#pragma once

#include <functional>
#include <string>

#include "core/chat/tool_calls.h"
#include "tools/server/openai_response.h"

namespace pagedllm::server {

struct ToolOutputMode {
  enum class Kind { text, parsed, named, required };
  Kind kind = Kind::text;
  chat::ToolCallFormat format = chat::ToolCallFormat::hermes;  // parsed: the model's format
  std::string function;                                        // named: the function
};

class ToolCallOutput {
 public:
  // `make_call_id` names each call ("chatcmpl-tool-...").
  ToolCallOutput(ToolOutputMode mode, std::function<std::string()> make_call_id);

  // Streaming: `delta` carries the choice's new text and, at the end, its finish reason. Its
  // text becomes the content to send now, its tool_calls the call deltas to send now, and its
  // finish reason is set as above.
  void stream(ChoiceDelta& delta);
  // A whole response: the choice's text becomes its content and tool calls.
  void complete(ChoiceDelta& choice);

 private:
  // The calls in the whole text (parsed, required), and where its content ends; no calls: the
  // whole text is content.
  chat::ParsedToolCalls parse(const std::string& text) const;
  std::vector<chat::ToolCall> with_ids(std::vector<chat::ToolCall> calls);  // each call given its id

  ToolOutputMode mode_;
  std::function<std::string()> make_call_id_;
  std::string text_;           // streaming: everything generated so far
  size_t content_sent_ = 0;    // streaming: bytes of text_ sent as content
  bool call_started_ = false;  // streaming, named: the call's first delta went out
};

}  // namespace pagedllm::server
