#include "sim/cluster.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace pagedllm::sim {

ClusterSimulation::ClusterSimulation(ClusterConfig config)
    : config_(std::move(config)),
      replicas_(static_cast<size_t>(std::max(config_.num_replicas, 0))),
      router_(config_.router) {
  if (config_.num_replicas < 1) throw std::invalid_argument("cluster: num_replicas must be at least 1");
  if (!config_.make_executor) throw std::invalid_argument("cluster: make_executor is required");
  if (!(config_.serving_path_seconds >= 0.0)) {
    throw std::invalid_argument("cluster: serving_path_seconds must be 0 or more");
  }
  config_.host.validate();
  for (size_t i = 0; i < replicas_.size(); ++i) {
    Replica& replica = replicas_[i];
    replica.executor = config_.make_executor(static_cast<int32_t>(i));
    if (config_.make_draft_model) replica.draft_model = config_.make_draft_model(static_cast<int32_t>(i));
    replica.engine = std::make_unique<engine::Engine>(config_.engine, *replica.executor, replica.clock, nullptr,
                                                      replica.draft_model.get());
    engines_.push_back(replica.engine.get());
  }
}

SharedStep ClusterSimulation::shared_step(const sched::StepPlan& plan, double work) const {
  SharedStep step;
  int64_t output_tokens = 0;  // a verify pass's accepted proposals beyond its first token left out
  double prompt_tokens = 0.0;
  double decode_rows = 0.0;
  for (const sched::ScheduledSequence& scheduled : plan.sequences) {
    if (scheduled.sample) output_tokens += scheduled.num_samples;
    if (scheduled.is_prefill()) {
      prompt_tokens += scheduled.num_new_tokens();
    } else {
      decode_rows += 1.0 + scheduled.num_proposed_tokens;
    }
  }
  if (work > 0.0) {
    step.serving_cores = static_cast<double>(output_tokens) * config_.host.serving_cpu_seconds_per_token / work;
  }
  if (prompt_tokens + decode_rows > 0.0) step.prefill_share = prompt_tokens / (prompt_tokens + decode_rows);
  return step;
}

int32_t ClusterSimulation::replica_of(sched::RequestId id) const {
  if (id < 0 || static_cast<size_t>(id) >= replica_of_.size()) return -1;
  return replica_of_[static_cast<size_t>(id)];
}

void ClusterSimulation::update_shared_rates() {
  shared_steps_.clear();
  for (const Replica& replica : replicas_) {
    if (replica.busy) shared_steps_.push_back(replica.shared);
  }
  const std::vector<double> rates = config_.host.rates(shared_steps_);
  size_t next = 0;
  for (Replica& replica : replicas_) {
    if (replica.busy) replica.rate = rates[next++];
  }
}

void ClusterSimulation::progress_shared_work(double now) {
  if (!config_.host.enabled()) return;
  const double elapsed = now - last_event_;
  if (elapsed > 0.0) {
    for (Replica& replica : replicas_) {
      if (replica.busy) replica.work_left = std::max(0.0, replica.work_left - elapsed * replica.rate);
    }
  }
  last_event_ = now;
}

void ClusterSimulation::reschedule_shared_ends(double now) {
  if (!config_.host.enabled()) return;
  update_shared_rates();
  for (Replica& replica : replicas_) {
    if (replica.busy) replica.step_end = now + replica.work_left / replica.rate;
  }
}

void ClusterSimulation::add_serving_path(engine::RequestOutput& output) const {
  const double delay = config_.serving_path_seconds;
  if (delay == 0.0) return;
  sched::RequestTimes& times = output.times;
  if (times.first_token >= 0.0) times.first_token += delay;
  if (times.finished >= 0.0) times.finished += delay;
  for (double& time : times.token_times) time += delay;
}

void ClusterSimulation::collect(std::vector<engine::RequestOutput>& outputs, engine::ReplayResult& result,
                                engine::ReplayProgress& progress) {
  for (engine::RequestOutput& output : outputs) {
    if (!output.finished) continue;
    ++progress.num_finished;
    add_serving_path(output);
    ++counters_.num_outputs;
    if (config_.on_finished) {
      config_.on_finished(std::move(output));
    } else {
      result.outputs.push_back(std::move(output));
    }
  }
  if (config_.on_progress) {
    progress.num_running = 0;
    progress.num_waiting = 0;
    for (const engine::Engine* engine : engines_) {
      progress.num_running += engine->scheduler().num_running();
      progress.num_waiting += engine->scheduler().num_waiting();
    }
    config_.on_progress(progress);
  }
}

