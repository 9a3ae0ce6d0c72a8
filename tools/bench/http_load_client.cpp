#include "tools/bench/http_load_client.h"

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <deque>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace pagedllm::bench {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// Per connection: the read buffer must hold a response's headers (the parser's 8 KiB limit), the
// body goes through a small fixed array. About 20 KiB a connection at worst.
constexpr size_t kReadBufferLimit = 16 * 1024;
constexpr size_t kBodyChunkBytes = 4 * 1024;
constexpr size_t kMaxErrorBodyBytes = 16 * 1024;  // of a non-200 body, kept for its message
constexpr size_t kErrorExcerptChars = 200;
constexpr uint64_t kSpareFileDescriptors = 64;  // stdio, the resolver, files the caller opens

std::string excerpt(std::string_view text) {
  std::string out(text.substr(0, kErrorExcerptChars));
  if (text.size() > kErrorExcerptChars) out += "...";
  return out;
}

// The message of an error object or string found in `json`, if any.
std::optional<std::string> json_error_message(const nlohmann::json& json) {
  if (!json.is_object()) return std::nullopt;
  if (const auto error = json.find("error"); error != json.end()) {
    if (error->is_string()) return error->get<std::string>();
    if (error->is_object()) {
      const auto message = error->find("message");
      if (message != error->end() && message->is_string()) return message->get<std::string>();
      return error->dump();
    }
  }
  // vLLM's older form: {"object": "error", "message": ...}; FastAPI's {"detail": ...}.
  if (json.value("object", "") == "error" && json.contains("message") && json["message"].is_string())
    return json["message"].get<std::string>();
  if (const auto detail = json.find("detail"); detail != json.end())
    return detail->is_string() ? detail->get<std::string>() : detail->dump();
  return std::nullopt;
}

bool non_empty_string(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
}

// A choice of a completions chunk (text) or a chat chunk (delta.content; reasoning models'
// delta.reasoning_content counts as output too).
bool choice_has_text(const nlohmann::json& choice) {
  if (!choice.is_object()) return false;
  if (non_empty_string(choice, "text")) return true;
  const auto delta = choice.find("delta");
  return delta != choice.end() && delta->is_object() &&
         (non_empty_string(*delta, "content") || non_empty_string(*delta, "reasoning_content"));
}

std::optional<int32_t> usage_count(const nlohmann::json& usage, const char* key) {
  const auto it = usage.find(key);
  if (it == usage.end() || !it->is_number_integer()) return std::nullopt;
  return static_cast<int32_t>(it->get<int64_t>());
}

}  // namespace

// --- SSE ---

void SseAccumulator::feed(std::string_view bytes, double now) {
  size_t begin = 0;
  for (size_t newline = bytes.find('\n'); newline != std::string_view::npos; newline = bytes.find('\n', begin)) {
    std::string_view piece = bytes.substr(begin, newline - begin);
    begin = newline + 1;
    if (!pending_.empty()) {
      pending_.append(piece);
      const std::string line = std::move(pending_);
      pending_.clear();
      handle_line(line, now);
    } else {
      handle_line(piece, now);
    }
  }
  pending_.append(bytes.substr(begin));
}

void SseAccumulator::handle_line(std::string_view line, double now) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) {
    handle_event(now);
    return;
  }
  if (!line.starts_with("data:")) return;  // comments (":"), event:, id:, retry:
  line.remove_prefix(5);
  if (line.starts_with(' ')) line.remove_prefix(1);
  if (has_data_) data_ += '\n';
  data_.append(line);
  has_data_ = true;
}

void SseAccumulator::handle_event(double now) {
  if (!has_data_) return;
  const std::string data = std::move(data_);
  data_.clear();
  has_data_ = false;
  ++num_events_;
  if (done_ || error_) return;  // nothing after [DONE] or an error counts
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  const nlohmann::json chunk = nlohmann::json::parse(data, nullptr, false);
  if (chunk.is_discarded() || !chunk.is_object()) {
    error_ = "malformed event: " + excerpt(data);
    return;
  }
  if (auto message = json_error_message(chunk)) {
    error_ = std::move(*message);
    return;
  }
  if (const auto choices = chunk.find("choices"); choices != chunk.end() && choices->is_array()) {
    if (std::any_of(choices->begin(), choices->end(), choice_has_text)) chunk_times_.push_back(now);
  }
  if (const auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
    if (auto n = usage_count(*usage, "prompt_tokens")) prompt_tokens_ = n;
    if (auto n = usage_count(*usage, "completion_tokens")) completion_tokens_ = n;
  }
}

std::string error_message_from_body(std::string_view body) {
  const nlohmann::json json = nlohmann::json::parse(body, nullptr, false);
  if (!json.is_discarded()) {
    if (auto message = json_error_message(json)) return *message;
  }
  return excerpt(body);
}

