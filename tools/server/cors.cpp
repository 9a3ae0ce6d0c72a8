#include "tools/server/cors.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

namespace pagedllm::server {
namespace {

constexpr const char* kAllMethods = "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT";
// Request headers a page may always send (the Fetch standard's CORS-safelisted ones).
const std::set<std::string> kSafelistedHeaders = {"accept", "accept-language", "content-language", "content-type"};
constexpr int kPreflightMaxAgeSeconds = 600;  // how long a browser may cache a preflight's answer

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::string trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

std::string header(const HttpRequest& request, const std::string& name) {
  const auto found = request.headers.find(name);
  return found == request.headers.end() ? "" : found->second;
}

bool origin_allowed(const CorsConfig& config, const std::string& origin) {
  return contains(config.allowed_origins, "*") || contains(config.allowed_origins, origin);
}

// With credentials, or with a list of origins, the answer names the one origin (and so varies
// with it); otherwise any origin may read it.
void add_allow_origin(const CorsConfig& config, const std::string& origin, HeaderList& headers) {
  if (contains(config.allowed_origins, "*") && !config.allow_credentials) {
    headers.emplace_back("Access-Control-Allow-Origin", "*");
    return;
  }
  headers.emplace_back("Access-Control-Allow-Origin", origin);
  headers.emplace_back("Vary", "Origin");
}

}  // namespace

std::vector<std::string> parse_cors_list(const std::string& value, const std::string& flag) {
  std::vector<std::string> items;
  if (trim(value).starts_with("[")) {
    const nlohmann::json list = nlohmann::json::parse(value, nullptr, false);
    if (!list.is_array()) throw std::invalid_argument(flag + ": not a JSON list: " + value);
    for (const nlohmann::json& item : list) {
      if (!item.is_string()) throw std::invalid_argument(flag + ": every entry must be a string: " + value);
      items.push_back(item.get<std::string>());
    }
  } else {
    size_t begin = 0;
    while (begin <= value.size()) {
      const size_t end = std::min(value.find(',', begin), value.size());
      const std::string item = trim(value.substr(begin, end - begin));
      if (!item.empty()) items.push_back(item);
      begin = end + 1;
    }
  }
  for (const std::string& item : items) {
    if (item.empty() || item.find_first_of("\r\n") != std::string::npos) {
      throw std::invalid_argument(flag + ": an empty entry or one with a line break: " + value);
    }
  }
  return items;
}

bool is_cors_preflight(const HttpRequest& request) {
  return request.method == "OPTIONS" && request.headers.contains("origin") &&
         request.headers.contains("access-control-request-method");
}

PreflightAnswer answer_cors_preflight(const CorsConfig& config, const HttpRequest& request) {
  const std::string origin = header(request, "origin");
  const std::string method = trim(header(request, "access-control-request-method"));
  const std::string requested_headers = header(request, "access-control-request-headers");
  std::vector<std::string> refused;
  if (!origin_allowed(config, origin)) refused.emplace_back("origin");
  if (!contains(config.allowed_methods, "*") && !contains(config.allowed_methods, method))
    refused.emplace_back("method");
  PreflightAnswer answer;
  const bool any_header = contains(config.allowed_headers, "*");
  if (any_header) {
    if (!trim(requested_headers).empty())
      answer.headers.emplace_back("Access-Control-Allow-Headers", requested_headers);
  } else {
    std::set<std::string> allowed = kSafelistedHeaders;
    for (const std::string& name : config.allowed_headers) allowed.insert(lower(name));
    for (const std::string& name : parse_cors_list(requested_headers, "Access-Control-Request-Headers")) {
      if (!allowed.contains(lower(name))) {
        refused.emplace_back("headers");
        break;
      }
    }
    answer.headers.emplace_back("Access-Control-Allow-Headers",
                                join(std::vector<std::string>(allowed.begin(), allowed.end())));
  }
  if (!refused.empty()) {
    answer.status = 400;
    answer.body = "Disallowed CORS " + join(refused);
    answer.headers.clear();
    return answer;
  }
  add_allow_origin(config, origin, answer.headers);
  answer.headers.emplace_back("Access-Control-Allow-Methods",
                              contains(config.allowed_methods, "*") ? kAllMethods : join(config.allowed_methods));
  answer.headers.emplace_back("Access-Control-Max-Age", std::to_string(kPreflightMaxAgeSeconds));
  if (config.allow_credentials) answer.headers.emplace_back("Access-Control-Allow-Credentials", "true");
  answer.body = "OK";
  return answer;
}

HeaderList cors_response_headers(const CorsConfig& config, const HttpRequest& request) {
  HeaderList headers;
  const std::string origin = header(request, "origin");
  if (!cors_enabled(config) || origin.empty() || !origin_allowed(config, origin)) return headers;
  add_allow_origin(config, origin, headers);
  if (config.allow_credentials) headers.emplace_back("Access-Control-Allow-Credentials", "true");
  return headers;
}

}  // namespace pagedllm::server
