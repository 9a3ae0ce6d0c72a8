// Cross-origin resource sharing (the Fetch standard's CORS protocol) for the HTTP API, configured
// with vLLM's flags (--allowed-origins, --allowed-methods, --allowed-headers, --allow-credentials)
// and answering as the CORS middleware behind vLLM's server does. Pure functions: no sockets.
//
// One difference from vLLM, on purpose: vLLM allows every origin by default; here no origin is
// allowed until the user names some ("*" for vLLM's behaviour). A server without an API key on
// localhost would otherwise serve any web page its user happens to open.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tools/server/http_server.h"

namespace pagedllm::server {

struct CorsConfig {
  std::vector<std::string> allowed_origins;          // "*" = any; empty = no cross-origin access
  std::vector<std::string> allowed_methods = {"*"};  // "*" = any method
  std::vector<std::string> allowed_headers = {"*"};  // "*" = any request header
  bool allow_credentials = false;                    // cookies and Authorization across origins
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// A flag's value as vLLM takes it (a JSON list, '["https://a.example"]') or as a comma-separated
// list. Throws std::invalid_argument naming `flag` when it is neither.
std::vector<std::string> parse_cors_list(const std::string& value, const std::string& flag);

// Whether `request` is a preflight: OPTIONS with Origin and Access-Control-Request-Method.
bool is_cors_preflight(const HttpRequest& request);

struct PreflightAnswer {
  int status = 200;    // 200, or 400 when the origin, method or headers are not allowed
  std::string body;    // "OK", or what was refused
  HeaderList headers;  // the Access-Control-* headers
};
// The answer to a preflight. Only when CORS is enabled (some origin allowed).
PreflightAnswer answer_cors_preflight(const CorsConfig& config, const HttpRequest& request);

// Headers for an actual (not preflight) response to `request`: none when it has no Origin or the
// origin is not allowed (the browser then withholds the response from the page).
HeaderList cors_response_headers(const CorsConfig& config, const HttpRequest& request);

inline bool cors_enabled(const CorsConfig& config) { return !config.allowed_origins.empty(); }

}  // namespace pagedllm::server
