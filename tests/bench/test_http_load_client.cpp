#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tools/bench/http_load_client.h"

namespace bench = pagedllm::bench;
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using pagedllm::metrics::RequestRecord;

namespace {

constexpr const char* kApiKey = "secret-key";
constexpr const char* kBadRequestMessage = "max_tokens: must be at least 1, got \"0\"";

std::string chunk(std::string_view data) {
  std::ostringstream out;
  out << std::hex << data.size() << "\r\n" << data << "\r\n";
  return out.str();
}

std::string event(const nlohmann::json& json) { return "data: " + json.dump() + "\n\n"; }

// A fake OpenAI server on its own thread, answering each POST on 127.0.0.1:<ephemeral>:
//   /v1/completions       max_tokens text chunks (the first event split across two writes, an SSE
//                         comment between events), a usage chunk when stream_options.include_usage
//                         (completion_tokens = 2 per chunk, prompt_tokens = the prompt's ids), [DONE]
//   /v1/chat/completions  a role chunk without text, max_tokens content chunks, a finish chunk, [DONE]
//   /v1/bad               400 with an OpenAI error body
//   /v1/drop              two chunks, then the connection closes mid-stream
//   /v1/stall             the header, then nothing
// A wrong API key gets 401. It counts requests in progress (from the request read to the end of
// the response) and the most at once.
class FakeServer {
 public:
  explicit FakeServer(std::chrono::milliseconds delay) : delay_(delay), acceptor_(io_) {
    const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(net::socket_base::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen(net::socket_base::max_listen_connections);
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~FakeServer() {
    io_.stop();
    thread_.join();
  }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int max_active() const { return max_active_.load(); }
  int num_requests() const { return num_requests_.load(); }

 private:
  class Session : public std::enable_shared_from_this<Session> {
   public:
    Session(FakeServer& server, tcp::socket socket)
        : server_(server), socket_(std::move(socket)), timer_(socket_.get_executor()) {}

    void start() {
      http::async_read(socket_, buffer_, request_,
                       [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
    }

   private:
    void on_read(beast::error_code ec) {
      if (ec) return;
      const int active = ++server_.active_;
      ++server_.num_requests_;
      int seen = server_.max_active_.load();
      while (active > seen && !server_.max_active_.compare_exchange_weak(seen, active)) {
      }
      respond();
      write_next();
    }

    void respond() {
      const std::string target(request_.target());
      if (request_.method() == http::verb::get && target == "/v1/models") {
        return plain(200, R"({"object": "list", "data": [{"id": "tiny", "object": "model"}]})");
      }
      if (request_[http::field::authorization] != std::string("Bearer ") + kApiKey) {
        return plain(401, R"({"error": {"message": "bad key", "type": "authentication_error"}})");
      }
      if (target == "/v1/bad") {
        return plain(400, nlohmann::json{{"error",
                                          {{"message", kBadRequestMessage},
                                           {"type", "invalid_request_error"},
                                           {"param", "max_tokens"},
                                           {"code", nullptr}}}}
                              .dump());
      }
      const auto body = nlohmann::json::parse(request_.body());
      const int num_chunks = body.value("max_tokens", 1);
      pieces_.push_back(
          "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
          "Connection: close\r\n\r\n");
      if (target == "/v1/stall") return;
      if (target == "/v1/chat/completions") {
        pieces_.push_back(
            chunk(event({{"choices", {{{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}}}}})));
        for (int i = 0; i < num_chunks; ++i) {
          pieces_.push_back(
              chunk(event({{"choices", {{{"index", 0}, {"delta", {{"content", "w" + std::to_string(i)}}}}}}})));
        }
        pieces_.push_back(chunk(
            event({{"choices", {{{"index", 0}, {"delta", nlohmann::json::object()}, {"finish_reason", "length"}}}}})));
      } else {
        for (int i = 0; i < num_chunks; ++i) {
          const std::string text = event({{"choices", {{{"index", 0}, {"text", " t" + std::to_string(i)}}}}});
          if (i == 0) {  // one event in two writes, with a delay between
            pieces_.push_back(chunk(text.substr(0, 10)));
            pieces_.push_back(chunk(text.substr(10)));
          } else {
            pieces_.push_back(chunk(": keep-alive comment\n\n" + text));
          }
          if (target == "/v1/drop" && i == 1) {
            drop_ = true;
            return;
          }
        }
        if (body.contains("stream_options") && body["stream_options"].value("include_usage", false)) {
          const auto prompt_tokens = static_cast<int>(body["prompt"].size());
          pieces_.push_back(chunk(event({{"choices", nlohmann::json::array()},
                                         {"usage",
                                          {{"prompt_tokens", prompt_tokens},
                                           {"completion_tokens", 2 * num_chunks},
                                           {"total_tokens", prompt_tokens + 2 * num_chunks}}}})));
        }
      }
      pieces_.push_back(chunk("data: [DONE]\n\n"));
      pieces_.push_back("0\r\n\r\n");
    }

    void plain(int status, const std::string& body) {
      pieces_.push_back("HTTP/1.1 " + std::to_string(status) +
                        " X\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body);
    }

    // The request counts as in progress until its response is written (for /v1/stall, its
    // header); the connection then closes, or for /v1/stall stays open until the client gives up.
    void write_next() {
      net::async_write(socket_, net::buffer(pieces_[next_]), [self = shared_from_this()](beast::error_code ec, size_t) {
        if (ec) return self->end();
        if (++self->next_ < self->pieces_.size()) {
          self->timer_.expires_after(self->server_.delay_);
          self->timer_.async_wait([self](beast::error_code) { self->write_next(); });
        } else if (self->request_.target() == "/v1/stall") {
          --self->server_.active_;
          self->counted_ = false;
          self->socket_.async_read_some(net::buffer(self->sink_), [self](beast::error_code, size_t) { self->end(); });
        } else {
          self->end();
        }
      });
    }

    void end() {
      beast::error_code ignored;
      if (drop_) {
        socket_.close(ignored);  // mid-stream: no terminating chunk
      } else {
        socket_.shutdown(tcp::socket::shutdown_send, ignored);
      }
      if (counted_) --server_.active_;
      counted_ = false;
    }

    FakeServer& server_;
    tcp::socket socket_;
    net::steady_timer timer_;
    beast::flat_buffer buffer_;
    http::request<http::string_body> request_;
    std::vector<std::string> pieces_;
    size_t next_ = 0;
    bool drop_ = false;
    bool counted_ = true;
    char sink_[64] = {};
  };

  void accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (!ec) std::make_shared<Session>(*this, std::move(socket))->start();
      accept();
    });
  }

  const std::chrono::milliseconds delay_;
  net::io_context io_{1};
  tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::atomic<int> active_{0};
  std::atomic<int> max_active_{0};
  std::atomic<int> num_requests_{0};
  std::thread thread_;
};

std::string completion_body(int num_chunks, int prompt_len, bool include_usage) {
  nlohmann::json body = {{"model", "tiny"},
                         {"prompt", std::vector<int>(static_cast<size_t>(prompt_len), 300)},
                         {"max_tokens", num_chunks},
                         {"stream", true}};
  if (include_usage) body["stream_options"] = {{"include_usage", true}};
  return body.dump();
}

std::string chat_body(int num_chunks) {
  return nlohmann::json{{"model", "tiny"},
                        {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                        {"max_tokens", num_chunks},
                        {"stream", true}}
      .dump();
}

void check_times(const RequestRecord& record, double scheduled, double duration) {
  BOOST_TEST_CONTEXT("request " << record.id) {
    BOOST_TEST(record.send_time >= scheduled - 1e-3);
    BOOST_TEST(record.first_token_time > record.send_time);
    BOOST_TEST(record.first_token_time == record.chunk_times.front());
    BOOST_TEST(record.end_time == record.chunk_times.back());
    BOOST_TEST(std::is_sorted(record.chunk_times.begin(), record.chunk_times.end()));
    BOOST_TEST(record.end_time <= duration);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sse_accumulator)

BOOST_AUTO_TEST_CASE(events_split_anywhere_give_the_same_chunks) {
  const std::string stream =
      "data: {\"choices\":[{\"text\":\"a\"}]}\n\n: comment\n\r\n"
      "data: {\"choices\":[{\"text\":\"\"}]}\r\n\r\n"  // no text: not a chunk
      "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":9}}\n\n"
      "data: [DONE]\n\n";
  for (size_t piece : {size_t{1}, size_t{3}, size_t{17}, stream.size()}) {
    BOOST_TEST_CONTEXT("pieces of " << piece) {
      bench::SseAccumulator sse;
      double now = 0.0;
      for (size_t i = 0; i < stream.size(); i += piece) sse.feed(std::string_view(stream).substr(i, piece), now += 1.0);
      BOOST_TEST(sse.done());
      BOOST_TEST(!sse.error());
      BOOST_TEST(sse.num_events() == 5);
      BOOST_TEST(sse.chunk_times().size() == 2u);
      BOOST_TEST(sse.prompt_tokens().value_or(-1) == 7);
      BOOST_TEST(sse.completion_tokens().value_or(-1) == 9);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_chunk_is_timed_when_its_event_completes) {
  bench::SseAccumulator sse;
  sse.feed("data: {\"choices\":[{\"text\":\"x\"}]", 1.0);
  BOOST_TEST(sse.chunk_times().empty());
  sse.feed("}\n", 2.0);
  BOOST_TEST(sse.chunk_times().empty());
  sse.feed("\n", 3.0);
  BOOST_TEST(sse.chunk_times() == std::vector<double>{3.0}, boost::test_tools::per_element());
  BOOST_TEST(!sse.done());
}

BOOST_AUTO_TEST_CASE(error_events_and_malformed_json_are_errors) {
  bench::SseAccumulator error_event;
  error_event.feed("data: {\"error\": {\"message\": \"engine died\", \"code\": 500}}\n\ndata: [DONE]\n\n", 1.0);
  BOOST_TEST(error_event.error().value_or("") == "engine died");
  BOOST_TEST(!error_event.done());  // nothing after an error counts
  bench::SseAccumulator malformed;
  malformed.feed("data: {not json\n\n", 1.0);
  BOOST_TEST(malformed.error().value_or("").starts_with("malformed event"));
}

BOOST_AUTO_TEST_CASE(multi_line_data_is_joined) {
  bench::SseAccumulator sse;
  sse.feed("data: {\"choices\":\ndata: [{\"text\":\"x\"}]}\n\n", 1.0);
  BOOST_TEST(!sse.error());
  BOOST_TEST(sse.chunk_times().size() == 1u);
}

BOOST_AUTO_TEST_CASE(error_bodies_give_their_message) {
  BOOST_TEST(bench::error_message_from_body(R"({"error": {"message": "too long", "type": "x"}})") == "too long");
  BOOST_TEST(bench::error_message_from_body(R"({"object": "error", "message": "old form"})") == "old form");
  BOOST_TEST(bench::error_message_from_body(R"({"detail": "Not Found"})") == "Not Found");
  BOOST_TEST(bench::error_message_from_body("Internal Server Error") == "Internal Server Error");
  BOOST_TEST(bench::error_message_from_body(std::string(500, 'x')).size() == 203u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(http_load_client)

BOOST_AUTO_TEST_CASE(base_urls_are_parsed_or_refused) {
  const auto url = bench::parse_base_url("http://localhost:8000/");
  BOOST_TEST(url.host == "localhost");
  BOOST_TEST(url.port == "8000");
  BOOST_TEST(bench::parse_base_url("http://10.0.0.1").port == "80");
  BOOST_TEST(bench::parse_base_url("http://[::1]:9000").host == "::1");
  BOOST_CHECK_THROW(bench::parse_base_url("https://x:1"), std::invalid_argument);
  BOOST_CHECK_THROW(bench::parse_base_url("http://x:1/v1"), std::invalid_argument);
  BOOST_CHECK_THROW(bench::parse_base_url("http://x:99999"), std::invalid_argument);
  BOOST_CHECK_THROW(bench::parse_base_url("http://:80"), std::invalid_argument);
  BOOST_CHECK_THROW(bench::parse_base_url("x:80"), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(streams_errors_and_drops_are_recorded_under_a_concurrency_limit) {
  FakeServer fake(std::chrono::milliseconds(3));
  constexpr int kNumRequests = 50;
  constexpr int kMaxConcurrency = 8;
  enum class Kind { completion, completion_no_usage, chat, bad, drop, stall };
  const auto kind_of = [](int i) {
    switch (i % 10) {
      case 3:
        return Kind::bad;
      case 5:
        return Kind::chat;
      case 6:
        return Kind::completion_no_usage;
      case 7:
        return Kind::drop;
      default:
        return i == 19 ? Kind::stall : Kind::completion;
    }
  };
  std::vector<bench::LoadRequest> requests;
  for (int i = 0; i < kNumRequests; ++i) {
    bench::LoadRequest request;
    request.id = 1000 + i;
    request.send_time = 0.002 * (kNumRequests - i);  // given out of time order on purpose
    request.prompt_tokens = 5;                       // what the server reports nothing about
    const int num_chunks = 2 + i % 4;
    switch (kind_of(i)) {
      case Kind::completion:
        request.path = "/v1/completions";
        request.body = completion_body(num_chunks, 10 + i, true);
        break;
      case Kind::completion_no_usage:
        request.path = "/v1/completions";
        request.body = completion_body(num_chunks, 10, false);
        break;
      case Kind::chat:
        request.path = "/v1/chat/completions";
        request.body = chat_body(num_chunks);
        break;
      case Kind::bad:
        request.path = "/v1/bad";
        request.body = completion_body(1, 1, true);
        break;
      case Kind::drop:
        request.path = "/v1/drop";
        request.body = completion_body(5, 1, true);
        break;
      case Kind::stall:
        request.path = "/v1/stall";
        request.body = completion_body(5, 1, true);
        break;
    }
    requests.push_back(request);
  }
  bench::LoadClientConfig config;
  config.base_url = fake.base_url();
  config.api_key = kApiKey;
  config.max_concurrency = kMaxConcurrency;
  config.idle_timeout = 0.5;
  int64_t num_callbacks = 0;
  config.on_finished = [&](int64_t num_finished, int64_t num_in_flight) {
    num_callbacks = num_finished;
    BOOST_TEST(num_in_flight < kMaxConcurrency);
  };
  const bench::LoadResult result = bench::run_load(requests, config);

  BOOST_TEST(num_callbacks == kNumRequests);
  BOOST_TEST(fake.num_requests() == kNumRequests);
  BOOST_TEST(fake.max_active() <= kMaxConcurrency);
  BOOST_TEST(result.max_in_flight == kMaxConcurrency);  // 50 requests in 0.1 s do fill the slots
  BOOST_TEST_REQUIRE(result.records.size() == size_t{kNumRequests});
  for (int i = 0; i < kNumRequests; ++i) {
    const RequestRecord& record = result.records[static_cast<size_t>(i)];
    const int num_chunks = 2 + i % 4;
    BOOST_TEST_CONTEXT("request " << i) {
      BOOST_TEST(record.id == 1000 + i);
      BOOST_TEST(record.end_time <= result.duration);
      BOOST_TEST(record.end_time >= record.send_time);
      switch (kind_of(i)) {
        case Kind::completion:
          BOOST_TEST_REQUIRE(record.success, record.error);
          BOOST_TEST(record.chunk_times.size() == size_t(num_chunks));
          BOOST_TEST(record.output_tokens == 2 * num_chunks);  // the usage chunk's count
          BOOST_TEST(record.prompt_tokens == 10 + i);
          check_times(record, requests[static_cast<size_t>(i)].send_time, result.duration);
          break;
        case Kind::completion_no_usage:
          BOOST_TEST_REQUIRE(record.success, record.error);
          BOOST_TEST(record.output_tokens == num_chunks);  // counted chunks
          BOOST_TEST(record.prompt_tokens == 5);
          check_times(record, requests[static_cast<size_t>(i)].send_time, result.duration);
          break;
        case Kind::chat:
          BOOST_TEST_REQUIRE(record.success, record.error);
          BOOST_TEST(record.chunk_times.size() == size_t(num_chunks));  // not the role or finish chunks
          BOOST_TEST(record.output_tokens == num_chunks);
          check_times(record, requests[static_cast<size_t>(i)].send_time, result.duration);
          break;
        case Kind::bad:
          BOOST_TEST(!record.success);
          BOOST_TEST(record.error == std::string("HTTP 400: ") + kBadRequestMessage);
          break;
        case Kind::drop:
          BOOST_TEST(!record.success);
          BOOST_TEST(record.error.starts_with("read: "), record.error);
          BOOST_TEST(record.chunk_times.size() == 2u);  // what came before the drop
          break;
        case Kind::stall:
          BOOST_TEST(!record.success);
          BOOST_TEST(record.error.starts_with("timeout: "), record.error);
          BOOST_TEST(record.end_time - record.send_time >= 0.5);
          break;
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_wrong_api_key_and_a_request_timeout_are_reported) {
  FakeServer fake(std::chrono::milliseconds(1));
  std::vector<bench::LoadRequest> requests(2);
  requests[0].path = "/v1/completions";
  requests[0].body = completion_body(2, 3, true);
  requests[1].path = "/v1/stall";
  requests[1].body = completion_body(2, 3, true);
  bench::LoadClientConfig config;
  config.base_url = fake.base_url();
  config.api_key = "wrong";
  config.request_timeout = 0.3;
  const auto result = bench::run_load(requests, config);
  BOOST_TEST(result.records[0].error == "HTTP 401: bad key");
  BOOST_TEST(result.records[1].error == "HTTP 401: bad key");
  config.api_key = kApiKey;
  const auto timed = bench::run_load(requests, config);
  BOOST_TEST(timed.records[0].success);
  BOOST_TEST(timed.records[1].error.starts_with("timeout: request took over"), timed.records[1].error);
}

BOOST_AUTO_TEST_CASE(a_refused_connection_fails_every_request) {
  std::string base_url;
  {
    net::io_context io;
    tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    base_url = "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port());
  }  // closed: nothing listens there now
  std::vector<bench::LoadRequest> requests(3, bench::LoadRequest{0, "/v1/completions", "{}", 0.0, 1});
  bench::LoadClientConfig config;
  config.base_url = base_url;
  const auto result = bench::run_load(requests, config);
  for (const auto& record : result.records) {
    BOOST_TEST(!record.success);
    BOOST_TEST(record.error.starts_with("connect: "), record.error);
  }
}

BOOST_AUTO_TEST_CASE(http_get_returns_the_body_or_the_error) {
  FakeServer fake(std::chrono::milliseconds(1));
  const std::string models = bench::http_get(fake.base_url(), "/v1/models", "");
  BOOST_TEST(nlohmann::json::parse(models)["data"][0]["id"] == "tiny");
  try {
    bench::http_get(fake.base_url(), "/v1/other", "wrong");
    BOOST_FAIL("no error for a 401");
  } catch (const std::runtime_error& error) {
    BOOST_TEST(std::string(error.what()).ends_with("/v1/other: HTTP 401: bad key"), error.what());
  }
}

// The scale the client is for: a thousand streams open at once on one thread.
BOOST_AUTO_TEST_CASE(a_thousand_concurrent_streams) {
  FakeServer fake(std::chrono::milliseconds(50));
  constexpr int kNumRequests = 1000;
  std::vector<bench::LoadRequest> requests(
      kNumRequests, bench::LoadRequest{0, "/v1/completions", completion_body(4, 8, true), 0.0, 8});
  bench::LoadClientConfig config;
  config.base_url = fake.base_url();
  config.api_key = kApiKey;
  const auto result = bench::run_load(requests, config);
  const auto num_ok =
      std::count_if(result.records.begin(), result.records.end(), [](const auto& r) { return r.success; });
  BOOST_TEST(num_ok == kNumRequests);
  for (const auto& record : result.records) {
    if (!record.success) {
      BOOST_TEST_MESSAGE("first failure: " << record.error);
      break;
    }
  }
  BOOST_TEST(result.max_in_flight == kNumRequests);
  BOOST_TEST(fake.max_active() >= kNumRequests * 9 / 10);  // the streams did overlap
}

BOOST_AUTO_TEST_SUITE_END()
