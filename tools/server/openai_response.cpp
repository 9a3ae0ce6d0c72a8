#include "tools/server/openai_response.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace pagedllm::server {

using nlohmann::json;

namespace {

// The float's shortest decimal as a double: -0.1f goes out as -0.1, not -0.10000000149011612.
double widen(float value) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer) - 1, value);
  if (ec != std::errc()) return value;
  *end = '\0';
  return std::strtod(buffer, nullptr);
}

// JSON has no infinity or NaN (nlohmann would write null); vLLM sends -9999.0 for -inf.
double wire_logprob(float logprob) {
  if (std::isnan(logprob) || logprob < kMinLogprob) return kMinLogprob;
  if (std::isinf(logprob)) return 0.0;  // +inf: not a log probability; the most it can be
  return widen(logprob);
}

json header_fields(const ResponseHeader& header, const char* object) {
  return json{{"id", header.id}, {"object", object}, {"created", header.created}, {"model", header.model}};
}

json finish_reason(const ChoiceDelta& choice) {
  return choice.finish_reason ? json(*choice.finish_reason) : json(nullptr);
}

// Legacy: parallel arrays, top alternatives as {text: logprob}. Two alternatives with the same
// text (different ids, same decoding) share a key; the first listed (the caller lists them best
// first) is kept.
json completion_logprobs(const ChoiceDelta& choice) {
  json tokens = json::array();
  json token_logprobs = json::array();
  json top_logprobs = json::array();
  json text_offset = json::array();
  int64_t offset = choice.text_offset;
  for (const TokenLogprob& token : choice.logprobs) {
    tokens.push_back(token.token);
    token_logprobs.push_back(wire_logprob(token.logprob));
    json top = json::object();
    for (const auto& [text, logprob] : token.top) top.emplace(text, wire_logprob(logprob));
    top_logprobs.push_back(std::move(top));
    text_offset.push_back(offset);
    offset += static_cast<int64_t>(token.token.size());
  }
  return json{{"tokens", std::move(tokens)},
              {"token_logprobs", std::move(token_logprobs)},
              {"top_logprobs", std::move(top_logprobs)},
              {"text_offset", std::move(text_offset)}};
}

json utf8_bytes(const std::string& text) {
  json bytes = json::array();
  for (char c : text) bytes.push_back(static_cast<int>(static_cast<unsigned char>(c)));
  return bytes;
}

json chat_logprobs(const ChoiceDelta& choice) {
  json content = json::array();
  for (const TokenLogprob& token : choice.logprobs) {
    json top = json::array();
    for (const auto& [text, logprob] : token.top) {
      top.push_back(json{{"token", text}, {"logprob", wire_logprob(logprob)}, {"bytes", utf8_bytes(text)}});
    }
    content.push_back(json{{"token", token.token},
                           {"logprob", wire_logprob(token.logprob)},
                           {"bytes", utf8_bytes(token.token)},
                           {"top_logprobs", std::move(top)}});
  }
  return json{{"content", std::move(content)}};
}

// OpenAI's tool_calls list; a stream chunk's calls carry their index, and a call with no id is a
// streamed continuation (index and arguments).
json tool_calls_json(const std::vector<chat::ToolCall>& calls, bool streamed) {
  json list = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const chat::ToolCall& call = calls[i];
    json function = json::object();
    if (!call.name.empty()) function["name"] = call.name;
    function["arguments"] = call.arguments;
    json item = json::object();
    if (streamed) item["index"] = i;
    if (!call.id.empty()) {
      item["id"] = call.id;
      item["type"] = "function";
    }
    item["function"] = std::move(function);
    list.push_back(std::move(item));
  }
  return list;
}

// Streamed chunks carry logprobs only for the tokens they carry: a chunk with none (the role
// chunk, a bare finish) has null.
bool chunk_has_logprobs(const ChoiceDelta& choice, bool with_logprobs) {
  return with_logprobs && !choice.logprobs.empty();
}

}  // namespace

json to_json(const Usage& usage) {
  return json{{"prompt_tokens", usage.prompt_tokens},
              {"completion_tokens", usage.completion_tokens},
              {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

json completion_response(const ResponseHeader& header, const std::vector<ChoiceDelta>& choices, const Usage& usage,
                         bool with_logprobs) {
  json out = header_fields(header, "text_completion");
  json list = json::array();
  for (const ChoiceDelta& choice : choices) {
    list.push_back(json{{"index", choice.index},
                        {"text", choice.text},
                        {"logprobs", with_logprobs ? completion_logprobs(choice) : json(nullptr)},
                        {"finish_reason", finish_reason(choice)}});
  }
  out["choices"] = std::move(list);
  out["usage"] = to_json(usage);
  return out;
}

json completion_chunk(const ResponseHeader& header, const ChoiceDelta& choice, bool with_logprobs) {
  json out = header_fields(header, "text_completion");
  out["choices"] = json::array(
      {json{{"index", choice.index},
            {"text", choice.text},
            {"logprobs", chunk_has_logprobs(choice, with_logprobs) ? completion_logprobs(choice) : json(nullptr)},
            {"finish_reason", finish_reason(choice)}}});
  return out;
}

json chat_response(const ResponseHeader& header, const std::vector<ChoiceDelta>& choices, const Usage& usage,
                   bool with_logprobs) {
  json out = header_fields(header, "chat.completion");
  json list = json::array();
  for (const ChoiceDelta& choice : choices) {
    json message{{"role", "assistant"}, {"content", choice.text}};
    if (!choice.tool_calls.empty()) {
      if (choice.text.empty()) message["content"] = nullptr;
      message["tool_calls"] = tool_calls_json(choice.tool_calls, false);
    }
    list.push_back(json{{"index", choice.index},
                        {"message", std::move(message)},
                        {"logprobs", with_logprobs ? chat_logprobs(choice) : json(nullptr)},
                        {"finish_reason", finish_reason(choice)}});
  }
  out["choices"] = std::move(list);
  out["usage"] = to_json(usage);
  return out;
}

json chat_chunk(const ResponseHeader& header, const ChoiceDelta& choice, bool with_logprobs, bool first_of_choice) {
  json out = header_fields(header, "chat.completion.chunk");
  // The role goes once, on the first chunk; content whenever there is text (and always on the
  // first chunk, "" if none); a finishing chunk with no new text has an empty delta.
  json delta = json::object();
  if (first_of_choice) delta["role"] = "assistant";
  if (first_of_choice || !choice.text.empty()) delta["content"] = choice.text;
  if (!choice.tool_calls.empty()) delta["tool_calls"] = tool_calls_json(choice.tool_calls, true);
  out["choices"] =
      json::array({json{{"index", choice.index},
                        {"delta", std::move(delta)},
                        {"logprobs", chunk_has_logprobs(choice, with_logprobs) ? chat_logprobs(choice) : json(nullptr)},
                        {"finish_reason", finish_reason(choice)}}});
  return out;
}

json usage_chunk(const ResponseHeader& header, bool chat, const Usage& usage) {
  json out = header_fields(header, chat ? "chat.completion.chunk" : "text_completion");
  out["choices"] = json::array();
  out["usage"] = to_json(usage);
  return out;
}

std::string sse_event(const json& chunk) { return "data: " + dump_json(chunk) + "\n\n"; }

}  // namespace pagedllm::server
