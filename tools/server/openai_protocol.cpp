#include "tools/server/openai_protocol.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <utility>

namespace pagedllm::server {

using nlohmann::json;

namespace {

constexpr int32_t kMaxCompletionLogprobs = 5;  // OpenAI's bound for the legacy "logprobs"
constexpr size_t kMaxQuotedBytes = 64;          // of a client's string repeated in an error message
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// --- error messages ---

std::string type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    default:
      return "binary";
  }
}

// Shortest text that reads back as `value` ("0.1", not "0.10000000000000001").
std::string format_number(double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return ec == std::errc() ? std::string(buffer, end) : std::string("?");
}

// A client's string, quoted, cut to a few dozen bytes at a character boundary.
// Appended piece by piece: GCC 12's -Wrestrict misfires on "..." + std::string once inlined.
std::string quote(const std::string& text) {
  size_t cut = text.size();
  if (cut > kMaxQuotedBytes) {
    cut = kMaxQuotedBytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // continuation byte
  }
  std::string quoted(1, '"');
  quoted.append(text, 0, cut);
  if (cut < text.size()) quoted += "...";
  quoted += '"';
  return quoted;
}

// The param is the path of the field at fault ("max_tokens", "messages[2].role"); the message
// starts with it, as in "max_tokens: expected an integer, got string".
[[noreturn]] void refuse(const std::string& param, const std::string& what) {
  throw invalid_request(param, param + ": " + what);
}

[[noreturn]] void refuse_type(const std::string& param, const std::string& expected, const json& got) {
  refuse(param, "expected " + expected + ", got " + type_name(got));
}

[[noreturn]] void refuse_unsupported(const std::string& param) { refuse(param, "not supported by this server"); }

// --- typed reads ---
// Types are strict: no string for a number, no number for a boolean. The one leniency is
// pydantic's (vLLM): a float with no fractional part (2.0) passes as an integer.

// The field, or nullptr when absent. JSON null counts as absent: some clients send every optional
// field, unset ones as null.
const json* find_field(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

int64_t as_integer(const json& value, const std::string& param) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const std::string range = "must be between " + std::to_string(kMin) + " and " + std::to_string(kMax);
  switch (value.type()) {
    case json::value_t::number_integer:
      return value.get<int64_t>();
    case json::value_t::number_unsigned: {
      const auto v = value.get<uint64_t>();
      if (v > static_cast<uint64_t>(kMax)) refuse(param, range + ", got " + std::to_string(v));
      return static_cast<int64_t>(v);
    }
    case json::value_t::number_float: {
      const double v = value.get<double>();
      if (!std::isfinite(v) || std::trunc(v) != v) refuse_type(param, "an integer", value);
      // 2^63 is exactly representable; everything below it converts without overflow.
      if (v < -9223372036854775808.0 || v >= 9223372036854775808.0) refuse(param, range + ", got " + format_number(v));
      return static_cast<int64_t>(v);
    }
    default:
      refuse_type(param, "an integer", value);
  }
}