// --- setup ---

BaseUrl parse_base_url(std::string_view url) {
  const auto fail = [&](const std::string& why) {
    throw std::invalid_argument("base URL '" + std::string(url) + "': " + why);
  };
  constexpr std::string_view kScheme = "http://";
  if (url.starts_with("https://")) fail("https is not supported (plain http only)");
  if (!url.starts_with(kScheme)) fail("expected http://host[:port]");
  std::string_view rest = url.substr(kScheme.size());
  if (rest.ends_with('/')) rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos) fail("give no path: the endpoint is set separately");
  BaseUrl result;
  std::string_view port;
  if (rest.starts_with('[')) {  // [::1]:8000
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) fail("unclosed [");
    result.host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) fail("expected :port after ]");
    if (!rest.empty()) port = rest.substr(1);
  } else {
    const size_t colon = rest.find(':');
    result.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
  }
  if (result.host.empty()) fail("no host");
  if (port.empty()) port = "80";
  if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(std::string(port)) > 65535)
    fail("bad port '" + std::string(port) + "'");
  result.port = std::string(port);
  return result;
}

uint64_t raise_file_limit(uint64_t needed) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < needed) {
    const rlim_t wanted = limit.rlim_max == RLIM_INFINITY ? needed : std::min<rlim_t>(limit.rlim_max, needed);
    rlimit raised = limit;
    raised.rlim_cur = wanted;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit.rlim_cur = wanted;
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(limit.rlim_cur);
}

// --- the run ---

namespace {

std::string host_field(const BaseUrl& url) {
  const bool ipv6 = url.host.find(':') != std::string::npos;
  return (ipv6 ? "[" + url.host + "]" : url.host) + ":" + url.port;
}

class LoadRun;

// One request on its own connection: connect, write, read the header, then the body through the
// SSE accumulator (or, for an error status, into a bounded string for its message).
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(LoadRun& run, size_t index);
  void start();

 private:
  void on_connect(beast::error_code ec);
  void on_write(beast::error_code ec);
  void on_header(beast::error_code ec);
  void read_body();
  void on_body(beast::error_code ec);
  void complete();
  void fail(std::string error);
  void finish(bool success, std::string error);
  // The stream's expiry for the next operation: the idle timeout, capped by the request's deadline.
  void arm_expiry(double idle_seconds);
  std::string describe(const char* what, beast::error_code ec) const;

  LoadRun& run_;
  const size_t index_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_{kReadBufferLimit};
  std::unique_ptr<http::request<http::string_body>> request_;  // freed once written
  http::response_parser<http::buffer_body> parser_;
  std::array<char, kBodyChunkBytes> body_{};
  SseAccumulator sse_;
  std::string error_body_;
  std::optional<Clock::time_point> deadline_;
  double send_time_ = 0.0;
  double last_idle_seconds_ = 0.0;
  bool finished_ = false;
};

class LoadRun {
 public:
  LoadRun(const std::vector<LoadRequest>& requests, const LoadClientConfig& config, const BaseUrl& url,
          tcp::resolver::results_type endpoints)
      : requests_(requests),
        config_(config),
        endpoints_(std::move(endpoints)),
        host_header_(host_field(url)),
        timer_(io_),
        records_(requests.size()) {
    order_.resize(requests.size());
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
    std::stable_sort(order_.begin(), order_.end(),
                     [&](size_t a, size_t b) { return requests[a].send_time < requests[b].send_time; });
  }

  LoadResult run() {
    start_ = Clock::now();
    schedule();
    io_.run();
    LoadResult result;
    result.records = std::move(records_);
    result.duration = end_time_;
    result.max_in_flight = max_in_flight_;
    return result;
  }

  double now() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  net::io_context& io() { return io_; }
  const LoadClientConfig& config() const { return config_; }
  const LoadRequest& request(size_t index) const { return requests_[index]; }
  const tcp::resolver::results_type& endpoints() const { return endpoints_; }
  const std::string& host_header() const { return host_header_; }

  void on_session_end(size_t index, metrics::RequestRecord record) {
    record.id = requests_[index].id;
    records_[index] = std::move(record);
    --num_in_flight_;
    ++num_finished_;
    end_time_ = std::max(end_time_, now());
    if (config_.on_finished) config_.on_finished(num_finished_, num_in_flight_);
    start_waiting();
  }

