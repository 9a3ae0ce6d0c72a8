#include "core/frontend/serving_engine.h"

#include <chrono>
#include <exception>

namespace pagedllm::frontend {

ServingEngine::ServingEngine(ServingEngineConfig config, engine::Executor& executor, tokenizer::Tokenizer tokenizer,
                             ServingObserver* observer)
    : config_(std::move(config)), executor_(executor), tokenizer_(std::move(tokenizer)), observer_(observer) {
  config_.engine.output_kind = engine::OutputKind::delta;  // each step's new tokens, streamed as they come
  config_.engine.record_step_metrics = false;              // a server runs for weeks: no per-step history
  engine_ = std::make_unique<engine::Engine>(config_.engine, executor_, clock_, nullptr, config_.draft_model);
  loop_ = std::thread([this] { run_loop(); });
}

ServingEngine::~ServingEngine() { stop(); }

void ServingEngine::stop() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (loop_.joinable()) loop_.join();
}

ValidatedRequest ServingEngine::validate(ServingRequest request) const {
  // config_ is immutable once the loop runs: safe from any thread.
  engine::validate_request(config_.engine, request.sampling, static_cast<int32_t>(request.prompt_tokens.size()));
  return ValidatedRequest(std::move(request));
}

std::optional<sched::RequestId> ServingEngine::submit(ValidatedRequest request, UpdateSink sink) {
  const std::lock_guard lock(mutex_);
  if (!alive_ || stopping_ || draining_ || num_pending_ >= config_.max_pending_requests) return std::nullopt;
  const sched::RequestId id = next_id_++;
  submissions_.push_back({id, std::move(request.request_), std::move(sink)});
  ++num_pending_;
  wake_.notify_one();
  return id;
}

void ServingEngine::abort(sched::RequestId id) {
  const std::lock_guard lock(mutex_);
  if (!alive_ || stopping_) return;  // nothing runs any more: everything ended already
  aborts_.push_back(id);
  wake_.notify_one();
}

void ServingEngine::begin_drain() {
  const std::lock_guard lock(mutex_);
  draining_ = true;
}

bool ServingEngine::draining() const {
  const std::lock_guard lock(mutex_);
  return draining_;
}

bool ServingEngine::alive() const {
  const std::lock_guard lock(mutex_);
  return alive_;
}

std::string ServingEngine::failure() const {
  const std::lock_guard lock(mutex_);
  return failure_;
}

int32_t ServingEngine::num_pending() const {
  const std::lock_guard lock(mutex_);
  return num_pending_;
}

void ServingEngine::run_loop() {
  try {
    while (true) {
      std::deque<Submission> arrived;
      std::vector<sched::RequestId> aborted;
      {
        std::unique_lock lock(mutex_);
        const auto has_work = [&] {
          return stopping_ || !submissions_.empty() || !aborts_.empty() || engine_->has_unfinished();
        };
        if (engine_->has_unfinished() && engine_->num_idle_steps() > 0) {
          // Unfinished requests that nothing could schedule (they wait on each other's blocks):
          // do not spin; anything submitted or aborted wakes the loop at once.
          wake_.wait_for(lock, std::chrono::milliseconds(1),
                         [&] { return stopping_ || !submissions_.empty() || !aborts_.empty(); });
        } else {
          wake_.wait(lock, has_work);
        }
        if (stopping_) break;
        arrived.swap(submissions_);
        aborted.swap(aborts_);
      }
      for (Submission& submission : arrived) admit(submission);
      for (const sched::RequestId id : aborted) {
        if (streams_.contains(id)) engine_->abort_request(id);
      }
      if (!engine_->has_unfinished()) continue;
      for (const engine::RequestOutput& output : engine_->step()) deliver(output);
      if (observer_ != nullptr) observer_->on_step(snapshot());
    }
  } catch (const std::exception& error) {
    const std::lock_guard lock(mutex_);
    alive_ = false;
    failure_ = error.what();
  }
  // Stopping, or the loop died: every request still here ends now.
  std::deque<Submission> never_admitted;
  {
    const std::lock_guard lock(mutex_);
    never_admitted.swap(submissions_);
    num_pending_ = 0;
  }
  const bool failed = !failure().empty();
  const RequestError error = failed ? RequestError::engine_failed : RequestError::shutting_down;
  const std::string reason = failed ? "the engine failed: " + failure() : "the server is shutting down";
  for (Submission& submission : never_admitted) {
    RequestUpdate update;
    update.finished = true;
    update.error = error;
    update.error_message = reason;
    submission.sink(std::move(update));
  }
  for (auto& [id, stream] : streams_) {
    RequestUpdate update;
    update.finished = true;
    update.error = error;
    update.error_message = reason;
    update.num_output_tokens = stream.text.num_output_tokens();
    stream.sink(std::move(update));
  }
  streams_.clear();
}

