#include "core/engine/replay.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace pagedllm::engine {

const char* to_string(TimeMode mode) {
  switch (mode) {
    case TimeMode::virtual_clock:
      return "virtual";
    case TimeMode::real:
      return "real";
    case TimeMode::fast:
      return "fast";
  }
  return "?";
}

TimeMode parse_time_mode(const std::string& text) {
  if (text == "virtual") return TimeMode::virtual_clock;
  if (text == "real") return TimeMode::real;
  if (text == "fast") return TimeMode::fast;
  throw std::invalid_argument("unknown time mode '" + text + "' (expected virtual, real or fast)");
}

ReplayResult replay_requests(Engine& engine, Clock& clock, std::vector<sched::Request> requests, TimeMode mode,
                             const ReplayConfig& config) {
  if (&engine.clock() != &clock) throw std::invalid_argument("replay: the clock must be the engine's clock");
  auto* virtual_clock = dynamic_cast<VirtualClock*>(&clock);
  if (mode == TimeMode::real && virtual_clock != nullptr) {
    throw std::invalid_argument("replay: real time needs a wall clock");
  }
  if (mode != TimeMode::real && virtual_clock == nullptr) {
    throw std::invalid_argument(std::string("replay: ") + to_string(mode) + " time needs a virtual clock");
  }
  if (!std::is_sorted(requests.begin(), requests.end(), [](const sched::Request& a, const sched::Request& b) {
        return a.arrival_time < b.arrival_time;
      })) {
    throw std::invalid_argument("replay: requests must be sorted by arrival time");
  }
  ReplayResult result;
  result.start_time = clock.now();
  for (sched::Request& request : requests) {
    request.arrival_time = mode == TimeMode::fast ? result.start_time : result.start_time + request.arrival_time;
  }
  result.outputs.reserve(requests.size());

  ReplayProgress progress;
  progress.num_total = static_cast<int64_t>(requests.size());
  size_t next = 0;
  const auto admit_arrived = [&] {
    const double now = clock.now();
    for (; next < requests.size() && requests[next].arrival_time <= now; ++next) {
      sched::Request& request = requests[next];
      RefusedRequest if_refused{request.id, request.arrival_time, sched::prompt_length(request), {}};
      try {
        engine.add_request(std::move(request));       // the engine holds it until it finishes
      } catch (const std::invalid_argument& error) {  // InvalidRequestError, or an id in use
        if_refused.message = error.what();
        result.refused.push_back(std::move(if_refused));
        ++progress.num_finished;
      }
      ++progress.num_added;
    }
  };
  const auto wait_for_next_arrival = [&] {
    const double arrival = requests[next].arrival_time;
    if (virtual_clock != nullptr) {
      virtual_clock->set(std::max(virtual_clock->now(), arrival));
    } else {
      std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, arrival - clock.now())));
    }
  };

  while (next < requests.size() || engine.has_unfinished()) {
    admit_arrived();
    if (!engine.has_unfinished()) {
      if (next < requests.size()) wait_for_next_arrival();
      continue;
    }
    for (RequestOutput& output : engine.step()) {
      if (!output.finished) continue;
      ++progress.num_finished;
      result.outputs.push_back(std::move(output));
    }
    if (engine.num_idle_steps() > config.max_idle_steps && next == requests.size()) {
      throw std::runtime_error("replay: the engine scheduled nothing for " + std::to_string(engine.num_idle_steps()) +
                               " steps with " + std::to_string(engine.scheduler().num_waiting()) + " requests waiting");
    }
    if (engine.num_idle_steps() > 0 && next < requests.size()) wait_for_next_arrival();
    if (config.on_progress) {
      progress.num_running = engine.scheduler().num_running();
      progress.num_waiting = engine.scheduler().num_waiting();
      progress.now = clock.now();
      config.on_progress(progress);
    }
  }
  result.end_time = clock.now();
  std::sort(result.outputs.begin(), result.outputs.end(),
            [](const RequestOutput& a, const RequestOutput& b) { return a.id < b.id; });
  return result;
}

}  // namespace pagedllm::engine
