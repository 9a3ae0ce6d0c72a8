#include "tools/server/http_server.h"

#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <deque>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace pagedllm::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string status_line(int status) {
  const auto reason = http::obsolete_reason(static_cast<http::status>(status));
  return "HTTP/1.1 " + std::to_string(status) + " " + (reason.empty() ? std::string("Unknown") : std::string(reason)) +
         "\r\n";
}

// `with_body` false answers a HEAD: the headers a GET would get, Content-Length included, no body.
// `extra_headers`: whole header lines ("Name: value\r\n"), as Connection::add_header keeps them.
std::string whole_response(int status, const std::string& content_type, const std::string& body, bool keep_alive,
                           bool with_body = true, const std::string& extra_headers = "") {
  std::string out = status_line(status);
  out += "Server: pagedllm\r\n";
  if (!content_type.empty()) out += "Content-Type: " + content_type + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n" + extra_headers;
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  if (with_body) out += body;
  return out;
}

// An error the connection answers itself (before any handler saw the request), OpenAI-shaped.
std::string protocol_error(int status, const std::string& message) {
  std::string escaped;
  for (const char c : message) {
    if (c == '"' || c == '\\') escaped += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) escaped += c;
  }
  return whole_response(
      status, "application/json",
      R"({"error":{"message":")" + escaped + R"(","type":"invalid_request_error","param":null,"code":null}})", false);
}