void ClusterSimulation::start_step(Replica& replica, double now, engine::ReplayResult& result,
                                   engine::ReplayProgress& progress) {
  replica.clock.set(now);
  const double work = replica.engine->begin_step();
  ++counters_.num_steps;
  if (replica.engine->num_idle_steps() > 0) {
    // Nothing scheduled: the step takes no time and the replica waits for its next arrival.
    progress.now = now;
    collect(replica.engine->finish_step(now), result, progress);
    return;
  }
  replica.busy = true;
  replica.work_left = work;
  replica.step_end = now + work;  // with host sharing, moved by reschedule_shared_ends
  replica.shared = {};
  // The step's shape matters only to the serving path's CPU and to interference.
  const HostSharing& host = config_.host;
  if (host.enabled() && (host.serving_cpu_seconds_per_token > 0.0 || host.interference.any())) {
    replica.shared = shared_step(replica.engine->in_flight_plan(), work);
  }
}

void ClusterSimulation::end_step(Replica& replica, engine::ReplayResult& result, engine::ReplayProgress& progress) {
  const double end = replica.step_end;
  replica.busy = false;
  replica.work_left = 0.0;
  replica.shared = {};
  progress.now = end;
  collect(replica.engine->finish_step(end), result, progress);
  if (replica.engine->has_unfinished()) start_step(replica, end, result, progress);
}

engine::ReplayResult ClusterSimulation::run(std::vector<sched::Request> requests) {
  engine::VectorRequestSource source(std::move(requests));  // run(source) checks the order as it pulls
  return run(source);
}

engine::ReplayResult ClusterSimulation::run(engine::RequestSource& source) {
  if (static_cast<bool>(config_.on_finished) != static_cast<bool>(config_.on_refused)) {
    throw std::invalid_argument("cluster: on_finished and on_refused go together");
  }
  engine::ReplayResult result;
  engine::ReplayProgress progress;
  progress.num_total = source.expected_count();
  std::optional<sched::Request> pending = source.next();  // the next arrival
  constexpr double kNever = std::numeric_limits<double>::infinity();
  for (int64_t event = 1;; ++event) {
    if (config_.should_stop && event % ClusterConfig::kStopCheckEvents == 0 && config_.should_stop()) {
      result.stopped = true;
      break;
    }
    // The earliest step end (lowest replica index on ties).
    size_t stepping = replicas_.size();
    double step_end = kNever;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      if (replicas_[i].busy && replicas_[i].step_end < step_end) {
        step_end = replicas_[i].step_end;
        stepping = i;
      }
    }
    const double arrival = pending ? pending->arrival_time : kNever;
    if (stepping == replicas_.size() && !pending) break;
    if (step_end < arrival) {  // on ties the arrival first: the next step admits it
      progress_shared_work(step_end);
      end_step(replicas_[stepping], result, progress);
      reschedule_shared_ends(step_end);
      continue;
    }
    progress_shared_work(arrival);
    sched::Request request = std::move(*pending);
    pending = source.next();
    if (pending && pending->arrival_time < arrival) {
      throw std::invalid_argument("cluster: request " + std::to_string(pending->id) +
                                  " arrives before the one before it: requests must come in arrival order");
    }
    ++counters_.num_arrivals;
    ++progress.num_added;
    if (config_.on_arrival) config_.on_arrival(request);
    const size_t target = router_.route(request, engines_);
    Replica& replica = replicas_[target];
    if (request.id >= 0) {
      const auto id = static_cast<size_t>(request.id);
      if (id >= replica_of_.size()) replica_of_.resize(id + 1, -1);
      replica_of_[id] = static_cast<int32_t>(target);
    }
    engine::RefusedRequest if_refused{request.id, request.arrival_time, sched::prompt_length(request), {}};
    try {
      replica.engine->add_request(std::move(request));  // while a step is in flight, the next one admits it
    } catch (const std::invalid_argument& error) {
      if_refused.message = error.what();
      if (config_.on_refused) {
        config_.on_refused(std::move(if_refused));
      } else {
        result.refused.push_back(std::move(if_refused));
      }
      ++progress.num_finished;
      continue;
    }
    if (!replica.busy) {
      start_step(replica, std::max(replica.clock.now(), arrival), result, progress);
      reschedule_shared_ends(arrival);
    }
  }
  for (const Replica& replica : replicas_) {
    if (!result.stopped && replica.engine->has_unfinished()) {
      throw std::runtime_error("cluster: a replica stalled with " + std::to_string(num_outstanding(*replica.engine)) +
                               " unfinished requests and nothing it could schedule");
    }
  }
  result.start_time = 0.0;
  result.end_time = 0.0;
  for (const Replica& replica : replicas_) result.end_time = std::max(result.end_time, replica.clock.now());
  if (counters_.num_outputs > 0) result.end_time += config_.serving_path_seconds;  // the last output's way out
  std::sort(result.outputs.begin(), result.outputs.end(),
            [](const engine::RequestOutput& a, const engine::RequestOutput& b) { return a.id < b.id; });
  return result;
}

}  // namespace pagedllm::sim
