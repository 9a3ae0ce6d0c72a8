// Replaying timed requests through an engine: each request is added when the clock reaches its
// arrival time, and the engine steps until every request has finished.
//
// Time modes (`pagedllm replay --time`):
//   virtual: the engine runs under a VirtualClock that advances by each step's reported time
//            (the simulator's prediction, or the CPU engine's measured compute time); idle gaps
//            between arrivals are skipped. The same numbers as `real` without the waiting, and
//            the only mode the simulator supports.
//   real:    a WallClock; the driver sleeps until the next arrival when the engine is idle.
//   fast:    every request arrives at time 0 (vLLM's --request-rate inf), virtual clock.
// Arrivals that fall inside a step are admitted before the next one, as a live server would.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/engine/request_output.h"
#include "core/sched/request.h"

namespace pagedllm::engine {

enum class TimeMode : uint8_t { virtual_clock, real, fast };
const char* to_string(TimeMode mode);
// "virtual", "real" or "fast"; throws std::invalid_argument listing them.
TimeMode parse_time_mode(const std::string& text);

struct ReplayProgress {
  int64_t num_total = 0;     // requests in the replay
  int64_t num_added = 0;     // arrived so far
  int64_t num_finished = 0;  // finished, rejected or refused
  int32_t num_running = 0;
  int32_t num_waiting = 0;
  double now = 0.0;  // engine clock, seconds
};

struct ReplayConfig {
  // Called after every step (keep it cheap: a progress bar throttles itself).
  std::function<void(const ReplayProgress&)> on_progress;
  // A stall guard: steps in a row that schedule nothing while requests wait and none can arrive.
  int64_t max_idle_steps = 1000;
};

// A request the engine refused at add_request (the message names the field).
struct RefusedRequest {
  sched::RequestId id = 0;
  double arrival_time = 0.0;
  int32_t num_prompt_tokens = 0;
  std::string message;
};

struct ReplayResult {
  std::vector<RequestOutput> outputs;  // one final output per accepted request, by request id
  std::vector<RefusedRequest> refused;
  double start_time = 0.0;  // engine clock when the replay began
  double end_time = 0.0;    // when the last request finished
  bool stopped = false;     // its driver ended it before every request finished (a wall-clock limit)
};

// Replays `requests` (sorted by arrival_time) on `engine`, whose clock must be `clock`: a
// VirtualClock for virtual and fast modes, a WallClock for real. Arrival times are relative to
// the replay's start. Throws std::invalid_argument for a clock that does not suit the mode, and
// std::runtime_error when the engine stalls (a scheduler bug, never a workload property).
ReplayResult replay_requests(Engine& engine, Clock& clock, std::vector<sched::Request> requests, TimeMode mode,
                             const ReplayConfig& config = {});

}  // namespace pagedllm::engine