// Bytes a connection may have queued for a slow client before it is treated as gone.
constexpr size_t kMaxOutboxBytes = 8u << 20;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, const HttpServerConfig& config, const RequestHandler& handler, HttpServerStats& stats)
      : stream_(std::move(socket)), config_(config), handler_(handler), stats_(stats) {
    ++stats_.num_connections;
  }
  ~Connection() { --stats_.num_connections; }

  void start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_request(); });
  }

  // --- called on the strand by the exchange of `id` ---
  // Whether the exchange `id` may still write: it is this connection's open exchange, its last
  // write is not queued yet, and the client is still there.
  bool is_current(uint64_t id) const { return id == exchange_id_ && exchange_open_ && !ending_ && !peer_gone_; }
  void add_header(uint64_t id, const std::string& name, const std::string& value) {
    if (!is_current(id) || streaming_) return;
    // Names and values come from our code or echo the client's own headers (an Origin): never
    // let one carry a line break into the response.
    if (name.find_first_of("\r\n:") != std::string::npos || value.find_first_of("\r\n") != std::string::npos) return;
    extra_headers_ += name + ": " + value + "\r\n";
  }
  void respond(uint64_t id, int status, const std::string& content_type, const std::string& body) {
    if (!is_current(id) || streaming_) return;
    write(whole_response(status, content_type, body, keep_alive_, !head_request_, extra_headers_), true);
  }
  // HTTP/1.1 streams chunked and may keep the connection. HTTP/1.0 has no chunked coding (RFC 9112
  // section 6.1: a server must not send it to a 1.0 client), so the stream's end is the
  // connection's close.
  void start_stream(uint64_t id) {
    if (!is_current(id) || streaming_) return;
    streaming_ = true;
    if (!chunked_) keep_alive_ = false;
    write(status_line(200) + "Server: pagedllm\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n" +
              extra_headers_ + (chunked_ ? "Transfer-Encoding: chunked\r\n" : "") +
              (keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n"),
          false);
  }
  void send_chunk(uint64_t id, const std::string& data) {
    if (!is_current(id) || !streaming_ || data.empty()) return;
    if (!chunked_) {
      write(data, false);
      return;
    }
    std::ostringstream size;
    size << std::hex << data.size();
    write(size.str() + "\r\n" + data + "\r\n", false);
  }
  void end_stream(uint64_t id) {
    if (!is_current(id) || !streaming_) return;
    write(chunked_ ? "0\r\n\r\n" : "", true);  // close-delimited: the close after this ends it
  }
  void post(std::function<void()> work) { asio::post(stream_.get_executor(), std::move(work)); }
  void set_on_disconnect(uint64_t id, std::function<void()> callback) {
    if (id != exchange_id_) return;
    if (peer_gone_) {  // the client left before the handler asked to hear of it
      callback();
      return;
    }
    on_disconnect_ = std::move(callback);
  }
  asio::any_io_executor executor() { return stream_.get_executor(); }

 private:
  void read_request() {
    parser_.emplace();
    parser_->body_limit(config_.max_body_bytes);
    parser_->header_limit(config_.max_header_bytes);
    stream_.expires_after(std::chrono::seconds(config_.read_timeout_seconds));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code error, size_t) { self->on_read(error); });
  }

  void on_read(beast::error_code error) {
    if (error == http::error::end_of_stream || error == asio::error::operation_aborted ||
        error == beast::error::timeout || error == asio::error::eof || error == asio::error::connection_reset) {
      close();
      return;
    }
    if (error == http::error::body_limit) {
      fail_request(413, "the request body exceeds " + std::to_string(config_.max_body_bytes) + " bytes");
      return;
    }
    if (error == http::error::header_limit) {
      fail_request(431, "the request headers exceed " + std::to_string(config_.max_header_bytes) + " bytes");
      return;
    }
    if (error) {
      fail_request(400, "malformed HTTP request: " + error.message());
      return;
    }
    stream_.expires_never();
    http::request<http::string_body> message = parser_->release();
    HttpRequest request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    request.path = request.target.substr(0, request.target.find('?'));
    for (const auto& field : message) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      request.headers[name] = std::string(field.value());
    }
    request.body = std::move(message.body());
    keep_alive_ = message.keep_alive();
    chunked_ = message.version() >= 11;
    head_request_ = message.method() == http::verb::head;
    extra_headers_.clear();
    open_exchange();
    streaming_ = false;
    ++exchange_id_;
    ++stats_.num_requests;
    watch_peer();
    handler_(std::move(request), make_exchange());
  }

  std::shared_ptr<Exchange> make_exchange();

  // While an exchange is open, a read-readiness wait tells when the client goes away: readable
  // with nothing to read is the end of its stream.
  void watch_peer() {
    stream_.socket().async_wait(tcp::socket::wait_read,
                                [self = shared_from_this(), id = exchange_id_](beast::error_code error) {
                                  if (error || id != self->exchange_id_ || !self->exchange_open_) return;
                                  beast::error_code available_error;
                                  const size_t available = self->stream_.socket().available(available_error);
                                  if (available_error || available == 0) self->peer_lost();
                                  // Otherwise the client sent its next request early (pipelining): it is read after
                                  // this one.
                                });
  }

  void peer_lost() {
    if (peer_gone_) return;
    peer_gone_ = true;
    if (exchange_open_) {
      ++stats_.num_disconnects;
      close_exchange();
      if (on_disconnect_) std::exchange(on_disconnect_, nullptr)();
    }
    close();
  }

  void open_exchange() {
    exchange_open_ = true;
    ++stats_.num_open_exchanges;
  }
  void close_exchange() {
    exchange_open_ = false;
    --stats_.num_open_exchanges;
  }

  void fail_request(int status, const std::string& message) {
    keep_alive_ = false;
    open_exchange();
    streaming_ = false;
    ++exchange_id_;
    write(protocol_error(status, message), true);
  }

  void write(std::string data, bool ends_exchange) {
    num_outbox_bytes_ += data.size();
    outbox_.push_back(std::move(data));
    ending_ = ending_ || ends_exchange;
    if (num_outbox_bytes_ > kMaxOutboxBytes) {
      // A client that reads slower than tokens come: hang up (its request is aborted) rather
      // than hold its whole output in memory.
      outbox_.clear();
      num_outbox_bytes_ = 0;
      peer_lost();
      return;
    }
    if (!writing_) write_next();
  }

  void write_next() {
    writing_ = true;
    stream_.expires_after(std::chrono::seconds(config_.read_timeout_seconds));  // a client that stops reading
    asio::async_write(stream_, asio::buffer(outbox_.front()),
                      [self = shared_from_this()](beast::error_code error, size_t) { self->on_write(error); });
  }

  void on_write(beast::error_code error) {
    writing_ = false;
    if (error) {
      outbox_.clear();
      num_outbox_bytes_ = 0;
      peer_lost();
      return;
    }
    num_outbox_bytes_ -= outbox_.front().size();
    outbox_.pop_front();
    if (!outbox_.empty()) {
      write_next();
      return;
    }
    stream_.expires_never();
    if (!ending_) return;
    ending_ = false;
    close_exchange();
    on_disconnect_ = nullptr;
    if (!keep_alive_ || peer_gone_) {
      close();
      return;
    }
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // the peer watch
    read_request();
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  const HttpServerConfig& config_;
  const RequestHandler& handler_;
  HttpServerStats& stats_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  // Per exchange: open (a request read, its answer not finished), streaming (chunked), ending
  // (its last write queued: nothing more may be written), and per connection: peer_gone (the
  // client left or a write failed: no more reads or writes).
  std::deque<std::string> outbox_;  // bytes to write, in order
  size_t num_outbox_bytes_ = 0;
  bool writing_ = false;
  bool ending_ = false;  // the last write of the exchange is queued
  bool keep_alive_ = true;
  bool chunked_ = true;        // the client speaks HTTP/1.1: a stream may use chunked coding
  bool head_request_ = false;  // the open exchange answers a HEAD: headers only
  std::string extra_headers_;  // header lines for the open exchange's response (add_header)
  bool exchange_open_ = false;
  bool streaming_ = false;
  bool peer_gone_ = false;
  uint64_t exchange_id_ = 0;
  std::function<void()> on_disconnect_;
};