void ServingEngine::admit(Submission& submission) {
  sched::Request request;
  request.id = submission.id;
  request.prompt_tokens = std::move(submission.request.prompt_tokens);
  request.params = submission.request.sampling;
  request.priority = submission.request.priority;
  request.arrival_time = clock_.now();
  const RequestStreamOptions text_options{.text = {.stop = request.params.stop,
                                                   .min_tokens = request.params.min_tokens,
                                                   .include_stop = submission.request.include_stop_str_in_output,
                                                   .decode = submission.request.decode},
                                          .num_samples = request.params.n,
                                          .beam_search = request.params.use_beam_search(),
                                          .with_logprobs = request.params.logprobs.has_value()};
  Stream stream{.sink = std::move(submission.sink),
                .text = RequestStream(tokenizer_, text_options),
                .arrival = request.arrival_time};
  engine_->add_validated_request(std::move(request));  // validate() made the submission
  streams_.emplace(submission.id, std::move(stream));
}

void ServingEngine::deliver(const engine::RequestOutput& output) {
  const auto found = streams_.find(output.id);
  if (found == streams_.end()) return;  // ended already (every sample hit a stop string)
  Stream& stream = found->second;
  const double now = clock_.now();
  std::optional<RequestUpdate> news = stream.text.on_output(output, *engine_);
  if (!news) return;  // a beam search before its end
  RequestUpdate& update = *news;
  int64_t num_new_tokens = 0;
  for (const CompletionUpdate& completion : update.completions)
    num_new_tokens += static_cast<int64_t>(completion.tokens.size());
  if (num_new_tokens > 0 && observer_ != nullptr) {
    if (stream.last_output < 0.0) {
      const double scheduled = output.times.first_scheduled >= 0.0 ? output.times.first_scheduled : now;
      observer_->on_first_token(now - stream.arrival, scheduled - stream.arrival);
    } else {
      observer_->on_token_gap(now - stream.last_output);
    }
  }
  if (num_new_tokens > 0) stream.last_output = now;

  if (!update.finished) {
    stream.sink(std::move(update));
    return;
  }
  if (observer_ != nullptr) {
    observer_->on_finished(now - stream.arrival,
                           update.completions.empty() ? "abort" : update.completions.front().finish_reason);
  }
  {
    const std::lock_guard lock(mutex_);
    --num_pending_;  // before the sink: whoever it wakes sees the request gone
  }
  stream.sink(std::move(update));
  streams_.erase(found);
}

ServingObserver::Snapshot ServingEngine::snapshot() const {
  ServingObserver::Snapshot snapshot;
  const sched::Scheduler& scheduler = engine_->scheduler();
  snapshot.num_running = scheduler.num_running();
  snapshot.num_swapped = scheduler.num_swapped();
  {
    const std::lock_guard lock(mutex_);
    snapshot.num_waiting = scheduler.num_waiting() + static_cast<int32_t>(submissions_.size());
  }
  const kv::KvStats stats = engine_->kv().stats();
  snapshot.kv_usage = stats.device_usage();
  snapshot.counters = engine_->counters();
  snapshot.prefix_query_tokens = stats.prefix_query_tokens;
  snapshot.prefix_hit_tokens = stats.prefix_hit_tokens;
  return snapshot;
}

}  // namespace pagedllm::frontend