int64_t as_integer_in(const json& value, const std::string& param, int64_t min, int64_t max) {
  const int64_t v = as_integer(value, param);
  if (v >= min && v <= max) return v;
  // A bound that is only the storage type's reads better alone.
  if (max == kInt32Max) {
    refuse(param, (v < min ? "must be at least " + std::to_string(min) : "must be at most " + std::to_string(max)) +
                      ", got " + std::to_string(v));
  }
  refuse(param,
         "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + std::to_string(v));
}

double as_number(const json& value, const std::string& param) {
  if (!value.is_number()) refuse_type(param, "a number", value);
  const double v = value.get<double>();
  // nlohmann reads 1e999 as infinity.
  if (!std::isfinite(v)) refuse(param, "must be a finite number");
  return v;
}

double as_number_in(const json& value, const std::string& param, double min, double max) {
  const double v = as_number(value, param);
  if (v < min || v > max) {
    refuse(param, "must be between " + format_number(min) + " and " + format_number(max) + ", got " +
                      format_number(v));
  }
  return v;
}

bool as_bool(const json& value, const std::string& param) {
  if (!value.is_boolean()) refuse_type(param, "a boolean", value);
  return value.get<bool>();
}

const std::string& as_string(const json& value, const std::string& param) {
  if (!value.is_string()) refuse_type(param, "a string", value);
  return value.get_ref<const std::string&>();
}

const json& as_array(const json& value, const std::string& param) {
  if (!value.is_array()) refuse_type(param, "an array", value);
  return value;
}

const json& as_object(const json& value, const std::string& param) {
  if (!value.is_object()) refuse_type(param, "an object", value);
  return value;
}

TokenId as_token_id(const json& value, const std::string& param) {
  if (value.is_number()) {
    const int64_t v = as_integer(value, param);
    if (v < 0) refuse(param, "token ids must be non-negative, got " + std::to_string(v));
    if (v > kInt32Max) refuse(param, "token id " + std::to_string(v) + " is out of range");
    return static_cast<TokenId>(v);
  }
  refuse_type(param, "a token id (integer)", value);
}

std::string indexed(const std::string& param, size_t index) { return param + "[" + std::to_string(index) + "]"; }

// --- the fields both endpoints share ---

void parse_stop(const json& body, const ProtocolLimits& limits, sched::SamplingParams& sampling) {
  const json* stop = find_field(body, "stop");
  if (stop == nullptr) return;
  if (stop->is_string()) {
    if (stop->get_ref<const std::string&>().empty()) refuse("stop", "stop sequences must not be empty");
    sampling.stop = {stop->get<std::string>()};
    return;
  }
  if (!stop->is_array()) refuse_type("stop", "a string or an array of strings", *stop);
  if (stop->size() > static_cast<size_t>(limits.max_stop_sequences)) {
    refuse("stop", "at most " + std::to_string(limits.max_stop_sequences) + " stop sequences are allowed, got " +
                       std::to_string(stop->size()));
  }
  for (size_t i = 0; i < stop->size(); ++i) {
    const std::string& text = as_string((*stop)[i], indexed("stop", i));
    if (text.empty()) refuse(indexed("stop", i), "stop sequences must not be empty");
    sampling.stop.push_back(text);
  }
}

// Everything but max_tokens and logprobs, whose spelling differs between the endpoints.
void parse_common(const json& body, const ProtocolLimits& limits, GenerationRequest& out) {
  sched::SamplingParams& sampling = out.sampling;

  const json* model = find_field(body, "model");
  if (model == nullptr) refuse("model", "required");
  out.model = as_string(*model, "model");

  if (const json* v = find_field(body, "n")) sampling.n = static_cast<int32_t>(as_integer_in(*v, "n", 1, limits.max_n));
  if (const json* v = find_field(body, "temperature")) {
    sampling.temperature = static_cast<float>(as_number_in(*v, "temperature", 0.0, 2.0));
  }
  if (const json* v = find_field(body, "top_p")) {
    const double top_p = as_number(*v, "top_p");
    if (!(top_p > 0.0 && top_p <= 1.0)) refuse("top_p", "must be in (0, 1], got " + format_number(top_p));
    sampling.top_p = static_cast<float>(top_p);
  }
  if (const json* v = find_field(body, "top_k")) {
    const int64_t top_k = as_integer(*v, "top_k");
    if (top_k < -1 || top_k > kInt32Max) {
      refuse("top_k", "must be -1 or 0 (all tokens) or positive, got " + std::to_string(top_k));
    }
    sampling.top_k = static_cast<int32_t>(top_k);
  }
  if (const json* v = find_field(body, "min_p")) {
    sampling.min_p = static_cast<float>(as_number_in(*v, "min_p", 0.0, 1.0));
  }
  if (const json* v = find_field(body, "presence_penalty")) {
    sampling.presence_penalty = static_cast<float>(as_number_in(*v, "presence_penalty", -2.0, 2.0));
  }
  if (const json* v = find_field(body, "frequency_penalty")) {
    sampling.frequency_penalty = static_cast<float>(as_number_in(*v, "frequency_penalty", -2.0, 2.0));
  }
  if (const json* v = find_field(body, "repetition_penalty")) {
    const double penalty = as_number(*v, "repetition_penalty");
    // Bounded above by float's range so the narrowing below stays finite.
    if (!(penalty > 0.0) || penalty > std::numeric_limits<float>::max()) {
      refuse("repetition_penalty", "must be greater than 0, got " + format_number(penalty));
    }
    sampling.repetition_penalty = static_cast<float>(penalty);
  }
  // vLLM takes any signed 64-bit seed; a negative one keeps its bits (two's complement).
  if (const json* v = find_field(body, "seed")) sampling.seed = static_cast<uint64_t>(as_integer(*v, "seed"));

  parse_stop(body, limits, sampling);
  if (const json* v = find_field(body, "stop_token_ids")) {
    as_array(*v, "stop_token_ids");
    for (size_t i = 0; i < v->size(); ++i) {
      sampling.stop_token_ids.push_back(as_token_id((*v)[i], indexed("stop_token_ids", i)));
    }
  }
  if (const json* v = find_field(body, "ignore_eos")) sampling.ignore_eos = as_bool(*v, "ignore_eos");
  if (const json* v = find_field(body, "min_tokens")) {
    sampling.min_tokens = static_cast<int32_t>(as_integer_in(*v, "min_tokens", 0, kInt32Max));
  }

  // vLLM's extras: beam search of n beams, all n returned, best first (temperature, top_p, top_k,
  // min_p and the penalties do not apply to it; stop strings are refused: the engine ranks whole
  // beams and cannot cut one at a string).
  if (const json* v = find_field(body, "length_penalty")) {
    const double penalty = as_number(*v, "length_penalty");
    if (!std::isfinite(penalty) || std::abs(penalty) > std::numeric_limits<float>::max()) {
      refuse("length_penalty", "must be a finite number, got " + format_number(penalty));
    }
    sampling.length_penalty = static_cast<float>(penalty);
  }
  if (const json* v = find_field(body, "use_beam_search"); v != nullptr && as_bool(*v, "use_beam_search")) {
    sampling.beam_width = sampling.n;
    if (!sampling.stop.empty()) refuse("stop", "stop strings are not supported with use_beam_search");
  }

  if (const json* v = find_field(body, "skip_special_tokens")) {
    out.skip_special_tokens = as_bool(*v, "skip_special_tokens");
  }
  if (const json* v = find_field(body, "include_stop_str_in_output")) {
    out.include_stop_str_in_output = as_bool(*v, "include_stop_str_in_output");
  }
  if (const json* v = find_field(body, "bad_words")) {
    const json& words = as_array(*v, "bad_words");
    for (size_t i = 0; i < words.size(); ++i) {
      const std::string& word = as_string(words[i], indexed("bad_words", i));
      if (word.find_first_not_of(" \t\n\r\f\v") == std::string::npos) {
        refuse(indexed("bad_words", i), "must hold a word, got " + quote(word));
      }
      out.bad_words.push_back(word);
    }
  }
  if (const json* v = find_field(body, "truncate_prompt_tokens")) {
    const int64_t keep = as_integer_in(*v, "truncate_prompt_tokens", -1, kInt32Max);
    if (keep == 0) refuse("truncate_prompt_tokens", "must be -1 (the model's context length) or at least 1, got 0");
    out.truncate_prompt_tokens = static_cast<int32_t>(keep);
  }
  if (const json* v = find_field(body, "priority")) {
    out.priority = static_cast<int32_t>(as_integer_in(*v, "priority", -kInt32Max, kInt32Max));
  }

  if (const json* v = find_field(body, "stream")) out.stream = as_bool(*v, "stream");
  if (const json* v = find_field(body, "stream_options")) {
    as_object(*v, "stream_options");
    if (!out.stream) refuse("stream_options", "only allowed when stream is true");
    // Other keys (include_obfuscation, vLLM's continuous_usage_stats) change nothing here.
    if (const json* usage = find_field(*v, "include_usage")) {
      out.include_usage = as_bool(*usage, "stream_options.include_usage");
    }
  }
  if (const json* v = find_field(body, "user")) as_string(*v, "user");  // checked, then ignored

  // OpenAI's {"token id": bias}; biases clamped to [-100, 100] as vLLM does. Two keys naming one
  // token ("7", "07") are refused rather than one of them dropped. Ids are checked against the
  // vocabulary by sched::validate.
  if (const json* v = find_field(body, "logit_bias")) {
    std::map<TokenId, float> biases;
    for (const auto& [key, value] : as_object(*v, "logit_bias").items()) {
      std::string param = "logit_bias[";
      param += quote(key);
      param += ']';
      int64_t id = -1;
      const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (key.empty() || error != std::errc{} || end != key.data() + key.size() || id < 0 || id > kInt32Max) {
        refuse("logit_bias", "keys must be token ids (non-negative decimal integers), got " + quote(key));
      }
      const double bias = std::clamp(as_number(value, param), -100.0, 100.0);
      if (!biases.emplace(static_cast<TokenId>(id), static_cast<float>(bias)).second) {
        refuse("logit_bias", "token id " + std::to_string(id) + " appears twice");
      }
    }
    sampling.logit_bias.assign(biases.begin(), biases.end());
  }
  if (const json* v = find_field(body, "allowed_token_ids")) {  // vLLM's extra
    const json& ids = as_array(*v, "allowed_token_ids");
    if (ids.empty()) refuse("allowed_token_ids", "must not be empty (leave it out to allow every token)");
    for (size_t i = 0; i < ids.size(); ++i) {
      sampling.allowed_token_ids.push_back(as_token_id(ids[i], indexed("allowed_token_ids", i)));
    }
  }
}

void set_max_tokens(GenerationRequest& out, const json& value, const std::string& param) {
  out.max_tokens = static_cast<int32_t>(as_integer_in(value, param, 1, kInt32Max));
  out.sampling.max_tokens = *out.max_tokens;
}

// vLLM's rule: min_tokens beyond max_tokens could never be honoured.
void check_min_tokens(const GenerationRequest& out) {
  if (out.max_tokens && out.sampling.min_tokens > *out.max_tokens) {
    refuse("min_tokens", "must be at most max_tokens (" + std::to_string(*out.max_tokens) + "), got " +
                             std::to_string(out.sampling.min_tokens));
  }
}

void require_object_body(const json& body) {
  if (!body.is_object()) throw invalid_request("", "the request body must be a JSON object, got " + type_name(body));
}

// --- prompts and messages ---

std::vector<TokenId> parse_token_list(const json& list, const std::string& param) {
  if (list.empty()) refuse(param, "a token prompt must not be empty");
  std::vector<TokenId> ids;
  ids.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) ids.push_back(as_token_id(list[i], indexed(param, i)));
  return ids;
}

