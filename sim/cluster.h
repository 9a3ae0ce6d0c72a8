// The discrete-event simulation of a cluster: R replicas, each an engine (the real scheduler and
// KV manager) over its own executor and virtual clock, fed by a router.
//
// Events, in time order: request arrivals (routed, then queued at their replica) and step ends
// (a replica's next step starts at once while it has unfinished requests). Ties are broken the
// same way every run: at equal times arrivals come before step ends (so a request arriving
// exactly when a step ends is admitted by the next step), arrivals in trace order, step ends by
// replica index. A step is scheduled and executed when it starts (Engine::begin_step), so its
// admissions and preemptions are visible to the router from then on; it is applied when it ends
// (Engine::finish_step) and its outputs carry that time.
//
// A step's length is the executor's elapsed time, unless the replicas share a host's cores
// (ClusterConfig::host): then each in-flight step progresses at the host's processor-sharing rate,
// min(1, cores / (busy replicas x threads)), recomputed at every event, so a step's end moves as
// neighbours start and finish.
//
// With one replica, no host sharing and no serving-path latency this is exactly
// engine::replay_requests in virtual time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/engine/replay.h"
#include "core/engine/request_source.h"
#include "core/kv/kv_event_log.h"
#include "sim/host_sharing.h"
#include "sim/router.h"

namespace pagedllm::sim {

struct ClusterConfig {
  int32_t num_replicas = 1;
  RouterConfig router;
  engine::EngineConfig engine;  // every replica's
  HostSharing host;             // replicas that share one host's cores slow each other's steps
  // Per request, the client's time the engine does not see: the HTTP request and its
  // tokenization, a router's hop, the SSE event back. Added to every time an output reports
  // after the engine took the request (first token, token times, finished), as a client measures
  // them. A constant delay on the way in only shifts the whole run, so one term covers both ways.
  double serving_path_seconds = 0.0;
  // Makes replica i's executor (the cluster owns it).
  std::function<std::unique_ptr<engine::Executor>(int32_t replica)> make_executor;
  // With speculative decoding by a draft model: makes replica i's draft (the cluster owns it).
  std::function<std::unique_ptr<spec::DraftModelProposer>(int32_t replica)> make_draft_model;
  std::function<void(const engine::ReplayProgress&)> on_progress;  // after every step
  // Called on each request as it arrives, before it is routed (simulate marks its record
  // arrived). Optional.
  std::function<void(sched::Request&)> on_arrival;
  // Optional, both or neither: each finished output (serving path added) and each request an
  // engine refused, handed over as it ends instead of being kept in the ReplayResult, so that a
  // long run holds only what is in flight.
  std::function<void(engine::RequestOutput&&)> on_finished;
  std::function<void(engine::RefusedRequest&&)> on_refused;
  // Asked every kStopCheckEvents events (arrivals or step ends); true ends the run where it
  // stands: run() returns the requests finished so far with ReplayResult::stopped set (a
  // wall-clock limit).
  std::function<bool()> should_stop;
  static constexpr int64_t kStopCheckEvents = 1024;
};

struct ClusterCounters {
  int64_t num_arrivals = 0;
  int64_t num_steps = 0;    // over all replicas
  int64_t num_outputs = 0;  // finished requests (refused ones aside)
  int64_t num_events() const { return num_arrivals + num_steps; }
};

class ClusterSimulation {
 public:
  // Throws std::invalid_argument for a config without replicas or an executor factory, or with a
  // negative serving-path latency or invalid host sharing.
  explicit ClusterSimulation(ClusterConfig config);

  // Runs `requests` (sorted by arrival_time, times relative to 0; one out of order throws
  // std::invalid_argument when it is reached) to completion, or until
  // should_stop says so. Returns every finished output and every refused request, by request id,
  // over all replicas. Each request moves into its replica when it arrives, so the run holds the
  // prompts of the requests not yet finished (a synthetic prompt left unwritten, only what its
  // engine stores of it).
  engine::ReplayResult run(std::vector<sched::Request> requests);
  // The same, pulling each request from `source` when the previous one has arrived. Throws
  // std::invalid_argument for an arrival that precedes the one before it. replica_of() then holds
  // 4 bytes per request id.
  engine::ReplayResult run(engine::RequestSource& source);

  int32_t num_replicas() const { return static_cast<int32_t>(replicas_.size()); }
  const engine::Engine& replica(int32_t index) const { return *replicas_[static_cast<size_t>(index)].engine; }
  // Which replica served each request id (after run()).
  int32_t replica_of(sched::RequestId id) const;
  const ClusterCounters& counters() const { return counters_; }

 private:
  struct Replica {
    std::unique_ptr<engine::Executor> executor;
    std::unique_ptr<spec::DraftModelProposer> draft_model;  // null without one
    engine::VirtualClock clock;
    std::unique_ptr<engine::Engine> engine;
    bool busy = false;       // a step is in flight (begun, not finished)
    double step_end = 0.0;   // when it ends, as the work left and the sharing rate say now
    double work_left = 0.0;  // host sharing: seconds of the step left at full speed
    SharedStep shared;       // host sharing: the in-flight step's serving CPU and prefill share
    double rate = 1.0;       // host sharing: profiled seconds done per second since the last event
  };

  // Begins a step at `now` on an idle replica; a step that scheduled nothing is finished at once.
  void start_step(Replica& replica, double now, engine::ReplayResult& result, engine::ReplayProgress& progress);
  void end_step(Replica& replica, engine::ReplayResult& result, engine::ReplayProgress& progress);
  void collect(std::vector<engine::RequestOutput>& outputs, engine::ReplayResult& result,
               engine::ReplayProgress& progress);
  void add_serving_path(engine::RequestOutput& output) const;
  // Host sharing: the in-flight steps' progress from the last event to `now` at their rates, and
  // their rates and ends as the steps in flight stand after an event.
  void progress_shared_work(double now);
  void reschedule_shared_ends(double now);
  void update_shared_rates();
  SharedStep shared_step(const sched::StepPlan& plan, double work) const;

  ClusterConfig config_;
  std::vector<Replica> replicas_;
  std::vector<const engine::Engine*> engines_;  // for the router
  Router router_;
  std::vector<int32_t> replica_of_;  // by request id
  ClusterCounters counters_;
  double last_event_ = 0.0;               // host sharing: when the in-flight work was last brought up to date
  std::vector<SharedStep> shared_steps_;  // host sharing: the busy replicas' steps (reused)
};

}  // namespace pagedllm::sim
