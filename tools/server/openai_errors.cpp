#include "tools/server/openai_errors.h"

#include "core/common/json_value.h"

namespace pagedllm::server {

using nlohmann::json;

namespace {

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
  // Refuse deep nesting before nlohmann builds it (json_value.h).
  if (const std::size_t at = json_nesting_past(body, kMaxJsonDepth); at != 0) {
    throw invalid_request("", "invalid JSON body: nested deeper than " + std::to_string(kMaxJsonDepth) +
                                  " levels at byte " + std::to_string(at));
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
  if (!value.is_object()) {
    throw invalid_request("", "the request body must be a JSON object, got " + json_type_name(value));
  }
  return value;
}

}  // namespace pagedllm::server