std::vector<CompletionPrompt> parse_prompt(const json& body, const ProtocolLimits& limits) {
  const json* prompt = find_field(body, "prompt");
  if (prompt == nullptr) refuse("prompt", "required");
  if (prompt->is_string()) return {CompletionPrompt{prompt->get<std::string>(), {}}};
  if (!prompt->is_array()) {
    refuse_type("prompt", "a string, an array of strings, an array of token ids or an array of such arrays", *prompt);
  }
  if (prompt->empty()) refuse("prompt", "must not be empty");

  std::vector<CompletionPrompt> prompts;
  const json& first = prompt->front();
  if (first.is_number()) {  // one token prompt
    prompts.push_back(CompletionPrompt{std::nullopt, parse_token_list(*prompt, "prompt")});
    return prompts;
  }
  if (prompt->size() > static_cast<size_t>(limits.max_prompts)) {
    refuse("prompt", "at most " + std::to_string(limits.max_prompts) + " prompts per request, got " +
                         std::to_string(prompt->size()));
  }
  // A batch is all strings or all token arrays, as the first element says.
  const bool text = first.is_string();
  if (!text && !first.is_array()) refuse_type("prompt[0]", "a string, a token id or an array of token ids", first);
  for (size_t i = 0; i < prompt->size(); ++i) {
    const json& item = (*prompt)[i];
    const std::string param = indexed("prompt", i);
    if (text) {
      prompts.push_back(CompletionPrompt{as_string(item, param), {}});
    } else {
      if (!item.is_array()) refuse_type(param, "an array of token ids", item);
      prompts.push_back(CompletionPrompt{std::nullopt, parse_token_list(item, param)});
    }
  }
  return prompts;
}

