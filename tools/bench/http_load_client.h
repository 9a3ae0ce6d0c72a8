// A load generator for an OpenAI-compatible server: streamed requests sent at given times over
// HTTP/1.1, with per-request timings as vLLM's benchmark_serving measures them.
//
// All requests run on one thread: Boost.Beast async operations on a single io_context, one TCP
// connection per in-flight request (closed after its response), a small fixed read buffer per
// connection. This keeps thousands of concurrent streams cheap on a small machine; the limit is
// file descriptors, which run_load raises (soft RLIMIT_NOFILE up to the hard limit) or refuses
// to run without.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/metrics/request_record.h"

namespace pagedllm::bench {

struct LoadRequest {
  int64_t id = 0;             // copied into the record
  std::string path;           // "/v1/completions" or "/v1/chat/completions"
  std::string body;           // JSON with "stream": true (stream_options.include_usage recommended)
  double send_time = 0.0;     // seconds from the start of the run
  int32_t prompt_tokens = 0;  // reported when the server sends no usage
};

struct LoadClientConfig {
  std::string base_url = "http://127.0.0.1:8000";  // http://host[:port] only
  std::string api_key;                             // "" = no Authorization header
  int32_t max_concurrency = 0;                     // requests in flight at most; 0 = unlimited
  double connect_timeout = 30.0;                   // seconds to open a connection
  double idle_timeout = 600.0;                     // seconds without a byte from the server
  double request_timeout = 0.0;                    // seconds for a whole request; 0 = none
  // Called on the client's thread after each request ends (keep it short: it blocks the loop).
  std::function<void(int64_t num_finished, int64_t num_in_flight)> on_finished;
};

struct LoadResult {
  std::vector<metrics::RequestRecord> records;  // in the order of the requests given
  double duration = 0.0;                        // seconds from the start to the last request's end
  int32_t max_in_flight = 0;                    // the most requests that were in flight at once
};

// Sends every request at its send_time, or later when max_concurrency requests are in flight
// (then as soon as one ends, in send_time order, as a semaphore would). A request's record:
//   send_time        when it was actually started (connection included), as vLLM's `st`
//   first_token_time the first SSE chunk whose choices carry non-empty text (completions' text,
//                    chat's delta.content)
//   chunk_times      every chunk with text; end_time the last of them
//   output_tokens    usage.completion_tokens from the stream's usage chunk, else the text chunks
//   prompt_tokens    usage.prompt_tokens, else LoadRequest::prompt_tokens
//   success / error  false with "HTTP <status>: <error.message>", "connect: ...", "read: ...",
//                    "timeout: ...", "stream: ..." (an error event, no [DONE], no text); end_time
//                    is then when it failed
// Throws std::invalid_argument for a base URL it cannot use, std::runtime_error when the host
// does not resolve or too few file descriptors can be had for the concurrency.
LoadResult run_load(const std::vector<LoadRequest>& requests, const LoadClientConfig& config);

// A GET for setup before a run (GET /v1/models): the body of a 200 response. Throws
// std::runtime_error with the status and the error's message otherwise, or when the server
// cannot be reached within `timeout` seconds.
std::string http_get(const std::string& base_url, const std::string& path, const std::string& api_key,
                     double timeout = 10.0);

struct BaseUrl {
  std::string host;
  std::string port;  // "80" when the URL names none
};
// "http://host[:port][/]"; throws std::invalid_argument for https, a path, or a malformed URL.
BaseUrl parse_base_url(std::string_view url);

// Raises the soft RLIMIT_NOFILE towards the hard limit so that `needed` descriptors fit; returns
// the soft limit in force afterwards.
uint64_t raise_file_limit(uint64_t needed);

// Turns a response body of server-sent events into chunk times and token counts. Pure, so that
// the parsing is tested without sockets; the client feeds it whatever each read brought.
class SseAccumulator {
 public:
  // Appends body bytes read at `now` (seconds) and handles every complete event in them.
  void feed(std::string_view bytes, double now);

  bool done() const { return done_; }                                 // [DONE] was seen
  const std::optional<std::string>& error() const { return error_; }  // an error event or bad JSON
  const std::vector<double>& chunk_times() const { return chunk_times_; }
  std::optional<int32_t> prompt_tokens() const { return prompt_tokens_; }
  std::optional<int32_t> completion_tokens() const { return completion_tokens_; }
  int64_t num_events() const { return num_events_; }

 private:
  void handle_line(std::string_view line, double now);
  void handle_event(double now);

  std::string pending_;  // bytes of an incomplete line
  std::string data_;     // the current event's data lines, joined by \n
  bool has_data_ = false;
  bool done_ = false;
  std::optional<std::string> error_;
  std::vector<double> chunk_times_;
  std::optional<int32_t> prompt_tokens_;
  std::optional<int32_t> completion_tokens_;
  int64_t num_events_ = 0;
};

// The message of an OpenAI error body ({"error": {"message": ...}}), else the body itself
// (shortened).
std::string error_message_from_body(std::string_view body);

}  // namespace pagedllm::bench
