// The discrete-event simulation of a cluster: R replicas, each an engine (the real scheduler and
// KV manager) over its own executor and virtual clock, fed by a router.
//
// Events, in time order: request arrivals (routed, then queued at their replica) and step ends
// (a replica's next step starts at once while it has unfinished requests). Ties are broken the
// same way every run: at equal times arrivals come before step ends (so a request arriving
// exactly when a step ends is admitted by the next step), arrivals in trace order, step ends by
// replica index. A step's effects are computed when it starts (the engine is synchronous) and are
// visible to the router from then on; its outputs carry its end time.
//
// With one replica this is exactly engine::replay_requests in virtual time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/engine/replay.h"
#include "core/kv/kv_event_log.h"
#include "sim/router.h"

namespace pagedllm::sim {

struct ClusterConfig {
  int32_t num_replicas = 1;
  RouterConfig router;
  engine::EngineConfig engine;  // every replica's
  // Makes replica i's executor (the cluster owns it).
  std::function<std::unique_ptr<engine::Executor>(int32_t replica)> make_executor;
  std::function<void(const engine::ReplayProgress&)> on_progress;  // after every step
};

struct ClusterCounters {
  int64_t num_arrivals = 0;
  int64_t num_steps = 0;  // over all replicas
  int64_t num_events() const { return num_arrivals + num_steps; }
};

class ClusterSimulation {
 public:
  // Throws std::invalid_argument for a config without replicas or an executor factory.
  explicit ClusterSimulation(ClusterConfig config);

  // Runs `requests` (sorted by arrival_time, times relative to 0) to completion. Returns every
  // finished output and every refused request, by request id, over all replicas.
  engine::ReplayResult run(std::vector<sched::Request> requests);

  int32_t num_replicas() const { return static_cast<int32_t>(replicas_.size()); }
  const engine::Engine& replica(int32_t index) const { return *replicas_[static_cast<size_t>(index)].engine; }
  // Which replica served each request id (after run()).
  int32_t replica_of(sched::RequestId id) const;
  const ClusterCounters& counters() const { return counters_; }

 private:
  struct Replica {
    std::unique_ptr<engine::Executor> executor;
    engine::VirtualClock clock;
    std::unique_ptr<engine::Engine> engine;
    bool busy = false;  // a step is in flight until clock.now()
  };

  void start_step(Replica& replica, double now, engine::ReplayResult& result, engine::ReplayProgress& progress);

  ClusterConfig config_;
  std::vector<Replica> replicas_;
  std::vector<const engine::Engine*> engines_;  // for the router
  Router router_;
  std::vector<int32_t> replica_of_;  // by request id
  ClusterCounters counters_;
};

}  // namespace pagedllm::sim
