// OpenAI's responses, stream chunks and usage as OpenAI (and vLLM's server) shape them. Pure
// functions over JSON: no sockets, no engine.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/tool_calls.h"
#include "core/frontend/request_stream.h"
#include "tools/server/openai_errors.h"

namespace pagedllm::server {

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};
nlohmann::json to_json(const Usage& usage);  // with total_tokens

// Logprobs below this (-inf included) are sent as it, as vLLM does: JSON has no infinity.
inline constexpr float kMinLogprob = -9999.0f;

// One output token with its logprob and, when asked, the top alternatives (best first; the
// builders send them as given).
using frontend::TokenLogprob;  // a token's text and logprob, with the top alternatives

struct ChoiceDelta {
  int32_t index = 0;
  std::string text;                          // new text (streaming) or the whole text
  std::optional<std::string> finish_reason;  // "stop", "length", "tool_calls", "abort"; unset while running
  // Chat: the calls (a response), or the call deltas of a chunk, the k-th being the choice's k-th
  // call (a delta with no id continues that call's arguments). tool_call_output.h fills them.
  std::vector<chat::ToolCall> tool_calls;
  std::vector<TokenLogprob> logprobs;  // for the tokens behind `text`, when asked
  int32_t text_offset = 0;             // completions' logprobs.text_offset of the first token
};

struct ResponseHeader {
  std::string id;       // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
};

// POST /v1/completions: "object": "text_completion"; logprobs as the legacy format (tokens,
// token_logprobs, top_logprobs as {token: logprob}, text_offset) or null. text_offset counts
// bytes: text_offset, then that plus each earlier token's byte length.
nlohmann::json completion_response(const ResponseHeader& header, const std::vector<ChoiceDelta>& choices,
                                   const Usage& usage, bool with_logprobs);
// A chunk's logprobs cover the tokens behind its text; a chunk with none (the chat role chunk, a
// bare finish) has logprobs null. A chunk has no "usage" key (see usage_chunk).
nlohmann::json completion_chunk(const ResponseHeader& header, const ChoiceDelta& choice, bool with_logprobs);

// POST /v1/chat/completions: "object": "chat.completion"; message {role: assistant, content,
// tool_calls [{id, type: "function", function: {name, arguments}}] when there are calls};
// content null when there are calls and no text;
// logprobs {"content": [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]} or null.
nlohmann::json chat_response(const ResponseHeader& header, const std::vector<ChoiceDelta>& choices, const Usage& usage,
                             bool with_logprobs);
// "object": "chat.completion.chunk"; the first chunk of a choice carries delta {role: assistant,
// content: ""}; later ones delta {content} and/or {tool_calls: [{index, id, type, function:
// {name, arguments}}]} (id, type and name only on a call's first delta); the last one an empty
// delta and finish_reason (or {content} and finish_reason when it still carries text).
nlohmann::json chat_chunk(const ResponseHeader& header, const ChoiceDelta& choice, bool with_logprobs,
                          bool first_of_choice);

// The stream's last chunk with stream_options.include_usage: "choices": [] and the usage.
nlohmann::json usage_chunk(const ResponseHeader& header, bool chat, const Usage& usage);

// One server-sent event: "data: <json>\n\n"; and the terminator "data: [DONE]\n\n".
std::string sse_event(const nlohmann::json& chunk);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace pagedllm::server
