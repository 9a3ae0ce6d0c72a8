// Time as the engine sees it. The scheduler never reads the wall clock: drivers pass a Clock.
#pragma once

#include <chrono>

namespace pagedllm::engine {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now() const = 0;  // seconds
};

// Advanced by its driver: the simulator, lockstep replays, tests.
class VirtualClock final : public Clock {
 public:
  double now() const override { return now_; }
  void advance(double seconds) { now_ += seconds; }
  void set(double seconds) { now_ = seconds; }

 private:
  double now_ = 0.0;
};

// Seconds since construction, monotonic: live serving and real-time replays.
class WallClock final : public Clock {
 public:
  double now() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace pagedllm::engine