 private:
  // Moves requests whose time has come to the waiting queue, starts what the concurrency allows,
  // and sets the timer for the next arrival.
  void schedule() {
    const double t = now() + 1e-6;  // the timer's time point was rounded down to the clock's tick
    while (next_due_ < order_.size() && requests_[order_[next_due_]].send_time <= t) {
      waiting_.push_back(order_[next_due_++]);
    }
    start_waiting();
    if (next_due_ < order_.size() && !timer_armed_) {
      timer_armed_ = true;
      const auto at = start_ + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(requests_[order_[next_due_]].send_time));
      timer_.expires_at(at);
      timer_.async_wait([this](beast::error_code) {
        timer_armed_ = false;
        schedule();
      });
    }
  }

  void start_waiting() {
    while (!waiting_.empty() && (config_.max_concurrency <= 0 || num_in_flight_ < config_.max_concurrency)) {
      const size_t index = waiting_.front();
      waiting_.pop_front();
      ++num_in_flight_;
      max_in_flight_ = std::max(max_in_flight_, num_in_flight_);
      std::make_shared<Session>(*this, index)->start();
    }
  }

  const std::vector<LoadRequest>& requests_;
  const LoadClientConfig& config_;
  const tcp::resolver::results_type endpoints_;
  const std::string host_header_;
  net::io_context io_{1};  // one thread: no locking anywhere
  net::steady_timer timer_;
  bool timer_armed_ = false;
  Clock::time_point start_;
  std::vector<size_t> order_;   // request indices by send_time
  size_t next_due_ = 0;         // in order_: the first not yet due
  std::deque<size_t> waiting_;  // due, waiting for a concurrency slot
  int32_t num_in_flight_ = 0;
  int32_t max_in_flight_ = 0;
  int64_t num_finished_ = 0;
  double end_time_ = 0.0;
  std::vector<metrics::RequestRecord> records_;
};

Session::Session(LoadRun& run, size_t index) : run_(run), index_(index), stream_(run.io()) {
  // A stream is as long as its output. Not boost::none: Beast 1.74 then refuses every body with a
  // Content-Length (it compares the length against the empty optional).
  parser_.body_limit(std::numeric_limits<uint64_t>::max());
}

void Session::start() {
  const LoadRequest& spec = run_.request(index_);
  request_ = std::make_unique<http::request<http::string_body>>(http::verb::post, spec.path, 11);
  request_->set(http::field::host, run_.host_header());
  request_->set(http::field::user_agent, "pagedllm-bench");
  request_->set(http::field::content_type, "application/json");
  request_->set(http::field::accept, "text/event-stream");
  if (!run_.config().api_key.empty()) request_->set(http::field::authorization, "Bearer " + run_.config().api_key);
  request_->keep_alive(false);
  request_->body() = spec.body;
  request_->prepare_payload();

  if (run_.config().request_timeout > 0.0) {
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(run_.config().request_timeout));
  }
  // The record's send time: now, when the request leaves the queue (connection time included).
  send_time_ = run_.now();
  arm_expiry(run_.config().connect_timeout);
  stream_.async_connect(run_.endpoints(), [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
    self->on_connect(ec);
  });
}

void Session::arm_expiry(double idle_seconds) {
  last_idle_seconds_ = idle_seconds;
  auto expiry = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(idle_seconds));
  if (deadline_) expiry = std::min(expiry, *deadline_);
  stream_.expires_at(expiry);
}

std::string Session::describe(const char* what, beast::error_code ec) const {
  if (ec == beast::error::timeout) {
    if (deadline_ && Clock::now() >= *deadline_)
      return "timeout: request took over " + std::to_string(run_.config().request_timeout) + " s";
    return std::string("timeout: ") + what + ": nothing for " + std::to_string(last_idle_seconds_) + " s";
  }
  return std::string(what) + ": " + ec.message();
}

void Session::on_connect(beast::error_code ec) {
  if (ec) return fail(describe("connect", ec));
  arm_expiry(run_.config().idle_timeout);
  http::async_write(stream_, *request_,
                    [self = shared_from_this()](beast::error_code error, size_t) { self->on_write(error); });
}

void Session::on_write(beast::error_code ec) {
  request_.reset();
  if (ec) return fail(describe("write", ec));
  arm_expiry(run_.config().idle_timeout);
  http::async_read_header(stream_, buffer_, parser_,
                          [self = shared_from_this()](beast::error_code error, size_t) { self->on_header(error); });
}

void Session::on_header(beast::error_code ec) {
  if (ec) return fail(describe("read", ec));
  read_body();
}

void Session::read_body() {
  if (parser_.is_done()) return complete();
  parser_.get().body().data = body_.data();
  parser_.get().body().size = body_.size();
  arm_expiry(run_.config().idle_timeout);
  http::async_read_some(stream_, buffer_, parser_,
                        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_body(ec); });
}

void Session::on_body(beast::error_code ec) {
  if (ec == http::error::need_buffer) ec = {};  // the body array is full: not an error
  const size_t num_bytes = body_.size() - parser_.get().body().size;
  if (num_bytes > 0) {
    const std::string_view bytes(body_.data(), num_bytes);
    if (parser_.get().result() == http::status::ok) {
      sse_.feed(bytes, run_.now());
    } else if (error_body_.size() < kMaxErrorBodyBytes) {
      error_body_.append(bytes.substr(0, kMaxErrorBodyBytes - error_body_.size()));
    }
  }
  if (ec) return fail(describe("read", ec));
  read_body();
}

