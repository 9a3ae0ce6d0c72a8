// CORS as vLLM's server answers it (its flags, the Fetch standard's rules): list parsing,
// preflights allowed and refused, and the headers on actual responses.
#include <boost/test/unit_test.hpp>

#include <stdexcept>
#include <string>

#include "tools/server/cors.h"

namespace server = pagedllm::server;

namespace {

server::HttpRequest request(const std::string& method,
                            std::initializer_list<std::pair<std::string, std::string>> headers) {
  server::HttpRequest out;
  out.method = method;
  out.path = out.target = "/v1/completions";
  for (const auto& [name, value] : headers) out.headers[name] = value;
  return out;
}

constexpr const char* kAbsent = "(absent)";

std::string header(const server::HeaderList& headers, const std::string& name) {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return kAbsent;
}

server::HttpRequest preflight(const std::string& origin, const std::string& method, const std::string& headers = "") {
  server::HttpRequest out = request("OPTIONS", {{"origin", origin}, {"access-control-request-method", method}});
  if (!headers.empty()) out.headers["access-control-request-headers"] = headers;
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cors)

BOOST_AUTO_TEST_CASE(lists_come_as_json_as_vllm_takes_them_or_comma_separated) {
  using List = std::vector<std::string>;
  BOOST_TEST(server::parse_cors_list(R"(["https://a.example", "http://b.example:3000"])", "--allowed-origins") ==
             (List{"https://a.example", "http://b.example:3000"}));
  BOOST_TEST(server::parse_cors_list("https://a.example, http://b.example", "--allowed-origins") ==
             (List{"https://a.example", "http://b.example"}));
  BOOST_TEST(server::parse_cors_list("*", "--allowed-origins") == (List{"*"}));
  BOOST_TEST(server::parse_cors_list("", "--allowed-origins").empty());
  for (const std::string bad : {R"(["a", 3])", "[not json", R"([""])"}) {
    try {
      server::parse_cors_list(bad, "--allowed-origins");
      BOOST_FAIL("accepted " + bad);
    } catch (const std::invalid_argument& error) {
      BOOST_TEST(std::string(error.what()).starts_with("--allowed-origins: "), error.what());
    }
  }
}

BOOST_AUTO_TEST_CASE(a_preflight_is_options_with_origin_and_requested_method) {
  BOOST_TEST(server::is_cors_preflight(preflight("https://a.example", "POST")));
  BOOST_TEST(!server::is_cors_preflight(request("OPTIONS", {{"origin", "https://a.example"}})));
  BOOST_TEST(!server::is_cors_preflight(request("OPTIONS", {})));
  BOOST_TEST(!server::is_cors_preflight(
      request("POST", {{"origin", "https://a.example"}, {"access-control-request-method", "POST"}})));
}

BOOST_AUTO_TEST_CASE(preflights_table) {
  const server::CorsConfig any{.allowed_origins = {"*"}};
  const server::CorsConfig listed{.allowed_origins = {"https://a.example"},
                                  .allowed_methods = {"GET", "POST"},
                                  .allowed_headers = {"Authorization"}};
  const server::CorsConfig credentials{.allowed_origins = {"*"}, .allow_credentials = true};
  struct Case {
    const char* what;
    const server::CorsConfig& config;
    server::HttpRequest request;
    int status;
    std::string allow_origin;  // kAbsent: no such header
    std::string allow_headers;
    std::string body;
  };
  const Case cases[] = {
      {"any origin: *", any, preflight("https://x.example", "POST", "content-type, authorization"), 200, "*",
       "content-type, authorization", "OK"},
      {"any origin, no requested headers", any, preflight("https://x.example", "POST"), 200, "*", kAbsent, "OK"},
      {"a listed origin is named back", listed, preflight("https://a.example", "POST", "Authorization"), 200,
       "https://a.example", "accept, accept-language, authorization, content-language, content-type", "OK"},
      {"an unlisted origin", listed, preflight("https://evil.example", "POST"), 400, kAbsent, kAbsent,
       "Disallowed CORS origin"},
      {"a method not allowed", listed, preflight("https://a.example", "DELETE"), 400, kAbsent, kAbsent,
       "Disallowed CORS method"},
      {"a header not allowed", listed, preflight("https://a.example", "POST", "x-secret"), 400, kAbsent, kAbsent,
       "Disallowed CORS headers"},
      {"origin and method both wrong", listed, preflight("https://evil.example", "PUT"), 400, kAbsent, kAbsent,
       "Disallowed CORS origin, method"},
      {"credentials: the origin, never *", credentials, preflight("https://x.example", "POST"), 200,
       "https://x.example", kAbsent, "OK"},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.what) {
      const server::PreflightAnswer answer = server::answer_cors_preflight(c.config, c.request);
      BOOST_TEST(answer.status == c.status);
      BOOST_TEST(answer.body == c.body);
      BOOST_TEST(header(answer.headers, "Access-Control-Allow-Origin") == c.allow_origin);
      BOOST_TEST(header(answer.headers, "Access-Control-Allow-Headers") == c.allow_headers);
      if (c.status == 200) {
        BOOST_TEST(header(answer.headers, "Access-Control-Max-Age") == "600");
        BOOST_TEST(header(answer.headers, "Access-Control-Allow-Methods") != kAbsent);
        const bool names_origin = c.allow_origin != "*";
        BOOST_TEST((header(answer.headers, "Vary") != kAbsent) == names_origin);
      }
    }
  }
  BOOST_TEST(header(server::answer_cors_preflight(listed, preflight("https://a.example", "GET")).headers,
                    "Access-Control-Allow-Methods") == "GET, POST");
  BOOST_TEST(header(server::answer_cors_preflight(credentials, preflight("https://x.example", "GET")).headers,
                    "Access-Control-Allow-Credentials") == "true");
}

BOOST_AUTO_TEST_CASE(actual_responses_carry_the_origin_only_when_allowed) {
  const server::CorsConfig none{};
  const server::CorsConfig listed{.allowed_origins = {"https://a.example"}};
  const server::CorsConfig any{.allowed_origins = {"*"}};
  const auto post_from = [](const std::string& origin) { return request("POST", {{"origin", origin}}); };
  BOOST_TEST(!server::cors_enabled(none));
  BOOST_TEST(server::cors_response_headers(none, post_from("https://a.example")).empty(), "CORS off by default");
  BOOST_TEST(server::cors_response_headers(listed, post_from("https://evil.example")).empty());
  BOOST_TEST(server::cors_response_headers(any, request("POST", {})).empty(), "no Origin: not a CORS request");
  const server::HeaderList named = server::cors_response_headers(listed, post_from("https://a.example"));
  BOOST_TEST(header(named, "Access-Control-Allow-Origin") == "https://a.example");
  BOOST_TEST(header(named, "Vary") == "Origin");
  BOOST_TEST(
      header(server::cors_response_headers(any, post_from("https://x.example")), "Access-Control-Allow-Origin") == "*");
}

BOOST_AUTO_TEST_SUITE_END()
