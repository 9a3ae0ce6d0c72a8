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
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/engine/replay.h"
#include "core/metrics/request_record.h"
#include "core/sched/request.h"

namespace pagedllm::sim {

struct SteadyStateConfig {
  double min_span_in_service_times = 20.0;  // arrivals span this many mean service times at least
  int64_t min_requests = 1000;              // simulated requests at least (copies of the trace)
  int64_t max_requests = 200000;            // tiling stops here; the report says the span fell short
  double max_growth = 0.05;                 // allowed upward trend (see above)
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
};

// Judges one simulated run (see the header comment).
SteadyStateReport measure_steady_state(const engine::ReplayResult& result, const SteadyStateConfig& config);

// Runs `trace` at `rate_scale` through `run` (a simulation of one replica), tiled until the span
// is sufficient, the rate is plainly not sustained, or max_requests is reached.
using SimulateFn = std::function<engine::ReplayResult(std::vector<sched::Request>)>;
SteadyStateReport run_to_steady_state(std::span<const sched::Request> trace, double rate_scale, const SimulateFn& run,
                                      const SteadyStateConfig& config);

}  // namespace pagedllm::sim
