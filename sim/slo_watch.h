// Decides, while a rate's simulation is still running, that the rate certainly fails, so that the
// planner can stop simulating it there (sim/steady_state.h, run_to_steady_state):
//   - a request was refused (it can never fit): the rate is then not sustained, whatever follows;
//   - a percentile objective (p50, p90, p99): once more of the window's finished requests exceed
//     the limit than the percentile's rank leaves below it, for every population size up to the
//     window's, np.percentile can only interpolate between values above the limit;
//   - a mean objective: once the window's finished requests alone sum past limit x window size.
// The window is the one measure_steady_state judges: the requests that arrive in the second half
// of the run's arrival span; its failed requests, which no latency counts, count for nothing
// here either. ITL objectives are left to the full run (their population, every gap between
// tokens, is not known ahead). So a decided rate is one that the whole run would have judged
// infeasible: the verdict is exact, only the latencies past the stop are not computed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/engine/replay.h"
#include "core/engine/request_output.h"
#include "core/sched/request.h"
#include "sim/latency_objective.h"

namespace pagedllm::sim {

class SloMissWatch {
 public:
  // `requests`: the whole run's, finished or not; their arrival times fix the window.
  SloMissWatch(std::span<const LatencyObjective> objectives, std::span<const sched::Request> requests);

  void observe(const engine::RequestOutput& output);  // a finished request
  void observe_refusal(const engine::RefusedRequest& refused);

  bool decided() const { return !verdict_.empty(); }
  // Why the rate fails, naming the objective and the requests that decided it ("" = undecided).
  const std::string& verdict() const { return verdict_; }
  int64_t window_size() const { return window_size_; }

 private:
  struct Tally {
    LatencyObjective objective;
    int64_t exceedances_needed = 0;  // percentiles: finished requests above the limit that decide
    int64_t num_exceeding = 0;
    double sum_seconds = 0.0;  // means: the finished requests' values
  };

  double window_start_ = 0.0;  // seconds: arrivals at or after it are in the window
  int64_t window_size_ = 0;
  std::vector<Tally> tallies_;
  std::string verdict_;
};

}  // namespace pagedllm::sim
