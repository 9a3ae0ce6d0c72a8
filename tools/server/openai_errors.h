// The API's errors as OpenAI shapes them ({"error": {"message", "type", "param", "code"}}) and the
// way into a request: the body read as JSON, refused with such an error when it is not.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pagedllm::server {

// An error the client gets as {"error": {"message", "type", "param", "code"}} with `status`.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, std::string param, std::string code, const std::string& message)
      : std::runtime_error(message),
        status_(status),
        type_(std::move(type)),
        param_(std::move(param)),
        code_(std::move(code)) {}

  int status() const { return status_; }
  const std::string& type() const { return type_; }    // "invalid_request_error", "authentication_error", ...
  const std::string& param() const { return param_; }  // the field at fault ("" = none: JSON null)
  const std::string& code() const { return code_; }    // "context_length_exceeded", ... ("" = JSON null)
  // Seconds a client should wait before it tries again (a Retry-After header; 0 = none).
  int retry_after_seconds() const { return retry_after_seconds_; }
  ApiError& retry_after(int seconds) {
    retry_after_seconds_ = seconds;
    return *this;
  }

 private:
  int status_;
  std::string type_;
  std::string param_;
  std::string code_;
  int retry_after_seconds_ = 0;
};

// 400 invalid_request_error naming `param`.
ApiError invalid_request(std::string param, const std::string& message, std::string code = "");
nlohmann::json to_json(const ApiError& error);

// The body as JSON. Throws ApiError 400 for malformed JSON, invalid UTF-8, nesting deeper than
// kMaxJsonDepth, or a top level that is not an object; the message says where (byte offset) as
// nlohmann reports it.
nlohmann::json parse_json_body(std::string_view body);
inline constexpr int32_t kMaxJsonDepth = 128;  // nlohmann's dump and copy recurse per level

// JSON text for the wire: compact, UTF-8 kept as is, and never throwing on invalid UTF-8 (a
// token's text can hold half a character): bad bytes become U+FFFD. Dump every response with it.
std::string dump_json(const nlohmann::json& value);

}  // namespace pagedllm::server