// Content as a string, or an array of {"type": "text", "text": ...} parts joined by "\n" (as
// vLLM joins them).
std::string parse_content(const json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) refuse_type(param, "a string or an array of content parts", content);
  std::string joined;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string part_param = indexed(param, i);
    const json& part = as_object(content[i], part_param);
    const json* type = find_field(part, "type");
    if (type == nullptr) refuse(part_param + ".type", "required");
    const std::string& type_text = as_string(*type, part_param + ".type");
    if (type_text != "text") {
      refuse(part_param + ".type", "only \"text\" content parts are supported, got " + quote(type_text));
    }
    const json* text = find_field(part, "text");
    if (text == nullptr) refuse(part_param + ".text", "required");
    if (i > 0) joined += '\n';
    joined += as_string(*text, part_param + ".text");
  }
  return joined;
}

std::vector<chat::ChatMessage> parse_messages(const json& body) {
  const json* messages = find_field(body, "messages");
  if (messages == nullptr) refuse("messages", "required");
  as_array(*messages, "messages");
  if (messages->empty()) refuse("messages", "must not be empty");

  std::vector<chat::ChatMessage> out;
  out.reserve(messages->size());
  for (size_t i = 0; i < messages->size(); ++i) {
    const std::string param = indexed("messages", i);
    const json& message = as_object((*messages)[i], param);

    const json* role_field = find_field(message, "role");
    if (role_field == nullptr) refuse(param + ".role", "required");
    std::string role = as_string(*role_field, param + ".role");
    if (role == "developer") role = "system";  // OpenAI's newer name for the system role
    if (role == "tool" || role == "function") {
      refuse(param + ".role", quote(role) + " messages are not supported (this server has no tools)");
    }
    if (role != "system" && role != "user" && role != "assistant") {
      refuse(param + ".role", "must be one of system, developer, user, assistant, got " + quote(role));
    }

    if (const json* name = find_field(message, "name")) as_string(*name, param + ".name");  // ignored
    if (const json* calls = find_field(message, "tool_calls")) {
      if (!as_array(*calls, param + ".tool_calls").empty()) refuse_unsupported(param + ".tool_calls");
    }
    if (find_field(message, "function_call") != nullptr) refuse_unsupported(param + ".function_call");

    const json* content = find_field(message, "content");
    std::string text;
    if (content != nullptr) {
      text = parse_content(*content, param + ".content");
    } else if (role != "assistant") {  // an assistant turn may be empty (OpenAI: null content)
      refuse(param + ".content", "required");
    }
    out.push_back(chat::ChatMessage{std::move(role), std::move(text)});
  }
  return out;
}