class ConnectionExchange final : public Exchange {
 public:
  ConnectionExchange(std::shared_ptr<Connection> connection, uint64_t id)
      : connection_(std::move(connection)), id_(id) {}

  void respond(int status, std::string content_type, std::string body) override {
    asio::dispatch(connection_->executor(), [c = connection_, id = id_, status, type = std::move(content_type),
                                             body = std::move(body)] { c->respond(id, status, type, body); });
  }
  void add_header(std::string name, std::string value) override {
    asio::dispatch(connection_->executor(), [c = connection_, id = id_, name = std::move(name),
                                             value = std::move(value)] { c->add_header(id, name, value); });
  }
  void start_stream() override {
    asio::dispatch(connection_->executor(), [c = connection_, id = id_] { c->start_stream(id); });
  }
  void send_chunk(std::string data) override {
    asio::dispatch(connection_->executor(),
                   [c = connection_, id = id_, data = std::move(data)] { c->send_chunk(id, data); });
  }
  void end_stream() override {
    asio::dispatch(connection_->executor(), [c = connection_, id = id_] { c->end_stream(id); });
  }
  void post(std::function<void()> work) override { connection_->post(std::move(work)); }
  void on_disconnect(std::function<void()> callback) override {
    asio::dispatch(connection_->executor(), [c = connection_, id = id_, callback = std::move(callback)]() mutable {
      c->set_on_disconnect(id, std::move(callback));
    });
  }

 private:
  std::shared_ptr<Connection> connection_;
  uint64_t id_;
};

std::shared_ptr<Exchange> Connection::make_exchange() {
  return std::make_shared<ConnectionExchange>(shared_from_this(), exchange_id_);
}

}  // namespace

HttpServer::HttpServer(HttpServerConfig config, RequestHandler handler)
    : config_(std::move(config)), handler_(std::move(handler)), acceptor_(io_context_), retry_timer_(io_context_) {
  beast::error_code error;
  const asio::ip::address address = asio::ip::make_address(config_.host, error);
  if (error) throw std::runtime_error("--host " + config_.host + ": not an IP address (" + error.message() + ")");
  const tcp::endpoint endpoint(address, config_.port);
  acceptor_.open(endpoint.protocol(), error);
  if (!error) acceptor_.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) acceptor_.bind(endpoint, error);
  if (!error) acceptor_.listen(asio::socket_base::max_listen_connections, error);
  if (error) {
    throw std::runtime_error("cannot listen on " + config_.host + ":" + std::to_string(config_.port) + ": " +
                             error.message());
  }
  port_ = acceptor_.local_endpoint().port();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  accept();
  for (int32_t i = 0; i < std::max(1, config_.num_io_threads); ++i) {
    threads_.emplace_back([this] { io_context_.run(); });
  }
}

void HttpServer::stop_accepting() {
  asio::dispatch(io_context_, [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
}

void HttpServer::stop() {
  stop_accepting();
  io_context_.stop();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

void HttpServer::wait() {
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

void HttpServer::accept() {
  acceptor_.async_accept(asio::make_strand(io_context_), [this](beast::error_code error, tcp::socket socket) {
    if (error == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (error) {
      // Out of file descriptors, say: the listening socket stays readable, so retrying at once
      // would spin. Try again shortly.
      retry_timer_.expires_after(std::chrono::milliseconds(50));
      retry_timer_.async_wait([this](beast::error_code waited) {
        if (!waited) accept();
      });
      return;
    }
    beast::error_code ignored;
    if (stats_.num_connections.load() >= config_.max_connections) {
      socket.close(ignored);
    } else {
      socket.set_option(tcp::no_delay(true), ignored);  // a token per chunk: no Nagle delay
      std::make_shared<Connection>(std::move(socket), config_, handler_, stats_)->start();
    }
    accept();
  });
}

uint64_t raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

}  // namespace pagedllm::server
