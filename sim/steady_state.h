// Whether one replica sustains a request rate, judged from the steady state rather than from
// however long a trace happens to be.
//
// A finite trace can meet a latency SLO at a rate no replica sustains: when every request fits
// in the first batch, nothing ever queues. So a rate is simulated on the trace tiled (repeated,
// each copy after the previous one, with its own prefix-cache salt so copies share no blocks)
// until the arrivals span many service times, and judged on the requests that arrive in the
// second half of that span, when the queue has had time to reach equilibrium:
//   - the queueing delay (first scheduled - arrival) must not trend upward: its least-squares
//     slope against arrival time is at most max_growth seconds per second (at a rate above
//     capacity the slope is rate/capacity - 1);
//   - the waiting count must not trend upward: its slope is at most max_growth times the
//     arrival rate (above capacity it is rate - capacity);
//   - the latency statistics of the SLO are taken over the same window.
// With the SLO's objectives given, a run stops as soon as its verdict is certain (a request refused,
// an objective missed over the window: sim/slo_watch.h), and that verdict stands: the run is not
// repeated on a longer span, since a queue that starts empty only understates the latencies of a
// longer run.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/engine/replay.h"
#include "core/metrics/request_record.h"
#include "core/sched/request.h"
#include "sim/latency_objective.h"

namespace pagedllm::sim {

struct SteadyStateConfig {
  double min_span_in_service_times = 20.0;  // arrivals span this many mean service times at least
  int64_t min_requests = 1000;              // simulated requests at least (copies of the trace)
  int64_t max_requests = 200000;            // tiling stops here; the report says the span fell short
  double max_growth = 0.05;                 // allowed upward trend (see above)
  // The SLO: a run that certainly misses one of these stops there (empty: every run to its end).
  std::vector<LatencyObjective> objectives;
};

// `trace` (sorted by arrival, times from 0) repeated `num_copies` times with arrival times divided
// by `rate_scale`. Copy c starts one mean inter-arrival gap after copy c-1's last arrival; ids are
// renumbered from 0; copy c's requests get cache salt (their salt + c) so no copy hits another's
// prefix cache.
std::vector<sched::Request> tile_requests(std::span<const sched::Request> trace, double rate_scale, int64_t num_copies);

struct SteadyStateReport {
  int64_t num_requests = 0;                    // simulated
  int64_t num_copies = 0;                      // of the trace
  double arrival_span = 0.0;                   // seconds from the first to the last arrival
  double mean_service_time = 0.0;              // seconds from first scheduled to finished, window mean
  bool span_sufficient = false;                // arrival_span >= min_span_in_service_times * mean_service_time
  double delay_growth = 0.0;                   // queueing delay slope over the window (s per s)
  double waiting_growth = 0.0;                 // waiting count slope over the window / arrival rate
  bool sustained = false;                      // both growths at most max_growth, and nothing refused
  int64_t num_refused = 0;                     // requests the engine refused (never fit)
  std::vector<metrics::RequestRecord> window;  // the requests that arrived in the second half
  std::string shortfall;                       // why the span is not sufficient ("" when it is)
  std::string missed;                          // why the SLO is certainly missed (sim/slo_watch.h), or ""
  bool stopped_early = false;                  // the run stopped when `missed` was decided: no window
};

// Judges one simulated run (see the header comment).
SteadyStateReport measure_steady_state(const engine::ReplayResult& result, const SteadyStateConfig& config);

// What run_to_steady_state asks of one simulation besides its requests: hand each finished output
// and each refusal to these as they end (sim::ClusterConfig::on_finished, on_refused), and ask
// should_stop now and then (sim::ClusterConfig::should_stop), stopping where the run stands when
// it says so.
struct SimulationHooks {
  std::function<void(engine::RequestOutput&&)> on_finished;
  std::function<void(engine::RefusedRequest&&)> on_refused;
  std::function<bool()> should_stop;
};

// Runs `trace` at `rate_scale` through `run` (a simulation of one replica), tiled until the span
// is sufficient, the rate is plainly not sustained, the SLO is certainly missed, or max_requests
// is reached. `run` returns its ReplayResult with `stopped` set when should_stop ended it; its
// outputs and refusals went to the hooks.
using SimulateFn = std::function<engine::ReplayResult(std::vector<sched::Request>, const SimulationHooks&)>;
SteadyStateReport run_to_steady_state(std::span<const sched::Request> trace, double rate_scale, const SimulateFn& run,
                                      const SteadyStateConfig& config);

}  // namespace pagedllm::sim