// Tools and structured output: refused rather than ignored, since ignoring them would return
// something the client did not ask for. The spellings that mean "none" pass.
void refuse_tools_and_formats(const json& body) {
  for (const char* name : {"tools", "functions"}) {
    if (const json* v = find_field(body, name)) {
      if (!as_array(*v, name).empty()) refuse_unsupported(name);
    }
  }
  for (const char* name : {"tool_choice", "function_call"}) {
    if (const json* v = find_field(body, name)) {
      if (!(v->is_string() && v->get_ref<const std::string&>() == "none")) {
        refuse(name, "not supported by this server (only \"none\")");
      }
    }
  }
  if (const json* v = find_field(body, "response_format")) {
    as_object(*v, "response_format");
    const json* type = find_field(*v, "type");
    if (type == nullptr) refuse("response_format.type", "required");
    const std::string& type_text = as_string(*type, "response_format.type");
    if (type_text != "text") {
      refuse("response_format", "only {\"type\": \"text\"} is supported, got " + quote(type_text));
    }
  }
}

// --- responses ---

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

// Streamed chunks carry logprobs only for the tokens they carry: a chunk with none (the role
// chunk, a bare finish) has null.
bool chunk_has_logprobs(const ChoiceDelta& choice, bool with_logprobs) {
  return with_logprobs && !choice.logprobs.empty();
}

// The text with each ill-formed UTF-8 sequence replaced by U+FFFD. nlohmann's message for a body
// with bad UTF-8 quotes the bad bytes ("last read: ..."); an error must dump even strictly.
std::string valid_utf8(const std::string& text) {
  return json::parse(json(text).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
}

// nlohmann's message without its "[json.exception.parse_error.101] " tag: "parse error at line 1,
// column 9: ...".
std::string untagged(const json::exception& e) {
  std::string what = e.what();
  if (const size_t tag_end = what.find("] "); what.rfind("[json.exception.", 0) == 0 && tag_end != std::string::npos) {
    what.erase(0, tag_end + 2);
  }
  return what;
}

}  // namespace

// --- errors and bodies ---

ApiError invalid_request(std::string param, const std::string& message, std::string code) {
  return ApiError(400, "invalid_request_error", std::move(param), std::move(code), valid_utf8(message));
}

json to_json(const ApiError& error) {
  const auto or_null = [](const std::string& text) { return text.empty() ? json(nullptr) : json(text); };
  return json{{"error",
               {{"message", error.what()},
                {"type", error.type()},
                {"param", or_null(error.param())},
                {"code", or_null(error.code())}}}};
}

