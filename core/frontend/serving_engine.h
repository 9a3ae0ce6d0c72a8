// The engine behind a live frontend (the HTTP server): one thread runs the engine loop (schedule,
// execute, apply) on a wall clock; other threads submit requests and aborts through a queue and
// get each request's progress back through its sink, as text (RequestStream: detokenized, cut at
// stop strings).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/engine/executor.h"
#include "core/frontend/request_stream.h"
#include "core/tokenizer/tokenizer.h"

namespace pagedllm::frontend {

struct ServingRequest {
  std::vector<TokenId> prompt_tokens;
  sched::SamplingParams sampling;  // stop strings are applied here, on the text
  int32_t priority = 0;
  tokenizer::DecodeOptions decode{.skip_special_tokens = true};  // of the output text (vLLM's default)
  bool include_stop_str_in_output = false;                       // the text ends with the stop string that ended it
};

// A request that passed validation against one engine's limits. Only ServingEngine::validate makes
// one, so a request is validated exactly once, on the thread that received it, before it is queued.
class ValidatedRequest {
 public:
  const ServingRequest& request() const { return request_; }

 private:
  friend class ServingEngine;
  explicit ValidatedRequest(ServingRequest request) : request_(std::move(request)) {}
  ServingRequest request_;
};

// Called on the engine thread: must return quickly (post the work elsewhere).
using UpdateSink = std::function<void(RequestUpdate&&)>;

// What the loop reports for /metrics. Called on the engine thread.
class ServingObserver {
 public:
  virtual ~ServingObserver() = default;
  struct Snapshot {
    int32_t num_running = 0;
    int32_t num_waiting = 0;  // in the scheduler's queue, and submitted but not yet admitted
    int32_t num_swapped = 0;
    double kv_usage = 0.0;  // device blocks in use / total
    engine::EngineCounters counters;
    int64_t prefix_query_tokens = 0;
    int64_t prefix_hit_tokens = 0;
  };
  virtual void on_step(const Snapshot& snapshot) = 0;
  virtual void on_first_token(double ttft_seconds, double queue_seconds) = 0;
  virtual void on_token_gap(double seconds) = 0;  // between two outputs of one request
  virtual void on_finished(double e2e_seconds, const std::string& finish_reason) = 0;
};

struct ServingEngineConfig {
  engine::EngineConfig engine;
  int32_t max_pending_requests = 1024;              // submitted and not finished; beyond it submit() refuses
  spec::DraftModelProposer* draft_model = nullptr;  // with engine.speculative's draft_model method; outlives the engine
};

class ServingEngine {
 public:
  // Starts the loop thread. The executor and the observer (optional) must outlive the engine.
  ServingEngine(ServingEngineConfig config, engine::Executor& executor, tokenizer::Tokenizer tokenizer,
                ServingObserver* observer = nullptr);
  ~ServingEngine();  // stop()
  // Stops the loop (idempotent): every request still pending gets a final update with the error
  // "the server is shutting down", and submit() refuses from then on.
  void stop();
  ServingEngine(const ServingEngine&) = delete;
  ServingEngine& operator=(const ServingEngine&) = delete;

  // Thread-safe. Throws sched::InvalidRequestError naming the field when the request is invalid
  // for this engine (its context length, logprobs bound, vocabulary).
  ValidatedRequest validate(ServingRequest request) const;
  // Thread-safe. Returns the request id, or nothing when max_pending_requests are pending or the
  // engine drains (the caller answers 503). A request the KV cache can never hold comes back
  // through the sink.
  std::optional<sched::RequestId> submit(ValidatedRequest request, UpdateSink sink);
  // Thread-safe, idempotent; the request's final update ("abort") follows within one step.
  void abort(sched::RequestId id);

  // Thread-safe, idempotent: submit() refuses from now on while the requests already submitted
  // run on, so that num_pending() counts down to every request the engine accepted.
  void begin_drain();
  bool draining() const;
  bool alive() const;  // false once the loop has died (an exception escaped a step)
  std::string failure() const;
  int32_t num_pending() const;
  const engine::EngineConfig& engine_config() const { return config_.engine; }

 private:
  struct Submission {
    sched::RequestId id = 0;
    ServingRequest request;
    UpdateSink sink;
  };
  struct Stream {  // a request the loop is running
    UpdateSink sink;
    RequestStream text;
    double arrival = 0.0;
    double last_output = -1.0;
  };

  void run_loop();
  void admit(Submission& submission);
  void deliver(const engine::RequestOutput& output);
  ServingObserver::Snapshot snapshot() const;

  ServingEngineConfig config_;
  engine::Executor& executor_;
  tokenizer::Tokenizer tokenizer_;
  ServingObserver* observer_;
  engine::WallClock clock_;
  std::unique_ptr<engine::Engine> engine_;                // used by the loop thread only
  std::unordered_map<sched::RequestId, Stream> streams_;  // loop thread only

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_;
  std::deque<Submission> submissions_;
  std::vector<sched::RequestId> aborts_;
  sched::RequestId next_id_ = 1;
  int32_t num_pending_ = 0;
  bool stopping_ = false;
  bool draining_ = false;
  bool alive_ = true;
  std::string failure_;

  std::thread loop_;
};

std::string finish_reason_text(sched::FinishReason reason);

}  // namespace pagedllm::frontend
