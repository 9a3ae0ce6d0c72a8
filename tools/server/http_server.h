// An asynchronous HTTP/1.1 (and 1.0) server on Boost.Beast: a few I/O threads serve every connection (no
// thread per connection); each request becomes an Exchange that a handler answers at once, or
// later from another thread, as one response or as a stream of chunks (server-sent events).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace pagedllm::server {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string target;                          // path and query as sent
  std::string path;                            // target without the query
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

// One request's answer. Thread-safe: every call is carried out on the connection's strand.
class Exchange {
 public:
  virtual ~Exchange() = default;
  // A header for this exchange's response, whole or streamed: call it before respond() or
  // start_stream(). A name or value with a line break is dropped.
  virtual void add_header(std::string name, std::string value) = 0;
  // A whole response (Content-Length; no Content-Type when `content_type` is empty). Ends the exchange.
  virtual void respond(int status, std::string content_type, std::string body) = 0;
  // A streamed response: status 200, Content-Type text/event-stream; chunked for HTTP/1.1,
  // ended by closing the connection for HTTP/1.0.
  virtual void start_stream() = 0;
  virtual void send_chunk(std::string data) = 0;
  virtual void end_stream() = 0;  // ends the exchange
  // Runs `work` on the connection's strand, where the handler ran and on_disconnect runs: state
  // a handler shares with its callbacks needs no lock when every access goes through here.
  virtual void post(std::function<void()> work) = 0;
  // Called once, on the strand, when the client goes away before the exchange ended (set it
  // before anything can fail; a disconnect seen earlier calls it at once).
  virtual void on_disconnect(std::function<void()> callback) = 0;
};

using RequestHandler = std::function<void(HttpRequest&& request, std::shared_ptr<Exchange> exchange)>;

struct HttpServerConfig {
  std::string host = "127.0.0.1";  // bound unless told otherwise: not every machine is behind a firewall
  uint16_t port = 8000;            // 0: an ephemeral port (see HttpServer::port())
  int32_t num_io_threads = 1;
  uint64_t max_body_bytes = 4ull << 20;   // larger bodies get 413
  uint32_t max_header_bytes = 16u << 10;  // larger headers get 431
  int32_t read_timeout_seconds = 60;      // for a request's headers and body to arrive
  int32_t max_connections = 4096;         // beyond it new connections are closed at once
};

struct HttpServerStats {
  std::atomic<int64_t> num_connections{0};     // open now
  std::atomic<int64_t> num_requests{0};        // served so far
  std::atomic<int64_t> num_disconnects{0};     // exchanges whose client left before the end
  std::atomic<int64_t> num_open_exchanges{0};  // requests read and not yet fully answered
};

class HttpServer {
 public:
  // Binds and listens (throws std::runtime_error naming the address when it cannot).
  HttpServer(HttpServerConfig config, RequestHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void start();           // the I/O threads
  void stop_accepting();  // closes the listener; open connections go on
  void stop();            // closes the listener, stops the I/O threads and joins them; connections close
                          // when the server is destroyed
  void wait();            // until stop() (from a signal handler's thread, say)
  uint16_t port() const { return port_; }
  const HttpServerStats& stats() const { return stats_; }
  boost::asio::io_context& io_context() { return io_context_; }

 private:
  void accept();

  // Declared before the io_context: destroying it destroys pending handlers, and with them the
  // connections, which use these.
  HttpServerConfig config_;
  RequestHandler handler_;
  HttpServerStats stats_;
  boost::asio::io_context io_context_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_timer_;  // accept() after an error
  uint16_t port_ = 0;
  std::vector<std::thread> threads_;
};

// Raises the soft limit of open files to the hard limit (many clients, one descriptor each).
// Returns the limit now in force.
uint64_t raise_open_file_limit();

}  // namespace pagedllm::server