std::string dump_json(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

json parse_json_body(std::string_view body) {
  // Refuse deep nesting before nlohmann builds it: its parser is iterative, but dump, copy and
  // comparison recurse once per level.
  int32_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw invalid_request("", "invalid JSON body: nested deeper than " + std::to_string(kMaxJsonDepth) +
                                      " levels at byte " + std::to_string(i + 1));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }

  json value;
  try {
    // nlohmann checks strings for well-formed UTF-8 (and escapes for paired surrogates), so what it
    // returns always dumps.
    value = json::parse(body.begin(), body.end());
  } catch (const json::parse_error& e) {
    throw invalid_request("", "invalid JSON body (byte " + std::to_string(e.byte) + "): " + untagged(e));
  } catch (const json::exception& e) {
    // out_of_range 406: a number beyond double's range (1e999).
    throw invalid_request("", "invalid JSON body: " + untagged(e));
  }
  require_object_body(value);
  return value;
}

// --- requests ---
// Fields this server does not know are ignored: OpenAI's clients and SDKs send extras (metadata,
// store, service_tier, vLLM's own extensions) that change nothing a client relies on. Fields
// whose silent omission would change the result (tools, suffix, ...) are refused.

CompletionRequest parse_completion_request(const json& body, const ProtocolLimits& limits) {
  require_object_body(body);
  CompletionRequest out;
  GenerationRequest& generation = out.generation;
  parse_common(body, limits, generation);
  out.prompts = parse_prompt(body, limits);

  if (const json* v = find_field(body, "max_tokens")) set_max_tokens(generation, *v, "max_tokens");
  check_min_tokens(generation);
  if (const json* v = find_field(body, "logprobs")) {
    const int32_t max = std::min(kMaxCompletionLogprobs, limits.max_logprobs);
    generation.sampling.logprobs = static_cast<int32_t>(as_integer_in(*v, "logprobs", 0, max));
    generation.logprobs = true;
  }
  if (const json* v = find_field(body, "echo")) out.echo = as_bool(*v, "echo");
  if (const json* v = find_field(body, "best_of")) {
    const int64_t best_of = as_integer(*v, "best_of");
    if (best_of != generation.sampling.n) {
      refuse("best_of", "not supported unless equal to n (" + std::to_string(generation.sampling.n) + "), got " +
                            std::to_string(best_of));
    }
  }
  // An empty suffix asks for nothing.
  if (const json* v = find_field(body, "suffix")) {
    if (!as_string(*v, "suffix").empty()) refuse_unsupported("suffix");
  }
  return out;
}

ChatRequest parse_chat_request(const json& body, const ProtocolLimits& limits) {
  require_object_body(body);
  ChatRequest out;
  GenerationRequest& generation = out.generation;
  parse_common(body, limits, generation);
  out.messages = parse_messages(body);
  // vLLM's extras: how the prompt ends. Continuing the final (assistant) message replaces the
  // generation prompt; the template checks that the final message is the assistant's.
  if (const json* v = find_field(body, "add_generation_prompt")) {
    out.prompt.add_generation_prompt = as_bool(*v, "add_generation_prompt");
  }
  if (const json* v = find_field(body, "continue_final_message")) {
    out.prompt.continue_final_message = as_bool(*v, "continue_final_message");
  }
  if (out.prompt.continue_final_message && out.prompt.add_generation_prompt) {
    refuse("continue_final_message", "cannot be true while add_generation_prompt is true (set it to false)");
  }

  // max_completion_tokens is the current name; max_tokens the deprecated one. Both are checked;
  // the current name wins when both are given (vLLM).
  if (const json* v = find_field(body, "max_tokens")) set_max_tokens(generation, *v, "max_tokens");
  if (const json* v = find_field(body, "max_completion_tokens")) {
    set_max_tokens(generation, *v, "max_completion_tokens");
  }
  check_min_tokens(generation);

  bool logprobs = false;
  if (const json* v = find_field(body, "logprobs")) logprobs = as_bool(*v, "logprobs");
  std::optional<int32_t> top_logprobs;
  if (const json* v = find_field(body, "top_logprobs")) {
    top_logprobs = static_cast<int32_t>(as_integer_in(*v, "top_logprobs", 0, limits.max_logprobs));
    if (!logprobs) refuse("top_logprobs", "requires logprobs to be true");
  }
  if (logprobs) {
    generation.logprobs = true;
    generation.sampling.logprobs = top_logprobs.value_or(0);
  }

  refuse_tools_and_formats(body);
  return out;
}

// --- responses ---

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
  out["choices"] = json::array({json{
      {"index", choice.index},
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
    list.push_back(json{{"index", choice.index},
                        {"message", {{"role", "assistant"}, {"content", choice.text}}},
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
  out["choices"] = json::array({json{
      {"index", choice.index},
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