void Session::complete() {
  const auto status = parser_.get().result_int();
  if (status != 200) return fail("HTTP " + std::to_string(status) + ": " + error_message_from_body(error_body_));
  if (sse_.error()) return fail("stream: " + *sse_.error());
  if (!sse_.done()) return fail("stream: ended without data: [DONE]");
  if (sse_.chunk_times().empty()) return fail("stream: no output text");
  finish(true, "");
}

void Session::fail(std::string error) {
  // An error status whose body was cut off still reports the status.
  if (parser_.is_header_done() && parser_.get().result_int() != 200 && !error.starts_with("HTTP")) {
    error = "HTTP " + std::to_string(parser_.get().result_int()) + ": " +
            (error_body_.empty() ? error : error_message_from_body(error_body_));
  }
  finish(false, std::move(error));
}

void Session::finish(bool success, std::string error) {
  if (finished_) return;
  finished_ = true;
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.close();
  metrics::RequestRecord record;
  record.send_time = send_time_;
  record.success = success;
  record.error = std::move(error);
  record.chunk_times = sse_.chunk_times();
  record.end_time = success ? record.chunk_times.back() : run_.now();
  if (!record.chunk_times.empty()) record.first_token_time = record.chunk_times.front();
  record.prompt_tokens = sse_.prompt_tokens().value_or(run_.request(index_).prompt_tokens);
  record.output_tokens = sse_.completion_tokens().value_or(static_cast<int32_t>(record.chunk_times.size()));
  run_.on_session_end(index_, std::move(record));
}

}  // namespace

LoadResult run_load(const std::vector<LoadRequest>& requests, const LoadClientConfig& config) {
  const BaseUrl url = parse_base_url(config.base_url);
  if (requests.empty()) return {};
  const auto num_requests = static_cast<uint64_t>(requests.size());
  const uint64_t concurrency = config.max_concurrency > 0
                                   ? std::min<uint64_t>(num_requests, static_cast<uint64_t>(config.max_concurrency))
                                   : num_requests;
  const uint64_t needed = concurrency + kSpareFileDescriptors;
  const uint64_t limit = raise_file_limit(needed);
  if (limit < needed) {
    throw std::runtime_error("up to " + std::to_string(concurrency) + " concurrent connections need about " +
                             std::to_string(needed) + " file descriptors, but the limit is " + std::to_string(limit) +
                             " (the hard limit): raise it (ulimit -Hn) or lower --max-concurrency");
  }
  net::io_context resolver_io;
  tcp::resolver resolver(resolver_io);
  beast::error_code ec;
  auto endpoints = resolver.resolve(url.host, url.port, ec);
  if (ec) throw std::runtime_error("cannot resolve " + url.host + ":" + url.port + ": " + ec.message());
  LoadRun run(requests, config, url, std::move(endpoints));
  return run.run();
}

std::string http_get(const std::string& base_url, const std::string& path, const std::string& api_key, double timeout) {
  const BaseUrl url = parse_base_url(base_url);
  net::io_context io;
  tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  beast::flat_buffer buffer;
  http::request<http::empty_body> request(http::verb::get, path, 11);
  request.set(http::field::host, host_field(url));
  request.set(http::field::user_agent, "pagedllm-bench");
  if (!api_key.empty()) request.set(http::field::authorization, "Bearer " + api_key);
  request.keep_alive(false);
  http::response<http::string_body> response;
  beast::error_code error;
  const char* stage = "resolve";
  // Async so that the stream's expiry bounds every step; run() returns when the chain ends.
  stream.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout)));
  resolver.async_resolve(url.host, url.port, [&](beast::error_code resolved, tcp::resolver::results_type endpoints) {
    if ((error = resolved)) return;
    stage = "connect";
    stream.async_connect(endpoints, [&](beast::error_code connected, const tcp::endpoint&) {
      if ((error = connected)) return;
      stage = "write";
      http::async_write(stream, request, [&](beast::error_code written, size_t) {
        if ((error = written)) return;
        stage = "read";
        http::async_read(stream, buffer, response, [&](beast::error_code read, size_t) { error = read; });
      });
    });
  });
  io.run();
  const std::string where = "GET " + base_url + path;
  if (error) throw std::runtime_error(where + ": " + stage + ": " + error.message());
  if (response.result_int() != 200) {
    throw std::runtime_error(where + ": HTTP " + std::to_string(response.result_int()) + ": " +
                             error_message_from_body(response.body()));
  }
  return response.body();
}

}  // namespace pagedllm::bench
