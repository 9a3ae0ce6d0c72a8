#include "core/frontend/serving_engine.h"

#include <chrono>
#include <exception>

namespace pagedllm::frontend {

std::string finish_reason_text(sched::FinishReason reason) {
  switch (reason) {
    case sched::FinishReason::stop: return "stop";
    case sched::FinishReason::length: return "length";
    case sched::FinishReason::abort: return "abort";
    case sched::FinishReason::rejected: return "abort";
    case sched::FinishReason::none: return "";
  }
  return "";
}

ServingEngine::ServingEngine(ServingEngineConfig config, engine::Executor& executor, tokenizer::Tokenizer tokenizer,
                             ServingObserver* observer)
    : config_(std::move(config)), executor_(executor), tokenizer_(std::move(tokenizer)), observer_(observer) {
  config_.engine.output_kind = engine::OutputKind::delta;  // each step's new tokens, streamed as they come
  config_.engine.record_step_metrics = false;               // a server runs for weeks: no per-step history
  engine_ = std::make_unique<engine::Engine>(config_.engine, executor_, clock_);
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

std::optional<sched::RequestId> ServingEngine::submit(ServingRequest request, UpdateSink sink) {
  const std::lock_guard lock(mutex_);
  if (!alive_ || stopping_ || num_pending_ >= config_.max_pending_requests) return std::nullopt;
  const sched::RequestId id = next_id_++;
  submissions_.push_back({id, std::move(request), std::move(sink)});
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
          wake_.wait_for(lock, std::chrono::milliseconds(1), [&] { return stopping_ || !submissions_.empty() || !aborts_.empty(); });
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
  const std::string reason = failure().empty() ? "the server is shutting down" : "the engine failed: " + failure();
  for (Submission& submission : never_admitted) {
    RequestUpdate update;
    update.finished = true;
    update.error = reason;
    submission.sink(std::move(update));
  }
  for (auto& [id, stream] : streams_) {
    RequestUpdate update;
    update.finished = true;
    update.error = reason;
    update.num_output_tokens = stream.num_output_tokens;
    stream.sink(std::move(update));
  }
  streams_.clear();
}

void ServingEngine::admit(Submission& submission) {
  const auto refuse = [&](const std::string& message) {
    {
      const std::lock_guard lock(mutex_);
      --num_pending_;  // before the sink: whoever it wakes sees the request gone
    }
    RequestUpdate update;
    update.finished = true;
    update.error = message;
    submission.sink(std::move(update));
  };
  sched::Request request;
  request.id = submission.id;
  request.prompt_tokens = std::move(submission.request.prompt_tokens);
  request.params = submission.request.sampling;
  request.priority = submission.request.priority;
  request.arrival_time = clock_.now();
  Stream stream;
  stream.sink = std::move(submission.sink);
  stream.text_options = {.stop = request.params.stop,
                         .min_tokens = request.params.min_tokens,
                         .include_stop = submission.request.include_stop_str_in_output,
                         .decode = submission.request.decode};
  stream.num_samples = request.params.n;
  stream.beam_search = request.params.use_beam_search();
  stream.arrival = request.arrival_time;
  try {
    engine_->add_request(std::move(request));
  } catch (const std::invalid_argument& error) {
    submission.sink = std::move(stream.sink);
    refuse(error.what());
    return;
  }
  streams_.emplace(submission.id, std::move(stream));
}

void ServingEngine::deliver(const engine::RequestOutput& output) {
  const auto found = streams_.find(output.id);
  if (found == streams_.end()) return;  // ended already (every sample hit a stop string)
  Stream& stream = found->second;
  const double now = clock_.now();
  RequestUpdate update;
  update.num_prompt_tokens = output.num_prompt_tokens;
  const auto end_stream = [&] {
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
  };
  if (output.finish_reason == sched::FinishReason::rejected) {
    update.finished = true;
    update.error = output.message;
    end_stream();
    return;
  }
  // Beam search reorders its beams until it ends: its text goes out whole, at the end.
  if (stream.beam_search && !output.finished) return;
  int64_t num_new_tokens = 0;
  for (const engine::Completion& completion : output.completions) {
    const auto index = static_cast<size_t>(completion.index);
    while (stream.texts.size() <= index) {
      stream.texts.emplace_back(tokenizer_, stream.text_options);
      stream.held.emplace_back();
      stream.sample_finished.push_back(false);
    }
    if (stream.sample_finished[index]) continue;
    TextStream& text = stream.texts[index];
    CompletionUpdate& held = stream.held[index];
    CompletionUpdate news;
    news.index = completion.index;
    // Tokens go out with their text: while the text is held back, so are they (and their logprobs).
    const auto release_held = [&] {
      news.tokens.insert(news.tokens.end(), held.tokens.begin(), held.tokens.end());
      news.token_logprobs.insert(news.token_logprobs.end(), held.token_logprobs.begin(), held.token_logprobs.end());
      news.top_logprobs.insert(news.top_logprobs.end(), held.top_logprobs.begin(), held.top_logprobs.end());
      held = CompletionUpdate{};
    };
    for (size_t i = 0; i < completion.tokens.size() && !text.stopped(); ++i) {
      news.text += text.push(completion.tokens[i]);
      held.tokens.push_back(completion.tokens[i]);
      if (i < completion.token_logprobs.size()) held.token_logprobs.push_back(completion.token_logprobs[i]);
      if (i < completion.top_logprobs.size()) held.top_logprobs.push_back(completion.top_logprobs[i]);
      if (text.stopped() || !text.holding()) release_held();
    }
    if (text.stopped()) {
      news.finish_reason = "stop";
      // Free this sample now; the others go on (a waiting or swapped request keeps it until its
      // own end, its text already cut).
      engine_->stop_sample(output.id, completion.index);
    } else if (completion.finish_reason != sched::FinishReason::none || output.finished) {
      news.text += text.finish();
      release_held();
      news.finish_reason = finish_reason_text(completion.finish_reason != sched::FinishReason::none
                                                  ? completion.finish_reason
                                                  : output.finish_reason);
      if (news.finish_reason.empty()) news.finish_reason = "abort";
    }
    stream.sample_finished[index] = !news.finish_reason.empty();
    num_new_tokens += static_cast<int64_t>(news.tokens.size());
    if (!news.text.empty() || !news.tokens.empty() || !news.finish_reason.empty()) {
      update.completions.push_back(std::move(news));
    }
  }
  stream.num_output_tokens += num_new_tokens;
  update.num_output_tokens = stream.num_output_tokens;
  if (num_new_tokens > 0 && observer_ != nullptr) {
    if (stream.last_output < 0.0) {
      const double scheduled = output.times.first_scheduled >= 0.0 ? output.times.first_scheduled : now;
      observer_->on_first_token(now - stream.arrival, scheduled - stream.arrival);
    } else {
      observer_->on_token_gap(now - stream.last_output);
    }
  }
  if (num_new_tokens > 0) stream.last_output = now;

  bool every_sample_done = stream.sample_finished.size() == static_cast<size_t>(stream.num_samples);
  for (const bool done : stream.sample_finished) every_sample_done = every_sample_done && done;
  if (output.finished || every_sample_done) {
    if (!output.finished) engine_->abort_request(output.id);  // stop strings ended every sample: free its blocks
    update.finished = true;
    end_stream();
    return;
  }
  stream.sink(std::move(update));
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
